"""Materials import (studies/datafiles/materials): what a clean file builds, and how every
kind of bad file is refused with its place named and nothing written."""

import csv
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings

from studies.datafiles.materials import MaterialsImportError, materials_import
from studies.models import Batch, BatchItem, DialogueContext, Reflection, Study
from studies.services import study_create
from tests.conftest import materials_doc

EXAMPLES = Path(settings.BASE_DIR) / "docs" / "examples"
STAGES = ("GPT-2 stage", "GPT-3 stage")
CSV_HEADER = [
    "annomi_dialogue_id",
    "stage",
    "dialogue_context",
    "reflection_source",
    "reflection",
    "kind",
    "model",
    "decoding",
]


# --- helpers -------------------------------------------------------------------------


def new_doc(n_contexts: int = 3) -> dict:
    """materials_doc() with ids that are not yet in ``loaded_study`` (new-1, new-2, ...),
    so a clean import of it would write rows."""
    doc = materials_doc(n_contexts)
    for ctx in doc["contexts"]:
        ctx["id"] = ctx["id"].replace("dlg-", "new-")
    return doc


def csv_rows(doc: dict) -> list[dict]:
    """The CSV rows of a JSON materials document: per context its human row, then one
    row per synthetic reflection. Row ``i`` of the list is row ``i + 2`` of the file."""
    rows = []
    for ctx in doc["contexts"]:
        common = {"annomi_dialogue_id": ctx["id"], "dialogue_context": json.dumps(ctx["turns"])}
        rows.append(
            {
                **common,
                "stage": "",
                "reflection_source": "Human",
                "reflection": ctx["human_reflection"],
                "kind": "human",
            }
        )
        for item in ctx["synthetic"]:
            rows.append(
                {
                    **common,
                    "stage": item["stage"],
                    "reflection_source": item["source"],
                    "reflection": item["text"],
                    "kind": "synthetic",
                    **item.get("generation", {}),
                }
            )
    return rows


def to_csv(rows: list[dict], header=CSV_HEADER) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def row_of(index: int) -> str:
    return f"row {index + 2}"


def material_counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in (DialogueContext, Reflection, Batch, BatchItem)}


def all_studies_counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in apps.get_app_config("studies").get_models()}


def rejected(study, content, fmt) -> list:
    """Import ``content``, expect MaterialsImportError, and check nothing was written."""
    before = material_counts()
    with pytest.raises(MaterialsImportError) as excinfo:
        materials_import(study=study, content=content, fmt=fmt)
    assert material_counts() == before
    issues = excinfo.value.problems
    assert issues
    assert str(excinfo.value) == "\n".join(f"{i.where}: {i.message}" for i in issues)
    return issues


def issue_at(issues, where: str):
    matching = [i for i in issues if i.where == where]
    assert matching, f"no issue at {where!r}; got {issues}"
    return matching[0]


def batch_items(batch) -> list[Reflection]:
    return [item.reflection for item in batch.items.select_related("reflection")]


def attention_texts(study) -> dict[tuple[str, str], str]:
    return {
        (item.batch.stage.name, item.batch.context.external_id): item.reflection.text
        for item in BatchItem.objects.filter(
            batch__stage__study=study, reflection__kind=Reflection.Kind.ATTENTION_CHECK
        ).select_related("batch__stage", "batch__context", "reflection")
    }


def materials_of(study) -> dict:
    """Everything an import decides, keyed by external id and stage name, without ids."""
    return {
        "contexts": {
            c.external_id: (
                c.turns,
                sorted((r.kind, r.source, r.text) for r in c.reflections.all()),
            )
            for c in study.contexts.prefetch_related("reflections")
        },
        "batches": {
            (b.stage.name, b.context.external_id): [(r.kind, r.text) for r in batch_items(b)]
            for b in Batch.objects.filter(stage__study=study).select_related("stage", "context")
        },
    }


def replica_of(study, slug="replica"):
    """A fresh study with the same stages and seed as ``study``."""
    return study_create(
        slug=slug,
        title="Replica",
        stages=[(s.name, s.min_wait) for s in study.stages.order_by("position")],
        groups=["Layperson"],
        seed=study.seed,
    )


# --- a clean JSON file -----------------------------------------------------------------


def test_json_import_builds_contexts_and_one_batch_per_stage_and_context(loaded_study):
    assert sorted(loaded_study.contexts.values_list("external_id", flat=True)) == [
        "dlg-1",
        "dlg-2",
        "dlg-3",
    ]
    batches = set(
        Batch.objects.filter(stage__study=loaded_study).values_list(
            "stage__name", "context__external_id"
        )
    )
    assert batches == {(stage, f"dlg-{i}") for stage in STAGES for i in (1, 2, 3)}


def test_first_import_reports_what_it_created(study):
    summary = materials_import(study=study, content=json.dumps(materials_doc()), fmt="json")
    assert summary.contexts_created == 3
    assert summary.batches_created == 6
    assert summary.batches_updated == 0
    # One generated attention check per context, shared by its two batches.
    assert summary.attention_checks_generated == 3
    assert summary.reflections_created == 3 + 12 + 3
    assert summary.changed is True


