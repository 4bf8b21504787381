"""Annotation exports: the published format cell by cell, round trips through the
import, formula injection and Unicode, filters, the download view and the command."""

import csv
import io
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.http import StreamingHttpResponse
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.services import analysis_run_compute
from studies.datafiles.materials import materials_import
from studies.datafiles.published import annotations_import
from studies.exports import ExportOptions, export_csv_chunks, export_options_clean
from studies.models import Assignment, Judgement, Role, Study
from studies.permissions import Capability
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_reject,
    assignment_submit,
    judgement_record,
    study_create,
)
from tests.api.conftest import staff_with_every_permission
from tests.factories import StaffMemberFactory, user_with_role
from tests.studies.roles.other_study import make_other_study
from tests.studies.roles.test_roles import EXPECTED

pytestmark = pytest.mark.django_db


def export_text(study, **options) -> str:
    return "".join(export_csv_chunks(study=study, options=ExportOptions(**options)))


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


TEXTS = {
    "human": 'You feel "stuck", and\nit-it\u2013 whatever, it hurts \U0001f614.',
    "formula": '=HYPERLINK("http://evil","x")',
    "plus": "+1 you said",
    "at": "@therapist hello",
    "already": "'=looks escaped",
    "rtl": "\u05d0\u05ea\u05d4 \u05de\u05e8\u05d2\u05d9\u05e9 \u05dc\u05d1\u05d3",
}


@pytest.fixture
def tiny_study(db):
    """One stage, one group of one annotator (k = 1), one context whose reflections
    carry formula-looking, quoted, multi-line, emoji and right-to-left texts."""
    study = study_create(
        slug="tiny",
        title="Tiny",
        stages=[("Only stage", timedelta(0))],
        groups=["Layperson"],
        information_sheet="Info.",
        consent_text="I agree.",
        seed=7,
        overlap_k=1,
    )
    doc = {
        "contexts": [
            {
                "id": "-42",
                "turns": [
                    {"role": "therapist", "text": "How are you?"},
                    {"role": "client", "text": "=Not great, \u00ab honestly \u00bb."},
                ],
                "human_reflection": TEXTS["human"],
                "synthetic": [
                    {"stage": "Only stage", "source": "GPT-2", "text": TEXTS[key]}
                    for key in ("formula", "plus", "at", "already", "rtl")
                ],
                "attention_checks": [{"text": "Bananas are yellow when ripe."}],
            }
        ]
    }
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    (annotator,) = annotators_create(group=study.groups.get(), count=1)
    assignment = assignment_create(annotator=annotator, batch=study.stages.get().batches.get())
    answers = {
        TEXTS["human"]: Answer(coherent=True, empathy=4),
        TEXTS["formula"]: Answer(
            coherent=False,
            categories=frozenset({"malformed", "parroting"}),
            most_evident="parroting",
        ),
        TEXTS["plus"]: Answer(coherent=False, categories=frozenset({"off_topic"})),
        TEXTS["at"]: Answer(coherent=True, empathy=2),
        TEXTS["already"]: Answer(coherent=False, categories=frozenset({"dialogue_contradicting"})),
        TEXTS["rtl"]: Answer(coherent=True, empathy=5),
    }
    for reflection in assignment.batch.reflections.all():
        answer = answers.get(reflection.text) or Answer(
            coherent=False, categories=frozenset({"off_topic"})
        )
        judgement_record(assignment=assignment, reflection=reflection, answer=answer)
    assignment_submit(assignment=assignment)
    return study


EXPECTED_PUBLISHED = [
    [
        "annomi_dialogue_id",
        "stage",
        "dialogue_context",
        "reflection_source",
        "reflection",
        "annotator",
        "coherent_and_context_consistent",
        "dialogue_contradicting",
        "malformed",
        "off_topic",
        "on_topic_but_unverifiable",
        "parroting",
    ],
]
CONTEXT_CELL = '[{"therapist": "How are you?"}, {"client": "=Not great, \u00ab honestly \u00bb."}]'


