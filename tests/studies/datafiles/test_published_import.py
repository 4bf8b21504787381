"""Import of published annotation data (studies/datafiles/published/): what a clean
file builds, and how every kind of bad file is refused with its row named and
nothing written."""

import csv
import io
import json
from datetime import timedelta
from io import StringIO

import django
import pytest
from django.apps import apps
from django.core.management import CommandError, ManagementUtility, call_command
from django.db import connections

from studies.datafiles import MAX_REPORTED_PROBLEMS
from studies.datafiles.published import (
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    AnnotationsImportError,
    annotations_import,
)
from studies.models import (
    Annotator,
    Assignment,
    Batch,
    DialogueContext,
    Judgement,
    Reflection,
    Study,
)
from studies.protocol import DEFAULT_ERROR_CATEGORIES
from studies.services import assignment_shuffled_order, study_create

S1, S2 = "GPT-2 stage", "GPT-3 stage"
TURNS = {
    "d1": [
        {"therapist": "What brings you in today?"},
        {"client": "My doctor says I drink too much. I-I don't know."},
    ],
    "d2": [
        {"therapist": "How was your week?"},
        {"client": "I skipped the gym again, it-it– whatever."},
        {"therapist": "Again?"},
    ],
}
H1 = "Your doctor is worried about your drinking, and you're not sure."
H2 = "The gym has been hard to get to."
G2_1 = "You want to drink more."
G2_2 = "You love the gym and go every day."
G3_1 = "It sounds like your doctor's concern caught you off guard."
G3_2 = "Skipping the gym is getting to you."

# (stage, dialogue, source, reflection, annotator, Yes/No, selected categories)
# Row i of this list is row i + 2 of the file.
ROWS = [
    # GPT-2 stage, d1: k = 2 laypeople and 2 experts
    (S1, "d1", "Human", H1, "Layperson 1", "Yes", ""),
    (S1, "d1", "GPT-2", G2_1, "Layperson 1", "No", "dialogue_contradicting"),
    (S1, "d1", "Human", H1, "Layperson 2", "Yes", ""),
    (S1, "d1", "GPT-2", G2_1, "Layperson 2", "No", "dialogue_contradicting malformed"),
    (S1, "d1", "Human", H1, "Expert 1", "Yes", ""),
    (S1, "d1", "GPT-2", G2_1, "Expert 1", "No", "dialogue_contradicting off_topic parroting"),
    (S1, "d1", "Human", H1, "Expert 2", "No", "on_topic_but_unverifiable"),
    (S1, "d1", "GPT-2", G2_1, "Expert 2", "No", ""),
    # GPT-2 stage, d2 (Expert 1 judged only the synthetic reflection)
    (S1, "d2", "Human", H2, "Layperson 1", "Yes", ""),
    (S1, "d2", "GPT-2", G2_2, "Layperson 1", "No", "off_topic"),
    (S1, "d2", "Human", H2, "Layperson 3", "No", "malformed"),
    (S1, "d2", "GPT-2", G2_2, "Layperson 3", "Yes", ""),
    (S1, "d2", "GPT-2", G2_2, "Expert 1", "No", "dialogue_contradicting"),
    (S1, "d2", "Human", H2, "Expert 2", "Yes", ""),
    (S1, "d2", "GPT-2", G2_2, "Expert 2", "No", "parroting off_topic"),
    # GPT-3 stage, d1: Layperson 1 and Expert 2 meet H1 again
    (S2, "d1", "Human", H1, "Layperson 1", "No", "parroting"),
    (S2, "d1", "GPT-3", G3_1, "Layperson 1", "Yes", ""),
    (S2, "d1", "Human", H1, "Layperson 3", "Yes", ""),
    (S2, "d1", "GPT-3", G3_1, "Layperson 3", "Yes", ""),
    (S2, "d1", "Human", H1, "Expert 2", "Yes", ""),
    (S2, "d1", "GPT-3", G3_1, "Expert 2", "Yes", ""),
    (S2, "d1", "Human", H1, "Expert 3", "Yes", ""),
    (S2, "d1", "GPT-3", G3_1, "Expert 3", "No", "malformed on_topic_but_unverifiable"),
    # GPT-3 stage, d2: Layperson 3 meets H2 again; Expert 1 saw only G2_2 before
    (S2, "d2", "Human", H2, "Layperson 2", "Yes", ""),
    (S2, "d2", "GPT-3", G3_2, "Layperson 2", "Yes", ""),
    (S2, "d2", "Human", H2, "Layperson 3", "Yes", ""),
    (S2, "d2", "GPT-3", G3_2, "Layperson 3", "No", "off_topic"),
    (S2, "d2", "Human", H2, "Expert 1", "Yes", ""),
    (S2, "d2", "GPT-3", G3_2, "Expert 1", "Yes", ""),
    (S2, "d2", "Human", H2, "Expert 3", "Yes", ""),
    (S2, "d2", "GPT-3", G3_2, "Expert 3", "Yes", ""),
]