def test_batch_items_are_human_then_the_stage_synthetics_then_the_attention_check(
    loaded_study,
):
    for batch in Batch.objects.filter(stage__study=loaded_study).select_related("stage"):
        items = list(batch.items.order_by("position").select_related("reflection"))
        assert [i.position for i in items] == [1, 2, 3, 4]
        assert [i.reflection.kind for i in items] == [
            "human",
            "synthetic",
            "synthetic",
            "attention_check",
        ]
        source = batch.stage.name.split()[0]
        assert [i.reflection.source for i in items[1:3]] == [source, source]


def test_each_batch_has_exactly_one_attention_check(loaded_study):
    for batch in Batch.objects.filter(stage__study=loaded_study):
        assert batch.reflections.filter(kind=Reflection.Kind.ATTENTION_CHECK).count() == 1


def test_both_stages_of_a_context_share_its_human_reflection(loaded_study):
    for context in loaded_study.contexts.all():
        humans = {
            batch.reflections.get(kind=Reflection.Kind.HUMAN).pk for batch in context.batches.all()
        }
        assert humans == {context.reflections.get(kind=Reflection.Kind.HUMAN).pk}


def test_generated_attention_check_is_another_dialogues_human_reflection(loaded_study):
    human_text = dict(
        Reflection.objects.filter(
            context__study=loaded_study, kind=Reflection.Kind.HUMAN
        ).values_list("context__external_id", "text")
    )
    for batch in Batch.objects.filter(stage__study=loaded_study).select_related("context"):
        check = batch.reflections.get(kind=Reflection.Kind.ATTENTION_CHECK)
        donor = check.generation["taken_from_dialogue"]
        assert donor != batch.context.external_id
        assert check.text == human_text[donor]
        assert check.source == "Attention check"


def test_generated_attention_checks_are_reproducible_from_the_seed(loaded_study):
    replica = replica_of(loaded_study)
    materials_import(study=replica, content=json.dumps(materials_doc()), fmt="json")
    expected = attention_texts(loaded_study)
    assert len(expected) == 6
    assert attention_texts(replica) == expected


def test_a_different_seed_draws_different_attention_checks(loaded_study):
    doc = json.dumps(materials_doc(10))
    same, other = replica_of(loaded_study, "same"), replica_of(loaded_study, "other")
    Study.objects.filter(pk=other.pk).update(seed=loaded_study.seed + 1)
    other.refresh_from_db()
    for study in (same, other):
        materials_import(study=study, content=doc, fmt="json")
    replica = replica_of(loaded_study, "again")
    materials_import(study=replica, content=doc, fmt="json")
    assert attention_texts(replica) == attention_texts(same)
    assert attention_texts(other) != attention_texts(same)


def test_reimporting_the_same_file_changes_nothing(loaded_study):
    counts = all_studies_counts()
    items = list(BatchItem.objects.order_by("pk").values_list("pk", "batch_id", "reflection_id"))
    summary = materials_import(study=loaded_study, content=json.dumps(materials_doc()), fmt="json")
    assert summary.changed is False
    assert summary.attention_checks_generated == 0
    assert str(summary) == "Nothing to import: the study already holds exactly these materials."
    assert all_studies_counts() == counts
    assert list(
        BatchItem.objects.order_by("pk").values_list("pk", "batch_id", "reflection_id")
    ) == (items)


def test_the_same_materials_as_csv_build_the_same_study(loaded_study):
    replica = replica_of(loaded_study)
    materials_import(study=replica, content=to_csv(csv_rows(materials_doc())), fmt="csv")
    assert materials_of(replica) == materials_of(loaded_study)


def test_reimporting_the_same_csv_changes_nothing(study):
    content = to_csv(csv_rows(materials_doc())).encode("utf-8")
    materials_import(study=study, content=content, fmt="csv")
    counts = all_studies_counts()
    assert materials_import(study=study, content=content, fmt="csv").changed is False
    assert all_studies_counts() == counts


def test_the_same_text_in_two_stages_is_accepted(study):
    doc = materials_doc()
    synthetic = doc["contexts"][0]["synthetic"]
    assert (synthetic[0]["stage"], synthetic[2]["stage"]) == STAGES
    synthetic[2]["text"] = synthetic[0]["text"]
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    for stage in STAGES:
        batch = Batch.objects.get(stage__name=stage, context__external_id="dlg-1")
        assert synthetic[0]["text"] in [r.text for r in batch_items(batch)]


def test_a_repeated_identical_human_row_in_csv_is_accepted(study):
    rows = csv_rows(materials_doc())
    rows.insert(3, dict(rows[0], stage="GPT-3 stage"))
    materials_import(study=study, content=to_csv(rows), fmt="csv")
    assert study.contexts.get(external_id="dlg-1").reflections.filter(kind="human").count() == 1


# --- the documented examples -----------------------------------------------------------


@pytest.mark.parametrize("name", ["materials.json", "materials.csv"])
def test_example_file_imports_cleanly(study, name):
    assert list(study.stages.values_list("name", flat=True)) == list(STAGES)
    summary = materials_import(
        study=study, content=(EXAMPLES / name).read_bytes(), fmt=name.rsplit(".", 1)[1]
    )
    assert summary.contexts_created == 2
    assert summary.batches_created == 4
    assert sorted(study.contexts.values_list("external_id", flat=True)) == ["ex-1", "ex-2"]
    for batch in Batch.objects.filter(stage__study=study):
        kinds = [r.kind for r in batch_items(batch)]
        assert kinds == ["human", "synthetic", "attention_check"]