def test_published_export_matches_the_expected_csv_cell_by_cell(tiny_study):
    """The default CSV writes every text exactly as stored (formula-looking ones too)."""
    rows = rows_of(export_text(tiny_study))
    by_text = {}
    for row in rows[1:]:
        by_text[row[4]] = row
    assert rows[0] == EXPECTED_PUBLISHED[0]
    assert len(rows) == 1 + 6  # the attention check is not exported
    prefix = ["-42", "Only stage", CONTEXT_CELL]
    assert by_text[TEXTS["human"]] == [
        *prefix, "Human", TEXTS["human"], "Layperson 1", "Yes", "", "", "", "", "",
    ]  # fmt: skip
    assert by_text[TEXTS["formula"]] == [
        *prefix, "GPT-2", TEXTS["formula"], "Layperson 1", "No", "", "Yes", "", "", "Yes",
    ]  # fmt: skip
    assert by_text["+1 you said"] == [
        *prefix, "GPT-2", "+1 you said", "Layperson 1", "No", "", "", "Yes", "", "",
    ]  # fmt: skip
    assert by_text["@therapist hello"] == [
        *prefix, "GPT-2", "@therapist hello", "Layperson 1", "Yes", "", "", "", "", "",
    ]  # fmt: skip
    assert by_text["'=looks escaped"] == [
        *prefix, "GPT-2", "'=looks escaped", "Layperson 1", "No", "Yes", "", "", "", "",
    ]  # fmt: skip
    assert by_text[TEXTS["rtl"]][4] == TEXTS["rtl"]


def test_spreadsheet_safe_export_prefixes_formula_like_cells_with_an_apostrophe(tiny_study):
    rows = rows_of(export_text(tiny_study, file="csv-spreadsheet-safe"))
    by_text = {}
    for row in rows[1:]:
        by_text[row[4]] = row
    assert rows[0] == EXPECTED_PUBLISHED[0]
    assert len(rows) == 1 + 6
    prefix = ["'-42", "Only stage", CONTEXT_CELL]
    assert by_text[TEXTS["human"]] == [
        *prefix, "Human", TEXTS["human"], "Layperson 1", "Yes", "", "", "", "", "",
    ]  # fmt: skip
    assert by_text["'" + TEXTS["formula"]] == [
        *prefix, "GPT-2", "'" + TEXTS["formula"], "Layperson 1", "No", "", "Yes", "", "", "Yes",
    ]  # fmt: skip
    assert by_text["'" + TEXTS["plus"]] == [
        *prefix, "GPT-2", "'+1 you said", "Layperson 1", "No", "", "", "Yes", "", "",
    ]  # fmt: skip
    assert by_text["'" + TEXTS["at"]] == [
        *prefix, "GPT-2", "'@therapist hello", "Layperson 1", "Yes", "", "", "", "", "",
    ]  # fmt: skip
    assert by_text["''=looks escaped"] == [
        *prefix, "GPT-2", "''=looks escaped", "Layperson 1", "No", "Yes", "", "", "", "",
    ]  # fmt: skip
    assert by_text[TEXTS["rtl"]][4] == TEXTS["rtl"]
    full = rows_of(export_text(tiny_study, fmt="full", file="csv-spreadsheet-safe"))
    header = full[0]
    dialogue, text = header.index("annomi_dialogue_id"), header.index("reflection")
    assert {r[dialogue] for r in full[1:]} == {"'-42"}
    assert "'" + TEXTS["formula"] in {r[text] for r in full[1:]}


def test_full_export_writes_texts_exactly_by_default(tiny_study):
    full = rows_of(export_text(tiny_study, fmt="full"))
    header = full[0]
    dialogue, text = header.index("annomi_dialogue_id"), header.index("reflection")
    assert {r[dialogue] for r in full[1:]} == {"-42"}
    assert {TEXTS["formula"], "+1 you said", "'=looks escaped"} <= {r[text] for r in full[1:]}


def test_spreadsheet_safe_export_imports_back_exactly_with_the_matching_option(tiny_study):
    safe = export_text(tiny_study, extended=True, file="csv-spreadsheet-safe")
    annotations_import(path_or_file=io.StringIO(safe), study_slug="copy", spreadsheet_safe=True)
    copy = Study.objects.get(slug="copy")
    assert export_text(copy, extended=True) == export_text(tiny_study, extended=True)
    assert export_text(copy, extended=True, file="csv-spreadsheet-safe") == safe