# --- helpers -------------------------------------------------------------------------


def row_dicts(rows=ROWS) -> list[dict]:
    out = []
    for stage, dialogue, source, text, annotator, answer, categories in rows:
        selected = categories.split()
        out.append(
            {
                "annomi_dialogue_id": dialogue,
                "stage": stage,
                "dialogue_context": json.dumps(TURNS[dialogue], ensure_ascii=False),
                "reflection_source": source,
                "reflection": text,
                "annotator": annotator,
                "coherent_and_context_consistent": answer,
                **{c: "Yes" if c in selected else "" for c in PUBLISHED_CATEGORY_COLUMNS},
            }
        )
    return out


def to_csv(rows: list[dict], header=PUBLISHED_COLUMNS) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(header), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def import_text(text: str, slug="published", **kwargs):
    return annotations_import(
        path_or_file=io.BytesIO(text.encode("utf-8")), study_slug=slug, **kwargs
    )


def all_counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in apps.get_app_config("studies").get_models()}


def rejected(content, slug="published") -> list:
    """Import ``content`` (text or bytes); expect the error and nothing written."""
    before = all_counts()
    data = content.encode("utf-8") if isinstance(content, str) else content
    with pytest.raises(AnnotationsImportError) as excinfo:
        annotations_import(path_or_file=io.BytesIO(data), study_slug=slug)
    assert all_counts() == before
    issues = excinfo.value.problems
    assert issues
    return issues


def issue_at(issues, where: str):
    matching = [i for i in issues if i.where == where]
    assert matching, f"no issue at {where!r}; got {issues}"
    return matching[0]


def bits() -> dict[str, int]:
    return {c.slug: c.bit for c in DEFAULT_ERROR_CATEGORIES}


def flags(*slugs) -> int:
    return sum(1 << bits()[s] for s in slugs)


def judgement(stage, dialogue, text, pseudonym) -> Judgement:
    return Judgement.objects.get(
        assignment__stage__name=stage,
        assignment__batch__context__external_id=dialogue,
        assignment__annotator__pseudonym=pseudonym,
        reflection__text=text,
    )


def assignment(stage, dialogue, pseudonym) -> Assignment:
    return Assignment.objects.get(
        stage__name=stage, batch__context__external_id=dialogue, annotator__pseudonym=pseudonym
    )


@pytest.fixture
def imported(db):
    summary = import_text(to_csv(row_dicts()), title="Published pilot")
    return summary, Study.objects.get(slug="published")


# --- a clean file --------------------------------------------------------------------


def test_summary_counts_every_created_row(imported):
    summary, _study = imported
    assert (
        summary.stages,
        summary.groups,
        summary.annotators,
        summary.contexts,
        summary.reflections,
        summary.batches,
        summary.assignments,
        summary.judgements,
    ) == (2, 2, 6, 2, 6, 4, 16, len(ROWS))
    assert (summary.overlap_k, summary.batches_per_stage) == (2, 2)
    assert summary.ignored_columns == ()
    assert str(summary).startswith('Created the closed study "published": 2 stages, 2 groups')


def test_study_is_closed_with_k_and_m_from_the_file(imported):
    _summary, study = imported
    assert study.title == "Published pilot"
    assert study.status == Study.Status.CLOSED
    assert (study.overlap_k, study.batches_per_stage) == (2, 2)
    assert study.seed is not None
    assert not study.consent_versions.exists()


def test_title_defaults_to_the_slug(db):
    import_text(to_csv(row_dicts()), slug="from-paper")
    assert Study.objects.get(slug="from-paper").title == "from-paper"


def test_stages_in_order_of_first_appearance_without_waiting(imported):
    _summary, study = imported
    assert [(s.position, s.name, s.min_wait) for s in study.stages.order_by("position")] == [
        (1, S1, timedelta(0)),
        (2, S2, timedelta(0)),
    ]