def test_example_json_and_csv_give_the_same_contexts_and_reflections(study):
    replica = replica_of(study)
    materials_import(study=study, content=(EXAMPLES / "materials.json").read_bytes(), fmt="json")
    materials_import(study=replica, content=(EXAMPLES / "materials.csv").read_bytes(), fmt="csv")
    assert materials_of(replica) == materials_of(study)


def test_importing_the_csv_example_after_the_json_example_changes_nothing(study):
    materials_import(study=study, content=(EXAMPLES / "materials.json").read_bytes(), fmt="json")
    counts = all_studies_counts()
    summary = materials_import(
        study=study, content=(EXAMPLES / "materials.csv").read_bytes(), fmt="csv"
    )
    assert summary.changed is False
    assert all_studies_counts() == counts


# --- explicit attention checks -----------------------------------------------------------

TOMATOES = "I've been planning where to put the tomato plants along the south fence."


def test_explicit_attention_check_without_stage_is_used_in_every_batch(study):
    doc = materials_doc()
    doc["contexts"][0]["attention_checks"] = [{"text": TOMATOES}]
    summary = materials_import(study=study, content=json.dumps(doc), fmt="json")
    for stage in STAGES:
        assert attention_texts(study)[(stage, "dlg-1")] == TOMATOES
    check = Reflection.objects.get(text=TOMATOES)
    assert check.kind == Reflection.Kind.ATTENTION_CHECK
    assert "taken_from_dialogue" not in check.generation
    # Only the two other contexts needed a generated one.
    assert summary.attention_checks_generated == 2


def test_explicit_attention_check_in_csv_is_used(study):
    rows = csv_rows(materials_doc())
    rows.insert(
        1,
        dict(rows[0], reflection_source="", reflection=TOMATOES, kind="attention_check"),
    )
    materials_import(study=study, content=to_csv(rows), fmt="csv")
    assert attention_texts(study)[("GPT-2 stage", "dlg-1")] == TOMATOES
    assert attention_texts(study)[("GPT-3 stage", "dlg-1")] == TOMATOES


@pytest.mark.parametrize("stage", STAGES)
def test_stage_specific_attention_check_is_used_only_in_its_stage(study, stage):
    (other_stage,) = set(STAGES) - {stage}
    doc = materials_doc()
    doc["contexts"][0]["attention_checks"] = [{"stage": stage, "text": TOMATOES}]
    materials_import(study=study, content=json.dumps(doc), fmt="json")

    assert attention_texts(study)[(stage, "dlg-1")] == TOMATOES
    # The other stage has no explicit check for this context, so it gets a generated
    # one, whichever of the two stages the explicit check names.
    other = Batch.objects.get(stage__name=other_stage, context__external_id="dlg-1")
    generated = other.reflections.get(kind=Reflection.Kind.ATTENTION_CHECK)
    assert generated.text != TOMATOES
    assert generated.generation["taken_from_dialogue"] != "dlg-1"


# --- bad input: nothing is written and the place is named --------------------------------


def test_unknown_stage_is_named_by_json_context_and_field(loaded_study):
    doc = new_doc()
    doc["contexts"][1]["synthetic"][0]["stage"] = "GPT-4 stage"
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[1] (id "new-2"), synthetic[0], field 'stage'""")
    assert issue.message == "unknown stage 'GPT-4 stage' (the study has: GPT-2 stage, GPT-3 stage)"


def test_unknown_stage_is_named_by_csv_row_and_column(loaded_study):
    rows = csv_rows(new_doc())
    rows[1]["stage"] = "GPT-4 stage"
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, "row 3, column 'stage'")
    assert issue.message == "unknown stage 'GPT-4 stage' (the study has: GPT-2 stage, GPT-3 stage)"


def test_missing_human_reflection_in_json(loaded_study):
    doc = new_doc()
    del doc["contexts"][1]["human_reflection"]
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[1] (id "new-2"), field 'human_reflection'""")
    assert issue.message == "missing human reflection"


def test_missing_human_reflection_in_csv(loaded_study):
    rows = csv_rows(new_doc())
    human_of_new_2 = next(
        i for i, r in enumerate(rows) if r["annomi_dialogue_id"] == "new-2" and r["kind"] == "human"
    )
    del rows[human_of_new_2]
    issues = rejected(loaded_study, to_csv(rows), "csv")
    # The dialogue's rows now start where its human row was.
    issue = issue_at(issues, f'dialogue "new-2" (first in {row_of(human_of_new_2)})')
    assert issue.message == "missing human reflection (a row with source Human)"


def test_empty_human_reflection_in_json(loaded_study):
    doc = new_doc()
    doc["contexts"][2]["human_reflection"] = "   "
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[2] (id "new-3"), field 'human_reflection'""")
    assert issue.message == "empty text"


def test_empty_synthetic_text_in_json(loaded_study):
    doc = new_doc()
    doc["contexts"][0]["synthetic"][1]["text"] = ""
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[0] (id "new-1"), synthetic[1], field 'text'""")
    assert issue.message == "empty text"