def test_import_keeps_apostrophes_unless_told_the_file_is_spreadsheet_safe(tiny_study):
    safe = export_text(tiny_study, extended=True, file="csv-spreadsheet-safe")
    annotations_import(path_or_file=io.StringIO(safe), study_slug="literal")
    texts = set(
        Study.objects.get(slug="literal").contexts.get().reflections.values_list("text", flat=True)
    )
    assert {"'" + TEXTS["formula"], "'+1 you said", "''=looks escaped"} <= texts
    assert Study.objects.get(slug="literal").contexts.get().external_id == "'-42"


def test_csv_is_rfc4180_with_crlf_line_ends_and_doubled_quotes(tiny_study):
    text = export_text(tiny_study)
    assert text.endswith("\r\n")
    assert text.startswith("annomi_dialogue_id,stage,")
    assert not text.startswith("\ufeff")
    # A quote inside a cell is doubled, and the multi-line cell is quoted.
    assert '"You feel ""stuck"", and\nit-it' in text


def test_published_export_imports_back_to_the_exact_texts_and_answers(tiny_study):
    text = export_text(tiny_study, extended=True)
    annotations_import(path_or_file=io.StringIO(text), study_slug="copy")
    copy = Study.objects.get(slug="copy")

    def answers(study):
        return sorted(
            Judgement.objects.filter(assignment__stage__study=study)
            .exclude(reflection__kind="attention_check")
            .values_list(
                "assignment__stage__name",
                "assignment__batch__context__external_id",
                "reflection__source",
                "reflection__text",
                "assignment__annotator__pseudonym",
                "coherent",
                "error_flags",
                "most_evident_bit",
                "empathy",
            )
        )

    assert answers(copy) == answers(tiny_study)
    assert copy.contexts.get().turns == tiny_study.contexts.get().turns
    # Exporting the copy gives the same file again.
    assert export_text(copy, extended=True) == text


def test_round_trip_of_a_whole_study_gives_the_same_report(annotated_study):
    first = export_text(annotated_study, extended=True)
    annotations_import(path_or_file=io.StringIO(first), study_slug="again")
    again = Study.objects.get(slug="again")
    assert export_text(again, extended=True) == first
    params = {"bootstrap_resamples": 100, "seed": 1}
    original = analysis_run_compute(study=annotated_study, parameters=params).result
    copied = analysis_run_compute(study=again, parameters=params).result
    assert original["n_judgements"] == copied["n_judgements"] == 108
    original.pop("study")
    copied.pop("study")
    # The published format has no column for generation metadata (model, decoding...):
    # the copy's reflections have none, so it has no generation settings to report.
    assert original.pop("generation_settings")
    assert copied.pop("generation_settings") == {}
    # Nor a column for claim and submission times or time spent: the copy's waits
    # between stages and its working times are unknown (not 0), the rest of its
    # workload the same.
    assert original.pop("waiting_periods")
    copied_waits = copied.pop("waiting_periods")
    assert all(e["n"] and e["max_days"] is None for g in copied_waits.values() for e in g)
    for entry in copied["workload"]:
        assert entry.pop("median_seconds_item") is None
        assert entry.pop("median_seconds_batch") is None
    for entry in original["workload"]:
        assert entry.pop("median_seconds_batch") is not None
        entry.pop("median_seconds_item")
    # Nor the order each annotator saw: the copy's order effects are unknown (none).
    assert original.pop("order_effects")
    assert copied.pop("order_effects") == {}
    # Without submission times, no agreement day by day either.
    for group, entry in copied["groups"].items():
        for stage, cell in entry["stages"].items():
            assert cell.pop("agreement_over_time") == []
            assert original["groups"][group]["stages"][stage].pop("agreement_over_time")
    assert_same_report(copied, original)