def test_groups_and_annotators_come_from_the_pseudonyms(imported):
    _summary, study = imported
    assert sorted(study.groups.values_list("name", "pseudonym_prefix")) == [
        ("Expert", "Expert"),
        ("Layperson", "Layperson"),
    ]
    annotators = Annotator.objects.filter(study=study).select_related("group")
    assert sorted((a.pseudonym, a.group.name, a.number) for a in annotators) == [
        ("Expert 1", "Expert", 1),
        ("Expert 2", "Expert", 2),
        ("Expert 3", "Expert", 3),
        ("Layperson 1", "Layperson", 1),
        ("Layperson 2", "Layperson", 2),
        ("Layperson 3", "Layperson", 3),
    ]
    tokens = [a.access_token for a in annotators]
    assert all(len(t) >= 32 for t in tokens) and len(set(tokens)) == len(tokens)
    # Records of published work, not invitations: their links do not open.
    assert not any(a.is_active for a in annotators)
    assert not any(a.consented_at or a.consented_version_id for a in annotators)


def test_default_error_categories_are_created(imported):
    _summary, study = imported
    assert dict(study.categories.values_list("slug", "bit")) == bits()


def test_published_category_columns_are_the_default_category_slugs():
    assert sorted(PUBLISHED_CATEGORY_COLUMNS) == sorted(c.slug for c in DEFAULT_ERROR_CATEGORIES)


def test_one_context_per_dialogue_with_role_text_turns(imported):
    _summary, study = imported
    d2 = study.contexts.get(external_id="d2")
    assert d2.turns == [
        {"role": "therapist", "text": "How was your week?"},
        {"role": "client", "text": "I skipped the gym again, it-it– whatever."},
        {"role": "therapist", "text": "Again?"},
    ]
    assert study.contexts.count() == 2


def test_reflections_are_shared_across_stages_and_human_by_source(imported):
    _summary, study = imported
    d1 = study.contexts.get(external_id="d1")
    assert sorted(d1.reflections.values_list("kind", "source", "text")) == [
        ("human", "Human", H1),
        ("synthetic", "GPT-2", G2_1),
        ("synthetic", "GPT-3", G3_1),
    ]
    human = d1.reflections.get(kind="human")
    assert sorted(human.batches.values_list("stage__name", flat=True)) == [S1, S2]


def test_one_batch_per_stage_and_dialogue_holding_the_judged_reflections(imported):
    _summary, study = imported
    batches = {
        (b.stage.name, b.context.external_id): [
            i.reflection.text for i in b.items.select_related("reflection")
        ]
        for b in Batch.objects.filter(stage__study=study).select_related("stage", "context")
    }
    assert batches == {
        (S1, "d1"): [H1, G2_1],
        (S1, "d2"): [H2, G2_2],
        (S2, "d1"): [H1, G3_1],
        (S2, "d2"): [H2, G3_2],
    }


def test_assignments_are_submitted_with_group_and_annotator_slots(imported):
    _summary, study = imported
    slots = {
        (a.stage.name, a.batch.context.external_id, a.annotator.pseudonym): (
            a.group_slot,
            a.annotator_slot,
        )
        for a in Assignment.objects.filter(stage__study=study).select_related(
            "stage", "batch__context", "annotator"
        )
    }
    assert slots == {
        (S1, "d1", "Layperson 1"): (1, 1),
        (S1, "d1", "Layperson 2"): (2, 1),
        (S1, "d1", "Expert 1"): (1, 1),
        (S1, "d1", "Expert 2"): (2, 1),
        (S1, "d2", "Layperson 1"): (1, 2),
        (S1, "d2", "Layperson 3"): (2, 1),
        (S1, "d2", "Expert 1"): (1, 2),
        (S1, "d2", "Expert 2"): (2, 2),
        (S2, "d1", "Layperson 1"): (1, 1),
        (S2, "d1", "Layperson 3"): (2, 1),
        (S2, "d1", "Expert 2"): (1, 1),
        (S2, "d1", "Expert 3"): (2, 1),
        (S2, "d2", "Layperson 2"): (1, 1),
        (S2, "d2", "Layperson 3"): (2, 2),
        (S2, "d2", "Expert 1"): (1, 1),
        (S2, "d2", "Expert 3"): (2, 2),
    }
    for a in Assignment.objects.filter(stage__study=study).select_related("annotator"):
        assert a.status == Assignment.Status.SUBMITTED
        assert a.submitted_at is not None and a.expires_at > a.assigned_at
        assert a.group_id == a.annotator.group_id and a.stage_id == a.batch.stage_id


def test_recurring_when_the_annotator_judged_the_human_reflection_in_an_earlier_stage(imported):
    recurring = set(
        Assignment.objects.filter(is_recurring=True).values_list(
            "stage__name", "batch__context__external_id", "annotator__pseudonym"
        )
    )
    # Expert 1 judged only d2's synthetic reflection in the GPT-2 stage: not recurring.
    assert recurring == {
        (S2, "d1", "Layperson 1"),
        (S2, "d1", "Expert 2"),
        (S2, "d2", "Layperson 3"),
    }