@pytest.mark.parametrize("index", [0, 3], ids=["human-row", "synthetic-row"])
def test_empty_reflection_in_csv(loaded_study, index):
    rows = csv_rows(new_doc())
    rows[index]["reflection"] = ""
    issues = rejected(loaded_study, to_csv(rows), "csv")
    assert issue_at(issues, f"{row_of(index)}, column 'reflection'").message == "empty text"


def test_json_syntax_error_names_line_and_column(loaded_study):
    issues = rejected(loaded_study, '{\n  "contexts": [\n    {"id": "new-1",}\n  ]\n}', "json")
    assert issues == [issues[0]]
    assert issues[0].where == "line 3, column 20"
    assert issues[0].message == "invalid JSON: Expecting property name enclosed in double quotes"


def test_json_syntax_error_deep_in_a_file_names_its_line(loaded_study):
    lines = json.dumps(new_doc(), indent=2).splitlines()
    # Drop the comma after the second context's human reflection.
    at = [i for i, line in enumerate(lines) if '"human_reflection"' in line][1]
    lines[at] = lines[at].rstrip(",")
    next_line = lines[at + 1]
    issues = rejected(loaded_study, "\n".join(lines), "json")
    column = len(next_line) - len(next_line.lstrip()) + 1
    assert [(i.where, i.message) for i in issues] == [
        (f"line {at + 2}, column {column}", "invalid JSON: Expecting ',' delimiter")
    ]


def test_bad_dialogue_context_json_in_csv(loaded_study):
    rows = csv_rows(new_doc())
    rows[5]["dialogue_context"] = '[{"role": "client", "text": "unfinished"'
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, f"{row_of(5)}, column 'dialogue_context'")
    assert issue.message.startswith("invalid JSON: ")


def test_differing_dialogue_context_between_rows_of_one_dialogue_in_csv(loaded_study):
    rows = csv_rows(new_doc())
    rows[2]["dialogue_context"] = json.dumps([{"role": "client", "text": "Something else."}])
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, f"{row_of(2)}, column 'dialogue_context'")
    assert issue.message == 'differs from the context of dialogue "new-1" in row 2'


def test_duplicate_reflection_text_in_one_context_and_stage_in_json(loaded_study):
    doc = new_doc()
    synthetic = doc["contexts"][0]["synthetic"]
    assert synthetic[0]["stage"] == synthetic[1]["stage"]
    synthetic[1]["text"] = synthetic[0]["text"]
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[0] (id "new-1"), synthetic[1], field 'text'""")
    assert (
        issue.message
        == 'duplicate reflection (same text as contexts[0] (id "new-1"), synthetic[0])'
    )


def test_duplicate_reflection_text_in_one_context_and_stage_in_csv(loaded_study):
    rows = csv_rows(new_doc())
    rows[2]["reflection"] = rows[1]["reflection"]
    rows[2]["reflection_source"] = "GPT-2 beam"
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, f"{row_of(2)}, column 'reflection'")
    assert issue.message == f"duplicate reflection (same text as {row_of(1)})"


def test_synthetic_reflection_repeating_the_human_one_is_rejected(loaded_study):
    rows = csv_rows(new_doc())
    rows[4]["reflection"] = rows[0]["reflection"]
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, f"{row_of(4)}, column 'reflection'")
    assert issue.message == f"duplicate reflection (same text as {row_of(0)})"


def test_unknown_turn_role_in_json(loaded_study):
    doc = new_doc()
    doc["contexts"][0]["turns"][1]["role"] = "patient"
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[0] (id "new-1"), field 'turns'""")
    assert issue.message == "turn 2 has unknown role 'patient' (expected therapist or client)"


def test_unknown_turn_role_in_csv_published_shape(loaded_study):
    rows = csv_rows(new_doc())
    rows[0]["dialogue_context"] = json.dumps([{"therapist": "Hello."}, {"patient": "Hi."}])
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, "row 2, column 'dialogue_context'")
    assert issue.message == "turn 2 has unknown role 'patient' (expected therapist or client)"


@pytest.mark.parametrize(
    ("dropped", "message"),
    [
        (["stage"], "missing column(s): stage"),
        (["dialogue_context", "reflection"], "missing column(s): dialogue_context, reflection"),
    ],
)
def test_missing_csv_column(loaded_study, dropped, message):
    header = [c for c in CSV_HEADER if c not in dropped]
    issues = rejected(loaded_study, to_csv(csv_rows(new_doc()), header=header), "csv")
    assert [(i.where, i.message) for i in issues] == [("row 1 (header)", message)]


def test_second_different_human_reflection_in_csv(loaded_study):
    rows = csv_rows(new_doc())
    rows.insert(5, dict(rows[0], reflection="A different human reflection."))
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, f"{row_of(5)}, column 'reflection'")
    assert issue.message == (
        'a second, different human reflection for dialogue "new-1" (row 2 has another)'
    )


def test_unknown_kind_in_csv(loaded_study):
    rows = csv_rows(new_doc())
    rows[3]["kind"] = "distractor"
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, f"{row_of(3)}, column 'kind'")
    assert issue.message == (
        "unknown kind 'distractor' (expected human, synthetic, attention_check)"
    )