def assert_same_report(a, b, path="report"):
    """Equal up to floating-point summation order (the copy numbers items differently)."""
    assert type(a) is type(b), path
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            assert_same_report(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_report(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


def test_plain_published_export_has_exactly_the_published_columns(annotated_study):
    rows = rows_of(export_text(annotated_study))
    assert rows[0] == EXPECTED_PUBLISHED[0]
    assert len(rows) == 1 + 108
    assert {r[6] for r in rows[1:]} == {"Yes", "No"}


def test_full_export_has_audit_columns_and_no_personal_data(tiny_study):
    annotator = tiny_study.annotators.get()
    annotator.email = "secret@example.org"
    annotator.platform = "prolific"
    annotator.platform_participant_id = "PROLIFIC123"
    annotator.save()
    text = export_text(tiny_study, fmt="full")
    rows = rows_of(text)
    header = rows[0]
    assert header[:4] == ["study", "stage", "stage_position", "batch_id"]
    for column in ("item_position", "empathy_label", "attention_check_passed", "parroting"):
        assert column in header
    assert len(rows) == 1 + 7  # the attention check is in the full export
    records = [dict(zip(header, row, strict=True)) for row in rows[1:]]
    kinds = sorted(r["reflection_kind"] for r in records)
    assert kinds == ["attention_check", "human"] + ["synthetic"] * 5
    human = next(r for r in records if r["reflection_kind"] == "human")
    assert (human["empathy"], human["empathy_label"]) == ("4", "somewhat agree")
    assert human["attention_check_passed"] == "Yes"
    assert human["judged_at"].endswith("Z")
    formula = next(r for r in records if r["parroting"] == "Yes")
    assert formula["most_evident_error"] == "parroting"
    positions = sorted(int(r["item_position"]) for r in records)
    assert positions == list(range(1, 8))
    for secret in ("secret@example.org", "PROLIFIC123", annotator.access_token):
        assert secret not in text


def test_filters_select_stage_group_source_and_statuses(annotated_study):
    def count(**options):
        return len(rows_of(export_text(annotated_study, **options))) - 1

    assert count(stages=("GPT-2 stage",)) == 54
    assert count(groups=("Expert",)) == 54
    assert count(sources=("Human",)) == 36
    assignment = Assignment.objects.filter(status=Assignment.Status.SUBMITTED).first()
    assignment_reject(assignment=assignment, reason="Random answers.")
    assert count() == 105
    assert count(include_rejected=True) == 108


def test_bad_export_options_are_refused_with_messages(annotated_study):
    with pytest.raises(ValidationError) as info:
        export_options_clean(
            study=annotated_study,
            data={
                "format": "xlsx",
                "file": "ods",
                "stage": ["Nope"],
                "include_expired": "maybe",
            },
        )
    assert info.value.message_dict == {
        "format": ['Choose "published", "full" or "training", not "xlsx".'],
        "file": ['Choose "csv", "csv-spreadsheet-safe", "xlsx", "jsonl" or "parquet", not "ods".'],
        "stage": ["Not a stage of this study: Nope."],
        "include_expired": ["Use true or false."],
    }


# --------------------------------------------------------------------------- download view


@pytest.fixture
def staff_client(client, study):
    """An analyst of the study: may read its rows."""
    client.force_login(user_with_role(study, Role.ANALYST))
    return client


def test_download_streams_a_csv_attachment(annotated_study, staff_client):
    url = reverse("studies:export", args=["pilot"])
    response = staff_client.get(url, {"format": "full", "group": "Expert"})
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="pilot-annotations-full.csv"'
    body = b"".join(response.streaming_content).decode("utf-8")
    assert len(rows_of(body)) == 1 + 72  # 54 analysed + 18 attention-check answers


def test_download_refuses_bad_options_with_a_message(annotated_study, staff_client):
    response = staff_client.get(reverse("studies:export", args=["pilot"]), {"group": "Robots"})
    assert response.status_code == 400
    assert "group: Not a group of this study: Robots." in response.content.decode()


def test_download_is_for_staff_only(annotated_study, client):
    url = reverse("studies:export", args=["pilot"])
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    user = get_user_model().objects.create_user("plain", password="pw")
    client.force_login(user)
    assert client.get(url).status_code == 403  # signed in: refused, as on every staff page


#: Every staff download holding judgement rows (``Capability.READ_ROWS``).
DOWNLOADS = {
    "annotations": "studies:export",
    "questionnaire answers": "studies:export_questionnaires",
    "codes": "studies:coding_export",
    "items": "analysis:items_csv",
}


@pytest.mark.parametrize("download", DOWNLOADS)
def test_every_download_asks_the_roles(annotated_study, client, download):
    """Visitors go to the login; signed-in users who are not staff get a 403; staff
    without a role in the study (whatever their global permissions) and roles of
    another study a 404, as for no such study; roles that may not read rows a 403
    saying why; roles that may, the file."""
    url = reverse(DOWNLOADS[download], args=["pilot"])
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client.force_login(get_user_model().objects.create_user("plain", password="pw"))
    assert client.get(url).status_code == 403
    other = Study.objects.get(pk=make_other_study().study)
    for user in (staff_with_every_permission(), user_with_role(other, Role.OWNER)):
        client.force_login(user)
        assert client.get(url).status_code == 404, user.username
    for role in Role.values:
        client.force_login(user_with_role(annotated_study, role))
        response = client.get(url)
        if Capability.READ_ROWS in EXPECTED[role]:
            assert response.status_code == 200, role
            assert response["Content-Disposition"].startswith("attachment;")
        else:
            assert response.status_code == 403, role
            assert f"Your role in this study ({role}) does not allow this" in (
                response.content.decode()
            )


def test_an_annotator_session_cannot_export(annotated_study, client):
    annotator = annotated_study.annotators.order_by("pk").first()
    assert client.get(f"/i/{annotator.access_token}/").status_code == 302  # signed in
    response = client.get(reverse("studies:export", args=["pilot"]))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    table = client.get(reverse("analysis:dashboard", args=["pilot"]))
    assert table.status_code == 302 and "/admin/login/" in table["Location"]


def test_staff_without_a_role_in_the_study_cannot_export(annotated_study, client):
    client.force_login(StaffMemberFactory())
    assert client.get(reverse("studies:export", args=["pilot"])).status_code == 404


def test_download_of_an_unknown_study_is_404(staff_client):
    assert staff_client.get(reverse("studies:export", args=["nope"])).status_code == 404


# --------------------------------------------------------------------------- command


def test_command_writes_the_file_or_stdout(annotated_study, tmp_path):
    target = tmp_path / "out.csv"
    call_command("export_annotations", "pilot", "--out", str(target), stderr=StringIO())
    assert target.read_bytes().decode("utf-8") == export_text(annotated_study)
    assert not (tmp_path / "out.csv.partial").exists()
    out = StringIO()
    call_command(
        "export_annotations", "pilot", "--format", "full", "--stage", "GPT-3 stage", stdout=out
    )
    assert len(rows_of(out.getvalue())) == 1 + 54 + 18


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], 'No study with slug "nope".'),
        (["pilot", "--group", "Robots"], "Not a group of this study: Robots."),
        (["pilot", "--out", "/nonexistent-dir/x.csv"], "no directory"),
    ],
)
def test_command_refuses_bad_input(annotated_study, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("export_annotations", *args, stdout=StringIO())


# --------------------------------------------------------------------------- escaping


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("=1+1", "'=1+1"),
        ("+31 6", "'+31 6"),
        ("-", "'-"),
        ("@cmd", "'@cmd"),
        ("\tTab", "'\tTab"),
        ("'=x", "''=x"),
        ("'cause I said so", "'cause I said so"),
        ("plain", "plain"),
        ("", ""),
        ("'", "'"),
    ],
)
def test_cells_that_a_spreadsheet_would_run_get_an_apostrophe(text, escaped):
    from studies.datafiles.spreadsheet import cell_escape, cell_unescape

    assert cell_escape(text) == escaped
    assert cell_unescape(escaped) == text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["'", "=", "+", "-", "@", "\t", "a", " ", "é"])))