def test_assignment_order_is_the_seeded_shuffle_of_its_batch(imported):
    for a in Assignment.objects.select_related("batch", "annotator"):
        assert a.order == assignment_shuffled_order(batch=a.batch, annotator=a.annotator)


def test_judgements_store_answers_categories_and_most_evident_error(imported):
    assert Judgement.objects.count() == len(ROWS)
    yes = judgement(S1, "d1", H1, "Layperson 1")
    assert (yes.coherent, yes.error_flags, yes.most_evident_bit, yes.empathy) == (
        True,
        0,
        None,
        None,
    )
    single = judgement(S1, "d1", G2_1, "Layperson 1")
    assert (single.coherent, single.error_flags) == (False, flags("dialogue_contradicting"))
    assert single.most_evident_bit == bits()["dialogue_contradicting"]
    double = judgement(S1, "d1", G2_1, "Layperson 2")
    assert double.error_flags == flags("dialogue_contradicting", "malformed")
    assert double.most_evident_bit is None
    triple = judgement(S1, "d1", G2_1, "Expert 1")
    assert triple.error_flags == flags("dialogue_contradicting", "off_topic", "parroting")
    assert triple.most_evident_bit is None
    bare_no = judgement(S1, "d1", G2_1, "Expert 2")
    assert (bare_no.coherent, bare_no.error_flags, bare_no.most_evident_bit) == (False, 0, None)


def test_every_row_becomes_exactly_one_judgement(imported):
    stored = {
        (
            j.assignment.stage.name,
            j.assignment.batch.context.external_id,
            j.reflection.source,
            j.reflection.text,
            j.assignment.annotator.pseudonym,
            "Yes" if j.coherent else "No",
            frozenset(s for s, b in bits().items() if j.error_flags & (1 << b)),
        )
        for j in Judgement.objects.select_related(
            "assignment__stage", "assignment__batch__context", "assignment__annotator", "reflection"
        )
    }
    assert stored == {(*row[:6], frozenset(row[6].split())) for row in ROWS}


# --- optional columns, extra columns, encodings ---------------------------------------


RICH_HEADER = ("", *PUBLISHED_COLUMNS, "annotator_group", "most_evident_error", "empathy", "notes")


def rich_rows() -> list[dict]:
    """A pandas-style export with the optional columns, an index and a notes column."""
    rows = row_dicts(
        [
            (S1, "d1", "Human", H1, "Expert 1", "Yes", ""),
            (S1, "d1", "GPT-2", G2_1, "Expert 1", "No", "malformed off_topic"),
            (S1, "d1", "Human", H1, "Expert 2", "Yes", ""),
            (S1, "d1", "GPT-2", G2_1, "Expert 2", "No", "parroting"),
            (S1, "d1", "Human", H1, "Worker 7", "Yes", ""),
            (S1, "d1", "GPT-2", G2_1, "Worker 7", "No", "off_topic parroting"),
        ]
    )
    extra = [  # annotator_group, most_evident_error, empathy
        ("MI experts", "", "4"),
        ("MI experts", "off_topic", ""),
        ("MI experts", "", "5.0"),
        ("MI experts", "", ""),
        ("", "", ""),
        ("", "", ""),
    ]
    for i, (r, (group, mee, empathy)) in enumerate(zip(rows, extra, strict=True)):
        r.update({"": str(i), "annotator_group": group, "most_evident_error": mee})
        r.update({"empathy": empathy, "notes": "ignored"})
    return rows


def test_optional_columns_set_group_most_evident_error_and_empathy(db):
    summary = import_text(to_csv(rich_rows(), RICH_HEADER))
    assert summary.ignored_columns == ("(unnamed column 1)", "'notes'")
    assert "Ignored columns: (unnamed column 1), 'notes'." in str(summary)
    study = Study.objects.get(slug="published")
    # An empty annotator_group cell means the group named by the prefix.
    assert sorted(study.groups.values_list("name", "pseudonym_prefix")) == [
        ("MI experts", "Expert"),
        ("Worker", "Worker"),
    ]
    assert sorted(Annotator.objects.values_list("pseudonym", "group__name", "number")) == [
        ("Expert 1", "MI experts", 1),
        ("Expert 2", "MI experts", 2),
        ("Worker 7", "Worker", 7),
    ]
    assert judgement(S1, "d1", H1, "Expert 1").empathy == 4
    assert judgement(S1, "d1", H1, "Expert 2").empathy == 5
    assert judgement(S1, "d1", H1, "Worker 7").empathy is None
    chosen = judgement(S1, "d1", G2_1, "Expert 1")
    assert chosen.error_flags == flags("malformed", "off_topic")
    assert chosen.most_evident_bit == bits()["off_topic"]
    assert judgement(S1, "d1", G2_1, "Expert 2").most_evident_bit == bits()["parroting"]
    assert judgement(S1, "d1", G2_1, "Worker 7").most_evident_bit is None