def test_existing_dialogue_id_with_different_turns_in_json(loaded_study):
    doc = materials_doc()
    doc["contexts"][1]["turns"][0]["text"] = "A different opening question."
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, 'contexts[1] (id "dlg-2")')
    assert issue.message == "this dialogue id is already in the study with a different context"


def test_existing_dialogue_id_with_different_turns_in_csv(loaded_study):
    rows = csv_rows(materials_doc())
    changed = json.dumps([{"role": "client", "text": "A different dialogue."}])
    first_row = None
    for i, row in enumerate(rows):
        if row["annomi_dialogue_id"] == "dlg-2":
            row["dialogue_context"] = changed
            first_row = i if first_row is None else first_row
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, f'dialogue "dlg-2" (first in {row_of(first_row)})')
    assert issue.message == "this dialogue id is already in the study with a different context"


def test_existing_dialogue_id_with_a_different_human_reflection(loaded_study):
    doc = materials_doc()
    doc["contexts"][0]["human_reflection"] = "A new human reflection."
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, 'contexts[0] (id "dlg-1")')
    assert issue.message == (
        "this dialogue is already in the study with a different human reflection"
    )


@pytest.mark.parametrize(
    ("fmt", "encoding", "odd_char"), [("json", "latin-1", "é"), ("csv", "cp1252", "’")]
)
def test_non_utf8_file_is_rejected(loaded_study, fmt, encoding, odd_char):
    doc = new_doc()
    doc["contexts"][0]["human_reflection"] = f"It{odd_char}s the caf{odd_char} again."
    text = json.dumps(doc, ensure_ascii=False) if fmt == "json" else to_csv(csv_rows(doc))
    content = text.encode(encoding)
    first_bad = content.index(odd_char.encode(encoding))
    issues = rejected(loaded_study, content, fmt)
    assert [(i.where, i.message) for i in issues] == [
        ("file", f"not UTF-8 text (byte {first_bad}): save it as UTF-8")
    ]


def test_utf8_bytes_with_byte_order_mark_are_accepted(study):
    content = "\ufeff" + to_csv(csv_rows(materials_doc()))
    materials_import(study=study, content=content.encode("utf-8"), fmt="csv")
    assert study.contexts.count() == 3


def test_valid_first_context_is_not_written_when_a_later_one_is_bad(study):
    doc = new_doc()
    doc["contexts"][1]["synthetic"][3]["stage"] = "No such stage"
    issues = rejected(study, json.dumps(doc), "json")
    issue_at(issues, """contexts[1] (id "new-2"), synthetic[3], field 'stage'""")
    assert not DialogueContext.objects.filter(external_id="new-1").exists()
    assert material_counts() == dict.fromkeys(material_counts(), 0)


def test_failure_while_writing_a_later_context_rolls_back_the_earlier_ones(loaded_study):
    # new-2's only possible donor of an attention check is new-1's human reflection,
    # which new-2 already uses as a synthetic text; this is only found while writing,
    # after new-1 is in the database.
    doc = new_doc(2)
    doc["contexts"][1]["synthetic"][0]["text"] = doc["contexts"][0]["human_reflection"]
    other = study_create(
        slug="isolated", title="Isolated", stages=[(s, timedelta(0)) for s in STAGES], seed=1
    )
    issues = rejected(other, json.dumps(doc), "json")
    issue = issue_at(issues, 'contexts[1] (id "new-2")')
    assert issue.message.startswith("cannot generate an attention check")
    assert not other.contexts.exists()


def test_study_without_stages_is_rejected(db):
    empty = study_create(slug="no_stages", title="No stages")
    issues = rejected(empty, json.dumps(materials_doc()), "json")
    issue = issue_at(issues, "study")
    assert issue.message == '"no_stages" has no stages; add them in the admin first'


def test_every_problem_in_a_file_is_reported_at_once(loaded_study):
    rows = csv_rows(new_doc())
    rows[1]["stage"] = "GPT-4 stage"
    rows[3]["reflection"] = ""
    rows[7]["reflection"] = rows[6]["reflection"]
    issues = rejected(loaded_study, to_csv(rows), "csv")
    assert [i.where for i in issues] == [
        f"{row_of(1)}, column 'stage'",
        f"{row_of(3)}, column 'reflection'",
        f"{row_of(7)}, column 'reflection'",
    ]


def test_unknown_format_is_rejected(loaded_study):
    issues = rejected(loaded_study, json.dumps(new_doc()), "xml")
    assert [(i.where, i.message) for i in issues] == [
        ("file", "unknown format 'xml': use json or csv")
    ]


def test_json_without_contexts_list_is_rejected(loaded_study):
    issues = rejected(loaded_study, json.dumps(new_doc()["contexts"]), "json")
    assert [(i.where, i.message) for i in issues] == [
        ("file", 'expected an object with a "contexts" list')
    ]


# --- bad input the database could not store, or that would be silently misread ----------