def test_cell_escaping_is_always_undone_exactly(text):
    from studies.datafiles.spreadsheet import cell_escape, cell_unescape

    assert cell_unescape(cell_escape(text)) == text
    escaped = cell_escape(text)
    assert not escaped or escaped[0] not in "=+-@\t\r"


# --------------------------------------------------------------------------- admin


def test_admin_export_page_offers_the_study_names_and_posts_to_the_download(
    annotated_study, admin_client
):
    change = admin_client.get(reverse("admin:studies_study_change", args=[annotated_study.pk]))
    page_url = reverse("admin:studies_study_export", args=[annotated_study.pk])
    assert page_url in change.content.decode()
    page = admin_client.get(page_url).content.decode()
    assert f'action="{reverse("studies:export", args=["pilot"])}"' in page
    for name in ("GPT-2 stage", "Expert", "Layperson", "Human", "GPT-3"):
        assert f'value="{name}"' in page


def test_admin_action_redirects_one_study_to_its_download(annotated_study, admin_client):
    url = reverse("admin:studies_study_changelist")
    response = admin_client.post(
        url, {"action": "export_annotations", "_selected_action": [annotated_study.pk]}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("studies:export", args=["pilot"])
    other = study_create(slug="other", title="Other", information_sheet="i", consent_text="c")
    response = admin_client.post(
        url,
        {"action": "export_annotations", "_selected_action": [annotated_study.pk, other.pk]},
        follow=True,
    )
    assert "Choose exactly one study to export." in response.content.decode()


def test_published_rows_stay_aligned_when_the_study_lacks_a_default_category(db):
    """A study whose categories differ from the five defaults: every row has one cell
    per header column, the missing category's column is empty, and the extra category
    follows as its own column."""
    study = study_create(
        slug="custom", title="Custom", stages=[("S", timedelta(0))], groups=["Expert"],
        information_sheet="i", consent_text="c", overlap_k=1,
    )  # fmt: skip
    study.categories.filter(slug="dialogue_contradicting").delete()
    study.categories.create(slug="unsafe", label="Unsafe", definition="Harmful advice.", bit=9)
    doc = {
        "contexts": [
            {
                "id": "d1",
                "turns": [{"role": "client", "text": "Hello."}],
                "human_reflection": "You say hello.",
                "synthetic": [{"stage": "S", "source": "GPT-2", "text": "Buy shares."}],
                "attention_checks": [{"text": "Bananas are yellow."}],
            }
        ]
    }
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    (annotator,) = annotators_create(group=study.groups.get(), count=1)
    assignment = assignment_create(annotator=annotator, batch=study.stages.get().batches.get())
    for reflection in assignment.batch.reflections.all():
        answer = (
            Answer(
                coherent=False, categories=frozenset({"malformed", "unsafe"}), most_evident="unsafe"
            )
            if reflection.text == "Buy shares."
            else Answer(coherent=False, categories=frozenset({"off_topic"}))
        )
        judgement_record(assignment=assignment, reflection=reflection, answer=answer)
    assignment_submit(assignment=assignment)

    rows = rows_of(export_text(study))
    header = rows[0]
    assert header == [*EXPECTED_PUBLISHED[0], "unsafe"]
    assert all(len(row) == len(header) for row in rows)
    record = dict(zip(header, next(r for r in rows if r[4] == "Buy shares."), strict=True))
    assert record["dialogue_contradicting"] == ""
    assert (record["malformed"], record["unsafe"], record["off_topic"]) == ("Yes", "Yes", "")


def test_command_leaves_no_partial_file_when_the_export_fails(
    annotated_study, tmp_path, monkeypatch
):
    def broken(**kwargs):
        yield ["header"]
        raise RuntimeError("database went away")

    monkeypatch.setattr("studies.management.commands.export_annotations.export_rows", broken)
    for file in ("csv", "jsonl", "parquet", "xlsx"):
        target = tmp_path / f"out.{file}"
        with pytest.raises(RuntimeError, match="database went away"):
            call_command(
                "export_annotations", "pilot", "--file", file, "--out", str(target),
                stderr=StringIO(),
            )  # fmt: skip
        assert list(tmp_path.iterdir()) == []


def test_a_role_that_only_sees_the_study_cannot_export(annotated_study, client):
    """An export is rows of judgements: a viewer (who sees the study's aggregates) is
    refused the download saying why; an analyst gets it."""
    download = reverse("studies:export", args=["pilot"])
    client.force_login(user_with_role(annotated_study, Role.VIEWER))
    response = client.get(download)
    assert response.status_code == 403
    assert "it takes a role that may read judgements" in response.content.decode()
    client.force_login(user_with_role(annotated_study, Role.ANALYST))
    assert client.get(download).status_code == 200


def test_the_admin_export_needs_a_role_that_may_read_judgements(annotated_study, client):
    """The admin's export page, its link on the study page and the study list's action
    ask what the download asks: a viewer is refused them, an analyst is offered them."""
    export_page = reverse("admin:studies_study_export", args=[annotated_study.pk])
    study_page = reverse("admin:studies_study_change", args=[annotated_study.pk])
    changelist = reverse("admin:studies_study_changelist")
    client.force_login(user_with_role(annotated_study, Role.VIEWER))
    response = client.get(export_page)
    assert response.status_code == 403
    assert "it takes a role that may read judgements" in response.content.decode()
    assert export_page not in client.get(study_page).content.decode()
    assert 'value="export_annotations"' not in client.get(changelist).content.decode()

    client.force_login(user_with_role(annotated_study, Role.ANALYST))
    assert client.get(export_page).status_code == 200
    assert export_page in client.get(study_page).content.decode()
    assert 'value="export_annotations"' in client.get(changelist).content.decode()