def test_utf8_with_byte_order_mark_is_accepted_from_a_path_and_a_file(db, tmp_path):
    content = "\ufeff" + to_csv(row_dicts())
    path = tmp_path / "published.csv"
    path.write_bytes(content.encode("utf-8"))
    annotations_import(path_or_file=path, study_slug="from-path")
    annotations_import(path_or_file=io.StringIO(content), study_slug="from-text")
    for slug in ("from-path", "from-text"):
        assert Judgement.objects.filter(assignment__stage__study__slug=slug).count() == len(ROWS)
        assert Study.objects.get(slug=slug).stages.count() == 2


def test_unicode_texts_are_kept_exactly(db):
    text = 'You said "enough" 🙂,\nand then: שלום, مرحبا — it\'s\r\nhard.  '
    turn = "I feel 😞\n\"stuck\", 'you know'? עברית"
    rows = row_dicts(ROWS[:2])
    rows[1]["reflection"] = text
    for row in rows:
        row["dialogue_context"] = json.dumps([{"client": turn}], ensure_ascii=False)
    import_text(to_csv(rows))
    assert Reflection.objects.get(source="GPT-2").text == text
    assert DialogueContext.objects.get().turns == [{"role": "client", "text": turn}]
    assert Judgement.objects.get(reflection__text=text).coherent is False


def test_surrounding_whitespace_and_blank_rows_are_ignored(db):
    rows = row_dicts(ROWS[:2])
    rows[0]["coherent_and_context_consistent"] = " Yes "
    rows[1]["dialogue_contradicting"] = "Yes\t"
    rows[1]["annotator"] = " Layperson 1"
    text = to_csv(rows)
    header, first, second = text.splitlines(keepends=True)
    import_text(header + first + "\r\n,,,,,,,,,,,,\r\n" + second)
    assert Judgement.objects.count() == 2
    assert Annotator.objects.get().pseudonym == "Layperson 1"


# --- bad input: row-numbered, nothing written -----------------------------------------


def bad(index: int, **changes) -> str:
    rows = row_dicts()
    rows[index].update(changes)
    return to_csv(rows)


def row(index: int, column: str) -> str:
    return f"row {index + 2}, column '{column}'"


NOT_NUMBERED = (
    'is not "<name> <number>" like "Expert 4" (a number from 1 without leading zeros, after '
    "one space); the group is the name without the number"
)