def test_csv_human_row_with_another_source_is_rejected(loaded_study):
    rows = csv_rows(new_doc())
    rows[0]["reflection_source"] = "GPT-2"
    issues = rejected(loaded_study, to_csv(rows), "csv")
    # Still taken as the dialogue's human reflection, so nothing else is reported.
    assert [(i.where, i.message) for i in issues] == [
        ("row 2, column 'reflection_source'", 'a human reflection must have the source "Human"')
    ]


def test_csv_human_row_with_empty_source_is_taken_as_human(study):
    rows = csv_rows(materials_doc())
    rows[0]["reflection_source"] = ""
    materials_import(study=study, content=to_csv(rows), fmt="csv")
    human = Reflection.objects.get(context__external_id="dlg-1", kind=Reflection.Kind.HUMAN)
    assert (human.source, human.text) == ("Human", rows[0]["reflection"])


def test_csv_human_row_with_unknown_stage_is_rejected(loaded_study):
    rows = csv_rows(new_doc())
    rows[5]["stage"] = "GPT-4 stage"
    issues = rejected(loaded_study, to_csv(rows), "csv")
    assert [(i.where, i.message) for i in issues] == [
        (
            f"{row_of(5)}, column 'stage'",
            "unknown stage 'GPT-4 stage' (the study has: GPT-2 stage, GPT-3 stage)",
        )
    ]


def test_csv_human_row_with_a_known_stage_is_still_in_every_stage(study):
    rows = csv_rows(materials_doc())
    rows[0]["stage"] = "GPT-2 stage"
    materials_import(study=study, content=to_csv(rows), fmt="csv")
    for stage in STAGES:
        batch = Batch.objects.get(stage__name=stage, context__external_id="dlg-1")
        assert batch_items(batch)[0].kind == Reflection.Kind.HUMAN


def test_csv_human_row_stage_does_not_hide_a_duplicate_in_another_stage(loaded_study):
    rows = csv_rows(new_doc())
    rows[0]["stage"] = "GPT-2 stage"
    rows[3]["reflection"] = rows[0]["reflection"]  # a GPT-3 stage synthetic
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, f"{row_of(3)}, column 'reflection'")
    assert issue.message == f"duplicate reflection (same text as {row_of(0)})"


def json_with_token(doc: dict, token: str) -> tuple[str, str]:
    """``doc`` as indented JSON with the value "@TOKEN@" replaced by the bare ``token``,
    and the line and column of the token."""
    text = json.dumps(doc, indent=2)
    (line_no, line) = next((n, ln) for n, ln in enumerate(text.splitlines(), 1) if "@TOKEN@" in ln)
    column = line.index('"@TOKEN@"') + 1
    where = f"line {line_no}, column {column}"
    return text.replace('"@TOKEN@"', token), where


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("NaN", "NaN and Infinity are not allowed"),
        ("Infinity", "NaN and Infinity are not allowed"),
        ("-Infinity", "NaN and Infinity are not allowed"),
        ("1e999", "number too large: 1e999"),
        ("9" * 5000, "number too large: 99999999999999999999..."),
    ],
    ids=["NaN", "Infinity", "-Infinity", "float-overflow", "5000-digit-int"],
)
def test_json_number_that_jsonb_cannot_store_is_named_by_line_and_column(
    loaded_study, token, message
):
    doc = new_doc()
    # The same words inside strings earlier in the file do not move the reported place.
    doc["contexts"][0]["human_reflection"] = f"NaN, Infinity, -Infinity and {token[:30]}."
    doc["contexts"][1]["synthetic"][2]["generation"]["p"] = "@TOKEN@"
    text, where = json_with_token(doc, token)
    issues = rejected(loaded_study, text, "json")
    assert [(i.where, i.message) for i in issues] == [(where, f"invalid JSON: {message}")]


def test_nan_in_csv_dialogue_context_is_rejected(loaded_study):
    rows = csv_rows(new_doc())
    rows[0]["dialogue_context"] = '[{"role": "client", "text": NaN}]'
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, "row 2, column 'dialogue_context'")
    assert issue.message == "invalid JSON: NaN and Infinity are not allowed"


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity", "1e999"])
def test_csv_p_that_is_not_finite_is_rejected(loaded_study, value):
    rows = csv_rows(new_doc())
    rows[1]["p"] = value
    issues = rejected(loaded_study, to_csv(rows, header=[*CSV_HEADER, "p"]), "csv")
    assert [(i.where, i.message) for i in issues] == [
        ("row 3, column 'p'", f"not a finite number: {value!r}")
    ]


def test_json_key_given_twice_in_one_object_is_rejected(loaded_study):
    """The JSON counterpart of a repeated CSV column: the last value would silently win."""
    text = json.dumps(new_doc(), indent=2)
    text = text.replace(
        '"human_reflection": ', '"text": "First.", "text": "Second.", "human_reflection": ', 1
    )
    issues = rejected(loaded_study, text, "json")
    assert [(i.where, i.message) for i in issues] == [
        ("file", 'invalid JSON: key "text" appears twice in one object')
    ]


def test_deeply_nested_json_file_is_rejected(loaded_study):
    content = '{"contexts": ' + "[" * 100_000 + "]" * 100_000 + "}"
    issues = rejected(loaded_study, content, "json")
    assert [(i.where, i.message) for i in issues] == [("file", "invalid JSON: nested too deeply")]


