"""Materials import (studies/importers.py): what a clean file builds, and how every
kind of bad file is refused with its place named and nothing written."""

import csv
import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings

from studies.importers import MaterialsImportError, materials_import
from studies.models import Batch, BatchItem, DialogueContext, Reflection
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
    issues = excinfo.value.issues
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