@pytest.mark.parametrize(
    ("index", "changes", "column", "message"),
    [
        (
            3,
            {"coherent_and_context_consistent": "yes"},
            "coherent_and_context_consistent",
            "expected Yes or No, not 'yes'",
        ),
        (
            3,
            {"coherent_and_context_consistent": ""},
            "coherent_and_context_consistent",
            "expected Yes or No, not ''",
        ),
        (
            0,
            {"off_topic": "Yes"},
            "off_topic",
            "a category can only be Yes when coherent_and_context_consistent is No",
        ),
        (1, {"malformed": "No"}, "malformed", "expected Yes or empty, not 'No'"),
        (1, {"parroting": "1"}, "parroting", "expected Yes or empty, not '1'"),
        (4, {"annomi_dialogue_id": " "}, "annomi_dialogue_id", "empty dialogue id"),
        (4, {"stage": ""}, "stage", "empty stage"),
        (4, {"reflection_source": ""}, "reflection_source", "empty source"),
        (4, {"reflection": "  \n"}, "reflection", "empty reflection"),
        (4, {"annotator": ""}, "annotator", "empty annotator"),
        (
            4,
            {"annomi_dialogue_id": "x" * 101},
            "annomi_dialogue_id",
            "longer than 100 characters",
        ),
        (4, {"reflection_source": "G" * 101}, "reflection_source", "longer than 100 characters"),
        (4, {"reflection": "Nul\x00here"}, "reflection", "contains a NUL character"),
        (4, {"stage": "GPT\x00"}, "stage", "contains a NUL character"),
        (
            5,
            {"dialogue_context": "[{therapist: 'hi'}]"},
            "dialogue_context",
            "invalid JSON: Expecting property name enclosed in double quotes",
        ),
        (
            5,
            {"dialogue_context": '{"therapist": "hi"}'},
            "dialogue_context",
            "must be a non-empty JSON list of turns",
        ),
        (
            5,
            {"dialogue_context": "[]"},
            "dialogue_context",
            "must be a non-empty JSON list of turns",
        ),
        (
            5,
            {"dialogue_context": '[{"therapist": "hi", "client": "yo"}]'},
            "dialogue_context",
            'turn 1 must be {"role": ..., "text": ...} or a one-key object like {"client": "..."}',
        ),
        (
            5,
            {"dialogue_context": '[{"therapist": "hi"}, {"coach": "yo"}]'},
            "dialogue_context",
            "turn 2 has unknown role 'coach' (expected therapist or client)",
        ),
        (
            5,
            {"dialogue_context": '[{"therapist": 3}]'},
            "dialogue_context",
            "turn 1 has empty text",
        ),
        (
            5,
            {"dialogue_context": '[{"therapist": NaN}]'},
            "dialogue_context",
            "invalid JSON: NaN and Infinity are not allowed",
        ),
        (
            5,
            {"dialogue_context": '[{"therapist": "hi"}]'},
            "dialogue_context",
            'differs from the dialogue_context of dialogue "d1" in row 2: a study stores one '
            "context per dialogue id",
        ),
        (
            2,
            {"reflection": "Another human reflection."},
            "reflection",
            'a second, different human reflection for dialogue "d1" (row 2 has another); a '
            "dialogue has one",
        ),
        (
            3,
            {"reflection_source": "BART"},
            "reflection_source",
            'the same reflection has the source "GPT-2" in row 3: within a stage and dialogue a '
            "reflection is identified by its text",
        ),
        (
            4,
            {"annotator": "Expert"},
            "annotator",
            '\'Expert\' is not "<name> <number>" like "Expert 4" (a number from 1 without '
            "leading zeros, after one space); the group is the name without the number",
        ),
        (4, {"annotator": "Expert 01"}, "annotator", NOT_NUMBERED),
        (4, {"annotator": "Expert 0"}, "annotator", NOT_NUMBERED),
        (4, {"annotator": "Expert  1"}, "annotator", NOT_NUMBERED),
        (4, {"annotator": "7 1"}, "annotator", NOT_NUMBERED),
        (4, {"annotator": "Expert 99999999999"}, "annotator", "annotator number too large"),
    ],
)
def test_bad_cell_is_named_by_row_and_column(db, index, changes, column, message):
    issues = rejected(bad(index, **changes))
    assert message in issue_at(issues, row(index, column)).message


def test_duplicate_row_names_both_rows(db):
    rows = row_dicts()
    rows.append(dict(rows[3], coherent_and_context_consistent="No", malformed=""))
    issues = rejected(to_csv(rows))
    assert [(i.where, i.message) for i in issues] == [
        (
            f"row {len(rows) + 1}",
            "duplicate of row 5: the same stage, dialogue, reflection and annotator",
        )
    ]


def test_same_annotator_in_two_groups_is_refused(db):
    rows = rich_rows()
    rows[5]["annotator_group"] = "Crowd"  # Worker 7 was in "Worker" (empty cell) in row 6
    issues = rejected(to_csv(rows, RICH_HEADER))
    assert [(i.where, i.message) for i in issues] == [
        (
            "row 7, column 'annotator_group'",
            'annotator "Worker 7" is in group "Crowd" here but in group "Worker" in row 6; an '
            "annotator belongs to one group",
        )
    ]


def test_group_with_two_pseudonym_prefixes_is_refused(db):
    rows = rich_rows()
    rows[4]["annotator_group"] = "MI experts"
    issues = rejected(to_csv(rows, RICH_HEADER))
    assert [(i.where, i.message) for i in issues] == [
        (
            "row 6, column 'annotator'",
            'group "MI experts" names its annotators "Expert <number>" (row 2), not "Worker '
            "<number>\": a group's pseudonyms share one prefix",
        )
    ]


def test_two_groups_sharing_a_prefix_are_refused(db):
    rows = rich_rows()
    rows[2]["annotator_group"] = ""  # Expert 2 in the group "Expert"; Expert 1 is a "MI expert"
    issues = rejected(to_csv(rows, RICH_HEADER))
    assert issue_at(issues, "row 4, column 'annotator'").message == (
        'the prefix "Expert" already names annotators of group "MI experts" (row 2); two '
        "groups cannot share a prefix"
    )