def test_deeply_nested_csv_dialogue_context_is_rejected(loaded_study):
    rows = csv_rows(new_doc())
    rows[0]["dialogue_context"] = "[" * 50_000
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, "row 2, column 'dialogue_context'")
    assert issue.message == "invalid JSON: nested too deeply"


def test_deeply_nested_generation_metadata_is_rejected(loaded_study):
    doc = new_doc()
    nested = "leaf"
    for _ in range(25):
        nested = {"level": nested}
    doc["contexts"][0]["synthetic"][1]["generation"]["extra"] = nested
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[0] (id "new-1"), synthetic[1], field 'generation'""")
    assert issue.message == "nested more than 20 levels deep"


def test_too_long_dialogue_id_in_json(loaded_study):
    doc = new_doc()
    doc["contexts"][1]["id"] = "x" * 101
    issues = rejected(loaded_study, json.dumps(doc), "json")
    assert [(i.where, i.message) for i in issues] == [
        ("contexts[1], field 'id'", "longer than 100 characters")
    ]


def test_too_long_dialogue_id_in_csv_is_named_in_each_of_its_rows(loaded_study):
    rows = csv_rows(new_doc())
    for row in rows[5:10]:
        assert row["annomi_dialogue_id"] == "new-2"
        row["annomi_dialogue_id"] = "x" * 101
    issues = rejected(loaded_study, to_csv(rows), "csv")
    assert [(i.where, i.message) for i in issues] == [
        (f"{row_of(i)}, column 'annomi_dialogue_id'", "longer than 100 characters")
        for i in range(5, 10)
    ]


def test_too_long_source_in_json(loaded_study):
    doc = new_doc()
    doc["contexts"][0]["synthetic"][1]["source"] = "S" * 101
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[0] (id "new-1"), synthetic[1], field 'source'""")
    assert issue.message == "longer than 100 characters"


def test_too_long_source_in_csv(loaded_study):
    rows = csv_rows(new_doc())
    rows[1]["reflection_source"] = "S" * 101
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, "row 3, column 'reflection_source'")
    assert issue.message == "longer than 100 characters"


def test_dialogue_id_and_source_of_exactly_100_characters_are_accepted(study):
    doc = materials_doc()
    doc["contexts"][0]["id"] = "x" * 100
    doc["contexts"][0]["synthetic"][0]["source"] = "S" * 100
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    assert Reflection.objects.get(context__external_id="x" * 100, source="S" * 100)


def _set(path, value):
    """A doc mutation for the parametrized cases: set doc[...path...] = value."""

    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


CTX = 'contexts[0] (id "new-1")'


@pytest.mark.parametrize(
    ("mutate", "where", "message"),
    [
        (_set(("contexts", 0, "id"), "new\x00-1"), "contexts[0], field 'id'", None),
        (
            _set(("contexts", 0, "turns", 1, "text"), "I keep\x00 worrying."),
            f"{CTX}, field 'turns'",
            "turn 2 contains a NUL character",
        ),
        (
            _set(("contexts", 0, "human_reflection"), "Weighing\x00 on you."),
            f"{CTX}, field 'human_reflection'",
            None,
        ),
        (
            _set(("contexts", 0, "synthetic", 1, "text"), "A\x00B."),
            f"{CTX}, synthetic[1], field 'text'",
            None,
        ),
        (
            _set(("contexts", 0, "synthetic", 1, "source"), "GPT\x002"),
            f"{CTX}, synthetic[1], field 'source'",
            None,
        ),
        (
            _set(("contexts", 0, "synthetic", 1, "generation", "model"), "gpt\x002"),
            f"{CTX}, synthetic[1], field 'generation'",
            None,
        ),
        (
            _set(("contexts", 0, "attention_checks"), [{"text": "Tomatoes\x00."}]),
            f"{CTX}, attention_checks[0], field 'text'",
            None,
        ),
    ],
    ids=["id", "turn", "human", "synthetic", "source", "generation", "attention-check"],
)
def test_nul_character_in_json_is_rejected(loaded_study, mutate, where, message):
    doc = new_doc()
    mutate(doc)
    issues = rejected(loaded_study, json.dumps(doc), "json")
    assert issue_at(issues, where).message == (message or "contains a NUL character")


@pytest.mark.parametrize(
    ("index", "column", "value", "message"),
    [
        (2, "annomi_dialogue_id", "new\x00-1", "contains a NUL character"),
        (
            0,
            "dialogue_context",
            json.dumps([{"role": "client", "text": "A\x00B."}]),
            "turn 1 contains a NUL character",
        ),
        (0, "reflection", "Weighing\x00 on you.", "contains a NUL character"),
        (1, "reflection", "A\x00B.", "contains a NUL character"),
        (1, "reflection_source", "GPT\x002", "contains a NUL character"),
        (1, "model", "gpt\x002", "contains a NUL character"),
    ],
    ids=["id", "dialogue_context", "human", "synthetic", "source", "model"],
)
def test_nul_character_in_csv_is_rejected(loaded_study, index, column, value, message):
    rows = csv_rows(new_doc())
    rows[index][column] = value
    issues = rejected(loaded_study, to_csv(rows), "csv")
    assert issue_at(issues, f"{row_of(index)}, column '{column}'").message == message


def test_unpaired_surrogate_escape_in_json_is_rejected(loaded_study):
    doc = new_doc()
    doc["contexts"][0]["synthetic"][1]["text"] = "Broken \ud83d emoji."
    content = json.dumps(doc)  # ensure_ascii writes it as the escape \ud83d
    assert "\\ud83d" in content
    issues = rejected(loaded_study, content.encode("utf-8"), "json")
    issue = issue_at(issues, f"{CTX}, synthetic[1], field 'text'")
    assert issue.message == "contains an unpaired surrogate (\\ud83d)"


def test_boolean_dialogue_id_in_json_is_rejected(loaded_study):
    doc = new_doc()
    doc["contexts"][0]["id"] = True
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, "contexts[0], field 'id'")
    assert issue.message == "missing or empty dialogue id"


# --- generation metadata -----------------------------------------------------------------


def test_reimport_with_other_generation_metadata_updates_it(loaded_study):
    counts = all_studies_counts()
    doc = materials_doc()
    doc["contexts"][0]["synthetic"][0]["generation"]["decoding"] = "nucleus"
    summary = materials_import(study=loaded_study, content=json.dumps(doc), fmt="json")
    assert summary.reflections_updated == 1
    assert summary.changed is True
    assert str(summary) == (
        "0 contexts, 0 reflections and 0 batches created; 1 reflections updated; "
        "0 batches updated; attention checks generated: 0."
    )
    assert all_studies_counts() == counts
    text = doc["contexts"][0]["synthetic"][0]["text"]
    assert Reflection.objects.get(text=text).generation == {"model": "gpt-2", "decoding": "nucleus"}
    again = materials_import(study=loaded_study, content=json.dumps(doc), fmt="json")
    assert again.changed is False


def test_reimport_as_csv_with_other_generation_metadata_updates_it(loaded_study):
    rows = csv_rows(materials_doc())
    rows[3]["model"] = "gpt-3.5"
    summary = materials_import(study=loaded_study, content=to_csv(rows), fmt="csv")
    assert (summary.reflections_updated, summary.reflections_created) == (1, 0)
    stored = Reflection.objects.get(text=rows[3]["reflection"]).generation
    assert stored == {"model": "gpt-3.5", "decoding": "greedy"}


def test_reimport_keeps_where_a_generated_attention_check_was_taken_from(loaded_study):
    check = Reflection.objects.filter(
        context__external_id="dlg-1", kind=Reflection.Kind.ATTENTION_CHECK
    ).get()
    provenance = dict(check.generation)
    doc = materials_doc()
    doc["contexts"][0]["attention_checks"] = [{"text": check.text}]
    summary = materials_import(study=loaded_study, content=json.dumps(doc), fmt="json")
    assert summary.changed is False
    check.refresh_from_db()
    assert check.generation == provenance


def test_the_same_reflection_in_two_stages_with_the_same_metadata_is_one_reflection(study):
    doc = materials_doc()
    synthetic = doc["contexts"][0]["synthetic"]
    synthetic[2].update(source=synthetic[0]["source"], text=synthetic[0]["text"])
    synthetic[2]["generation"] = dict(synthetic[0]["generation"])
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    shared = Reflection.objects.get(text=synthetic[0]["text"])
    assert shared.batches.count() == 2


def test_the_same_reflection_with_different_metadata_in_one_json_file(loaded_study):
    doc = new_doc()
    synthetic = doc["contexts"][0]["synthetic"]
    assert synthetic[0]["stage"] != synthetic[2]["stage"]
    synthetic[2].update(source=synthetic[0]["source"], text=synthetic[0]["text"])
    synthetic[2]["generation"] = {"model": "gpt-2", "decoding": "beam"}
    issues = rejected(loaded_study, json.dumps(doc), "json")
    assert [(i.where, i.message) for i in issues] == [
        (
            f"{CTX}, synthetic[2], field 'generation'",
            "the same reflection is given with different generation metadata "
            f"(also at {CTX}, synthetic[0])",
        )
    ]


def test_the_same_reflection_with_different_metadata_in_one_csv_file(loaded_study):
    rows = csv_rows(new_doc())
    assert (rows[1]["stage"], rows[3]["stage"]) == STAGES
    rows[3].update(
        reflection_source=rows[1]["reflection_source"],
        reflection=rows[1]["reflection"],
        model=rows[1]["model"],
        decoding="beam",
    )
    issues = rejected(loaded_study, to_csv(rows), "csv")
    assert [(i.where, i.message) for i in issues] == [
        (
            f"{row_of(3)}, column 'decoding'",
            f"the same reflection is given with different generation metadata (also at "
            f"{row_of(1)})",
        )
    ]


def test_repeated_csv_human_row_with_different_metadata_is_rejected(loaded_study):
    rows = csv_rows(new_doc())
    rows.insert(3, dict(rows[0], stage="GPT-3 stage", model="annotated-by-hand"))
    issues = rejected(loaded_study, to_csv(rows), "csv")
    assert [(i.where, i.message) for i in issues] == [
        (
            f"{row_of(3)}, column 'model'",
            f"the same reflection is given with different generation metadata (also at "
            f"{row_of(0)})",
        )
    ]