@pytest.mark.parametrize(
    ("index", "changes", "column", "message"),
    [
        (
            1,
            {"most_evident_error": "Off-topic"},
            "most_evident_error",
            "unknown category 'Off-topic' (expected one of dialogue_contradicting, malformed, "
            "off_topic, on_topic_but_unverifiable, parroting)",
        ),
        (
            1,
            {"most_evident_error": "parroting"},
            "most_evident_error",
            "'parroting' is not among the categories selected on this row",
        ),
        (
            0,
            {"most_evident_error": "off_topic"},
            "most_evident_error",
            "a most evident error is only given when coherent_and_context_consistent is No",
        ),
        (0, {"empathy": "6"}, "empathy", "expected a whole number from 1 to 5, not '6'"),
        (0, {"empathy": "4.5"}, "empathy", "expected a whole number from 1 to 5, not '4.5'"),
        (0, {"empathy": "agree"}, "empathy", "expected a whole number from 1 to 5, not 'agree'"),
        (
            1,
            {"empathy": "3"},
            "empathy",
            "the 1-5 rating is only given when coherent_and_context_consistent is Yes",
        ),
        (0, {"annotator_group": "G" * 101}, "annotator_group", "longer than 100 characters"),
    ],
)
def test_bad_optional_cell_is_named_by_row_and_column(db, index, changes, column, message):
    rows = rich_rows()
    rows[index].update(changes)
    issues = rejected(to_csv(rows, RICH_HEADER))
    assert [(i.where, i.message) for i in issues] == [(row(index, column), message)]


def test_annotator_group_column_still_needs_numbered_pseudonyms(db):
    rows = rich_rows()
    rows[4]["annotator"] = rows[5]["annotator"] = "Crowd worker"
    issues = rejected(to_csv(rows, RICH_HEADER))
    assert issue_at(issues, "row 6, column 'annotator'").message.endswith(
        "pseudonyms keep this shape when annotator_group names the group"
    )


@pytest.mark.parametrize("dropped", ["annotator", "dialogue_context", "parroting"])
def test_missing_column_is_named_at_the_header_row(db, dropped):
    header = [c for c in PUBLISHED_COLUMNS if c != dropped]
    issues = rejected(to_csv(row_dicts(), header))
    assert [(i.where, i.message) for i in issues] == [
        ("row 1 (header)", f"missing column(s): {dropped}")
    ]


def test_repeated_column_is_refused(db):
    text = to_csv(row_dicts())
    header, rest = text.split("\r\n", 1)
    issues = rejected(header + ",stage\r\n" + rest)
    assert [(i.where, i.message) for i in issues] == [
        ("row 1 (header)", "column 'stage' appears 2 times")
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty: expected a header row and one row per judgement"),
        (",".join(PUBLISHED_COLUMNS) + "\r\n", "has a header but no rows"),
        (",".join(PUBLISHED_COLUMNS) + "\r\n,,,\r\n\r\n", "has a header but no rows"),
    ],
)
def test_empty_file_is_refused(db, content, message):
    issues = rejected(content)
    assert [(i.where, i.message) for i in issues] == [("file", message)]


def test_row_with_more_cells_than_the_header_is_refused(db):
    text = to_csv(row_dicts())
    lines = text.split("\r\n")
    lines[3] += ",extra"
    issues = rejected("\r\n".join(lines))
    assert [(i.where, i.message) for i in issues] == [
        ("row 4", "13 cells but the header has 12 columns")
    ]


def test_dialogue_without_any_context_cell_is_refused(db):
    rows = row_dicts()
    for r in rows:
        if r["annomi_dialogue_id"] == "d2":
            r["dialogue_context"] = ""
    issues = rejected(to_csv(rows))
    assert [(i.where, i.message) for i in issues] == [
        ('dialogue "d2" (first in row 10)', "no row gives its dialogue_context")
    ]


def test_context_may_be_left_empty_on_later_rows(db):
    rows = row_dicts()
    for r in rows[1:]:
        if r["annomi_dialogue_id"] == "d1":
            r["dialogue_context"] = ""
    import_text(to_csv(rows))
    assert DialogueContext.objects.get(external_id="d1").turns[0]["role"] == "therapist"


def test_non_utf8_file_is_refused_with_the_byte(db):
    content = to_csv(row_dicts()).replace(H2, "It’s the café.").encode("cp1252")
    first_bad = next(i for i, byte in enumerate(content) if byte >= 0x80)  # the – of d2
    issues = rejected(content)
    assert [(i.where, i.message) for i in issues] == [
        ("file", f"not UTF-8 text (byte {first_bad}): save it as UTF-8")
    ]


def test_every_problem_is_reported_at_once_in_row_order(db):
    rows = row_dicts()
    rows[1]["coherent_and_context_consistent"] = "N"
    rows[6]["annotator"] = "Expert"
    rows[20]["reflection"] = ""
    issues = rejected(to_csv(rows))
    assert [i.where for i in issues] == [
        row(1, "coherent_and_context_consistent"),
        row(6, "annotator"),
        row(20, "reflection"),
    ]


def test_long_issue_lists_are_capped(db):
    rows = row_dicts() * 3  # duplicates
    for r in rows:
        r["coherent_and_context_consistent"] = "?"
    before = all_counts()
    with pytest.raises(AnnotationsImportError) as excinfo:
        import_text(to_csv(rows))
    assert all_counts() == before
    error = excinfo.value
    assert len(error.problems) == MAX_REPORTED_PROBLEMS
    assert error.total == len(rows) + 2 * len(ROWS)
    assert str(error).endswith(f"... and {error.total - MAX_REPORTED_PROBLEMS} more")


def test_existing_slug_is_refused_before_reading(db):
    study_create(slug="published", title="Already here")
    issues = rejected(b"\xff not even read")
    assert [(i.where, i.message) for i in issues] == [
        ("study", 'a study with the slug "published" already exists; the import creates a new one')
    ]


@pytest.mark.parametrize("slug", ["Has Caps", "", "-leading", "x" * 65, "ok\n"])
def test_invalid_slug_is_refused(db, slug):
    issues = rejected(to_csv(row_dicts()), slug=slug)
    assert issues[0].where == "study"
    assert "is not a valid slug" in issues[0].message


def test_slug_taken_between_the_check_and_the_write_is_refused(db, monkeypatch):
    from studies.datafiles.published import importing as published

    study_create(slug="published", title="Created meanwhile")
    monkeypatch.setattr(published, "_study_problem", lambda slug, title: None)
    issues = rejected(to_csv(row_dicts()))
    assert [i.where for i in issues] == ["study"]
    assert "already exists" in issues[0].message


def test_failure_while_writing_rolls_everything_back(db, monkeypatch):
    from studies.datafiles.published import importing as published

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(published.Judgement.objects, "bulk_create", broken)
    before = all_counts()
    with pytest.raises(RuntimeError, match="disk full"):
        import_text(to_csv(row_dicts()))
    assert all_counts() == before


# --- the management command -------------------------------------------------------------


def test_command_prints_the_summary(db, tmp_path):
    path = tmp_path / "published.csv"
    path.write_text(to_csv(row_dicts()), encoding="utf-8")
    out = StringIO()
    call_command(
        "import_annotations", str(path), "--study", "paper", "--title", "Paper", stdout=out
    )
    assert out.getvalue().strip() == (
        'Created the closed study "paper": 2 stages, 2 groups, 6 annotators, 2 contexts, '
        "6 reflections, 4 batches, 16 assignments, 31 judgements (k = 2, m = 2)."
    )
    assert Study.objects.get(slug="paper").title == "Paper"


def test_command_reports_problems_on_stderr_and_exits_non_zero(db, tmp_path, capsys, monkeypatch):
    path = tmp_path / "bad.csv"
    path.write_text(bad(3, coherent_and_context_consistent="maybe"), encoding="utf-8")
    before = all_counts()
    # run_from_argv closes the connections when done, which would end the test's transaction.
    monkeypatch.setattr(connections, "close_all", lambda: None)
    # execute() runs django.setup() again, which would bind the logging handlers of the
    # whole run to this test's captured stderr, closed once the test ends (a later log
    # line then takes pytest's own stderr down).
    monkeypatch.setattr(django, "setup", lambda *args, **kwargs: None)
    with pytest.raises(SystemExit) as exit_info:
        ManagementUtility(
            ["manage.py", "import_annotations", str(path), "--study", "paper"]
        ).execute()
    assert exit_info.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "CommandError: Nothing was imported: 1 problem(s) in bad.csv:\n"
        "  row 5, column 'coherent_and_context_consistent': expected Yes or No, not 'maybe'\n"
    )
    assert all_counts() == before


def test_command_refuses_a_missing_file_or_a_taken_slug(db, tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        call_command("import_annotations", str(tmp_path / "nope.csv"), "--study", "paper")
    study_create(slug="paper", title="Paper")
    before = all_counts()
    path = tmp_path / "published.csv"
    path.write_text(to_csv(row_dicts()), encoding="utf-8")
    with pytest.raises(CommandError, match='a study with the slug "paper" already exists'):
        call_command("import_annotations", str(path), "--study", "paper")
    assert all_counts() == before
