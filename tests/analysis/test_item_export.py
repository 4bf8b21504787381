"""The item-level export (analysis/item_export.py): its command, the dashboard download
linked from the admin's export page, and the API. The majority rule itself is pinned in
tests/analysis/metrics/test_items.py; here, that the export shows the report's judgements in the
issue's columns and order."""

import csv
import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from openpyxl import load_workbook
from rest_framework.authtoken.models import Token

from analysis.item_export import COLUMNS
from studies.datafiles.xlsx import CONTENT_TYPE as XLSX_CONTENT_TYPE
from studies.models import Batch, Reflection, Role, Stage, Study
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_expire,
    assignment_submit,
    judgement_record,
)
from tests.api.conftest import staff_with_every_permission
from tests.factories import StaffMemberFactory, StaffUserFactory, user_with_role
from tests.studies.typed_helpers import assert_same_as_csv, jsonl_frame, parquet_frame

HEADER = (
    "stage,annomi_dialogue_id,reflection_source,reflection,group,n_raters,coherence_score,"
    "majority_label,majority_mee,empathy_mean,n_descriptions"
)
HUMAN, CAND1, CAND2 = "human", "cand1", "cand2"


def yes(empathy):
    return Answer(coherent=True, empathy=empathy)


def no(*categories, mee=None):
    return Answer(coherent=False, categories=frozenset(categories), most_evident=mee)


def _role(reflection: Reflection) -> str:
    if reflection.kind == Reflection.Kind.HUMAN:
        return HUMAN
    return CAND1 if "candidate 1" in reflection.text else CAND2


def judge(study, group: str, stage: int, dialogue: str, answers: list[dict], *, expire=False):
    """One submitted assignment per entry of ``answers`` ({role: Answer}) on the batch of
    ``dialogue`` in stage ``stage`` (or, with ``expire``, answered but expired); the
    attention check is answered as expected."""
    batch = Batch.objects.get(
        stage__study=study, stage__position=stage, context__external_id=dialogue
    )
    annotators = annotators_create(group=study.groups.get(name=group), count=len(answers))
    for annotator, by_role in zip(annotators, answers, strict=True):
        assignment = assignment_create(annotator=annotator, batch=batch)
        reflections = {r.pk: r for r in batch.reflections.all()}
        for reflection_id in assignment.order:
            reflection = reflections[reflection_id]
            answer = (
                no("off_topic")
                if reflection.kind == Reflection.Kind.ATTENTION_CHECK
                else by_role[_role(reflection)]
            )
            judgement_record(assignment=assignment, reflection=reflection, answer=answer)
        if expire:
            assignment_expire(
                assignment=assignment, now=assignment.expires_at + timedelta(seconds=1)
            )
        else:
            assignment_submit(assignment=assignment)


@pytest.fixture
def judged(loaded_study):
    """Stage 1, dlg-1: three laypeople and two experts; stage 1, dlg-2: one expert;
    stage 2, dlg-1: one expired layperson's batch."""
    judge(
        loaded_study,
        "Layperson",
        1,
        "dlg-1",
        [
            {HUMAN: yes(4), CAND1: no("malformed"), CAND2: no("off_topic")},
            {
                HUMAN: yes(5),
                CAND1: no("malformed", "parroting", mee="malformed"),
                CAND2: no("parroting"),
            },
            {HUMAN: no("off_topic"), CAND1: yes(3), CAND2: yes(2)},
        ],
    )
    judge(
        loaded_study,
        "Expert",
        1,
        "dlg-1",
        [
            {HUMAN: yes(5), CAND1: yes(4), CAND2: no("off_topic")},
            {
                HUMAN: no("parroting"),
                CAND1: yes(1),
                CAND2: no("off_topic", "malformed", mee="off_topic"),
            },
        ],
    )
    judge(
        loaded_study,
        "Expert",
        1,
        "dlg-2",
        [{HUMAN: yes(2), CAND1: no("malformed"), CAND2: yes(3)}],
    )
    judge(
        loaded_study,
        "Layperson",
        2,
        "dlg-1",
        [{HUMAN: yes(1), CAND1: yes(1), CAND2: yes(1)}],
        expire=True,
    )
    return loaded_study


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


S1, S2 = "GPT-2 stage", "GPT-3 stage"
H1 = "Problem 1 has been weighing on you."
H2 = "Problem 2 has been weighing on you."


def cand(stage: str, j: int, i: int) -> str:
    return f"{stage} candidate {j} for dialogue {i}."


EXPECTED = [
    HEADER.split(","),
    # stage 1, dlg-1: source GPT-2 before Human (str order), candidate 1 before 2,
    # Expert before Layperson.
    [S1, "dlg-1", "GPT-2", cand(S1, 1, 1), "Expert", "2", "2", "coherent", "", "2.5"],
    [S1, "dlg-1", "GPT-2", cand(S1, 1, 1), "Layperson", "3", "1", "incoherent", "malformed", "3.0"],
    [S1, "dlg-1", "GPT-2", cand(S1, 2, 1), "Expert", "2", "0", "incoherent", "off_topic", ""],
    [
        S1,
        "dlg-1",
        "GPT-2",
        cand(S1, 2, 1),
        "Layperson",
        "3",
        "1",
        "incoherent",
        "no_majority",
        "2.0",
    ],
    [S1, "dlg-1", "Human", H1, "Expert", "2", "1", "no majority", "", "5.0"],
    [S1, "dlg-1", "Human", H1, "Layperson", "3", "2", "coherent", "", "4.5"],
    # dlg-2: one rater, no majority.
    [S1, "dlg-2", "GPT-2", cand(S1, 1, 2), "Expert", "1", "0", "no majority", "", ""],
    [S1, "dlg-2", "GPT-2", cand(S1, 2, 2), "Expert", "1", "1", "no majority", "", "3.0"],
    [S1, "dlg-2", "Human", H2, "Expert", "1", "1", "no majority", "", "2.0"],
]
# No stage here asks for descriptions: n_descriptions is 0 on every row.
EXPECTED = [EXPECTED[0], *([*row, "0"] for row in EXPECTED[1:])]


def export(tmp_path, *args) -> list[list[str]]:
    out = tmp_path / "items.csv"
    call_command("export_items", *args, "--out", str(out))
    raw = out.read_bytes()
    assert raw.startswith((HEADER + "\r\n").encode())  # RFC 4180 line ends, no BOM
    assert not (tmp_path / "items.csv.partial").exists()
    return rows_of(raw.decode("utf-8"))


def test_columns_come_in_the_issues_order():
    assert ",".join(COLUMNS) == HEADER


def test_one_row_per_stage_item_and_group_in_the_issues_order(judged, tmp_path):
    # The expired batch (stage 2) is left out, as by the analysis.
    assert export(tmp_path, "pilot") == EXPECTED


def test_expired_batches_on_request(judged, tmp_path):
    rows = export(tmp_path, "pilot", "--include-expired")
    assert rows[: len(EXPECTED)] == EXPECTED
    assert rows[len(EXPECTED) :] == [
        [
            S2,
            "dlg-1",
            "GPT-3",
            cand(S2, 1, 1),
            "Layperson",
            "1",
            "1",
            "no majority",
            "",
            "1.0",
            "0",
        ],
        [
            S2,
            "dlg-1",
            "GPT-3",
            cand(S2, 2, 1),
            "Layperson",
            "1",
            "1",
            "no majority",
            "",
            "1.0",
            "0",
        ],
        [S2, "dlg-1", "Human", H1, "Layperson", "1", "1", "no majority", "", "1.0", "0"],
    ]


def test_an_excluded_source_is_left_out(judged, tmp_path):
    rows = export(tmp_path, "pilot", "--exclude-source", "GPT-2")
    assert rows == [EXPECTED[0]] + [row for row in EXPECTED[1:] if row[2] != "GPT-2"]


def test_a_study_without_judgements_gives_the_header_only(loaded_study, tmp_path):
    assert export(tmp_path, "pilot") == [HEADER.split(",")]


def test_the_rows_are_the_reports_items(judged, tmp_path):
    """The same judgements as the analysis: its item counts per group and stage."""
    from analysis.services import analysis_run_compute

    report = analysis_run_compute(study=judged, parameters={"bootstrap_resamples": 0}).result
    rows = export(tmp_path, "pilot")[1:]
    for group in ("Expert", "Layperson"):
        stage = report["groups"][group]["stages"][S1]
        mine = [row for row in rows if row[4] == group]
        assert len(mine) == stage["n_items_total"]
        assert sum(int(row[5]) for row in mine) == stage["n_judgements"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], 'No study with slug "nope".'),
        (
            ["pilot", "--exclude-source", "BART"],
            "Not a source of this study: BART (it has: ",
        ),
    ],
)
def test_bad_input_is_refused_with_a_message_and_writes_nothing(judged, tmp_path, args, message):
    out = tmp_path / "items.csv"
    with pytest.raises(CommandError) as exc_info:
        call_command("export_items", *args, "--out", str(out))
    assert message in str(exc_info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_directory_is_refused(judged, tmp_path):
    with pytest.raises(CommandError, match="no directory"):
        call_command("export_items", "pilot", "--out", str(tmp_path / "no" / "items.csv"))


# --- the dashboard download (the admin's export page links to it) ---------------------------


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def items_url(study) -> str:
    return reverse("analysis:items_csv", args=[study.slug])


def body(response) -> str:
    return b"".join(response.streaming_content).decode("utf-8")


def test_the_download_streams_the_same_file(judged, staff_client):
    response = staff_client.get(items_url(judged))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="pilot-items.csv"'
    assert rows_of(body(response)) == EXPECTED


def test_the_download_as_typed_files(judged, staff_client, tmp_path):
    response = staff_client.get(items_url(judged), {"file": "parquet"})
    assert response["Content-Disposition"] == 'attachment; filename="pilot-items.parquet"'
    frame = parquet_frame(b"".join(response.streaming_content))
    assert_same_as_csv(frame, EXPECTED)
    assert str(frame["n_raters"].dtype) == "int64[pyarrow]"
    assert str(frame["coherence_score"].dtype) == "double[pyarrow]"
    target = tmp_path / "items.jsonl"
    call_command(
        "export_items", "pilot", "--file", "jsonl", "--out", str(target), stdout=io.StringIO()
    )
    assert_same_as_csv(jsonl_frame(target.read_text(encoding="utf-8")), EXPECTED)


def test_the_download_takes_the_analysis_parameters(judged, staff_client):
    response = staff_client.get(
        items_url(judged), {"exclude_source": "GPT-2", "include_expired": "1"}
    )
    sources = {row[2] for row in rows_of(body(response))[1:]}
    assert sources == {"Human", "GPT-3"}


def test_the_download_refuses_an_unknown_source(judged, staff_client):
    response = staff_client.get(items_url(judged), {"exclude_source": "BART"})
    assert response.status_code == 400
    assert response.content.decode().startswith(
        "Nothing exported:\nexclude_source: Not a source of this study: BART"
    )


def test_the_api_names_the_parameter_it_refuses(judged, staff_client):
    """The error names the query parameter the client sent, not the analysis's own
    name for it."""
    response = staff_client.get(f"/api/studies/{judged.slug}/items/", {"exclude_source": "BART"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert body["errors"] == {
        "exclude_source": ["Not a source of this study: BART (it has: GPT-2, GPT-3, Human)."]
    }


def test_the_download_refuses_a_flag_that_is_neither_yes_nor_no(judged, staff_client):
    response = staff_client.get(items_url(judged), {"include_expired": "maybe"})
    assert response.status_code == 400
    assert response.content.decode() == "Nothing exported:\ninclude_expired: Use true or false."
    assert "attachment" not in response.get("Content-Disposition", "")


def test_the_download_of_an_unknown_study_is_404(staff_client, db):
    assert staff_client.get(reverse("analysis:items_csv", args=["nope"])).status_code == 404


def test_the_admin_export_page_offers_the_item_export(judged, staff_client):
    page = staff_client.get(reverse("admin:studies_study_export", args=[judged.pk]))
    html = page.content.decode()
    assert f'action="{items_url(judged)}"' in html
    assert 'name="exclude_source" value="GPT-2"' in html
    # Attention checks never count, so there is nothing to leave out: not offered.
    check = Reflection.objects.filter(
        context__study=judged, kind=Reflection.Kind.ATTENTION_CHECK
    ).values_list("source", flat=True)[0]
    assert f'name="exclude_source" value="{check}"' not in html
    assert f'name="source" value="{check}"' in html  # the published export's filter


def test_the_dashboard_links_the_item_export_with_the_reports_parameters(judged, staff_client):
    from analysis.services import analysis_run_compute

    analysis_run_compute(
        study=judged,
        parameters={
            "excluded_sources": ["GPT-3"],
            "include_expired": True,
            "bootstrap_resamples": 0,
        },
    )
    html = staff_client.get(reverse("analysis:dashboard", args=[judged.slug])).content.decode()
    assert f'href="{items_url(judged)}?exclude_source=GPT-3&amp;include_expired=1"' in html


#: Who may download rows of judgements: roles that may read rows, not those that only
#: see the aggregates, code, or have no role in the study.
ROW_READERS = {Role.OWNER: 200, Role.COLLABORATOR: 200, Role.ANALYST: 200}


@pytest.mark.parametrize("role", [*Role.values, None])
def test_the_download_needs_a_role_that_may_read_rows(judged, client, role):
    user = user_with_role(judged, role) if role else StaffMemberFactory()
    client.force_login(user)
    status = ROW_READERS.get(role, 404 if role is None else 403)
    assert client.get(items_url(judged)).status_code == status
    # The same answer as the annotation export's.
    export = reverse("studies:export", args=[judged.slug])
    assert client.get(export).status_code == status


def test_anonymous_visitors_are_sent_to_the_login(judged, client):
    response = client.get(items_url(judged))
    assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))


# --- the API ------------------------------------------------------------------------------------


def api_url(study) -> str:
    return reverse("api:item-export", args=[study.slug])


def token_client(client, user):
    token = Token.objects.create(user=user)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token.key}"
    return client


def test_the_api_streams_the_same_file(judged, client):
    api = token_client(client, StaffUserFactory())
    response = api.get(api_url(judged), {"include_expired": "false"})
    assert response.status_code == 200 and response.streaming
    assert rows_of(body(response)) == EXPECTED


def test_the_api_takes_the_analysis_parameters(judged, client):
    api = token_client(client, StaffUserFactory())
    response = api.get(api_url(judged), {"exclude_source": ["GPT-2", "GPT-3"]})
    assert {row[2] for row in rows_of(body(response))[1:]} == {"Human"}


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"exclude_source": "BART"}, "exclude_source", "Not a source of this study: BART"),
        ({"include_expired": "maybe"}, "include_expired", "Must be a valid boolean."),
    ],
)
def test_the_api_refuses_bad_input_with_a_message(judged, client, query, field, message):
    api = token_client(client, StaffUserFactory())
    response = api.get(api_url(judged), query)
    assert response.status_code == 400
    assert message in response.json()["errors"][field][0]


def test_the_api_answers_404_for_an_unknown_study(judged, client):
    api = token_client(client, StaffUserFactory())
    assert api.get(reverse("api:item-export", args=["nope"])).status_code == 404


@pytest.mark.parametrize("role", [*Role.values, None])
def test_the_api_needs_a_role_that_may_read_rows(judged, client, role):
    user = user_with_role(judged, role) if role else staff_with_every_permission()
    api = token_client(client, user)
    status = ROW_READERS.get(role, 403)  # without any role: not an API user at all
    assert api.get(api_url(judged)).status_code == status
    # The same answer as the annotation export's.
    assert api.get(reverse("api:annotation-export", args=[judged.slug])).status_code == status


def test_the_api_needs_credentials(judged, client):
    assert client.get(api_url(judged)).status_code == 401


def test_n_descriptions_counts_the_group_s_described_answers(loaded_study, tmp_path):
    Stage.objects.filter(study=loaded_study, position=1).update(no_answer="both")
    said = "It claims the client lost the job; he never said so."

    def described(*categories):
        return Answer(coherent=False, categories=frozenset(categories), description=said)

    judge(
        loaded_study,
        "Expert",
        1,
        "dlg-2",
        [
            {HUMAN: yes(4), CAND1: described("malformed"), CAND2: described("off_topic")},
            {HUMAN: yes(5), CAND1: described("malformed"), CAND2: no("off_topic")},
        ],
    )
    rows = {(r[2], r[3]): r for r in export(tmp_path, "pilot")[1:]}
    assert rows["GPT-2", cand(S1, 1, 2)][-1] == "2"
    assert rows["GPT-2", cand(S1, 2, 2)][-1] == "1"
    assert rows["Human", H2][-1] == "0"


# --- the kinds of file: CSV exact, spreadsheet-safe CSV, Excel workbook ---------------------


def sheet_rows(data: bytes) -> list[list[str]]:
    """The workbook's cells as text (empty cells: ""), and that every cell is text."""
    workbook = load_workbook(io.BytesIO(data))
    assert workbook.sheetnames == ["items"]
    rows = [list(row) for row in workbook.active.iter_rows(values_only=True)]
    assert all(cell is None or isinstance(cell, str) for row in rows for cell in row)
    return [["" if cell is None else cell for cell in row] for row in rows]


def test_the_command_writes_the_same_rows_as_a_workbook(judged, tmp_path):
    out = tmp_path / "items.xlsx"
    call_command("export_items", "pilot", "--file", "xlsx", "--out", str(out))
    assert sheet_rows(out.read_bytes()) == EXPECTED
    assert [path.name for path in tmp_path.iterdir()] == ["items.xlsx"]


def test_the_command_refuses_an_unknown_kind_of_file(judged, tmp_path):
    with pytest.raises(CommandError, match="invalid choice: 'ods'"):
        call_command("export_items", "pilot", "--file", "ods", "--out", str(tmp_path / "x"))
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def formula_text(judged):
    """The human reflection of dlg-2 starts with "=", as a formula would."""
    text = "=1+1 sounds like a hard week."
    Reflection.objects.filter(text=H2).update(text=text)
    return text


def test_texts_are_exact_in_the_csv_and_escaped_in_the_spreadsheet_safe_one(
    formula_text, staff_client
):
    def reflections(file: str) -> set[str]:
        response = staff_client.get(items_url(Study.objects.get()), {"file": file})
        return {row[3] for row in rows_of(body(response))[1:]}

    assert formula_text in reflections("csv")
    safe = reflections("csv-spreadsheet-safe")
    assert "'" + formula_text in safe and formula_text not in safe
    # Only texts are escaped: the counts and scores are the plain CSV's.
    plain, escaped = (
        rows_of(body(staff_client.get(items_url(Study.objects.get()), {"file": file})))
        for file in ("csv", "csv-spreadsheet-safe")
    )
    assert [row[5:] for row in plain] == [row[5:] for row in escaped]


def test_the_download_as_a_workbook(formula_text, staff_client):
    response = staff_client.get(items_url(Study.objects.get()), {"file": "xlsx"})
    assert response.status_code == 200
    assert response["Content-Type"] == XLSX_CONTENT_TYPE
    assert 'filename="pilot-items.xlsx"' in response["Content-Disposition"]
    rows = sheet_rows(b"".join(response.streaming_content))
    assert formula_text in {row[3] for row in rows}  # a text cell, never evaluated
    assert len(rows) == len(EXPECTED)


def test_the_download_refuses_an_unknown_kind_of_file(judged, staff_client):
    response = staff_client.get(items_url(judged), {"file": "ods"})
    assert response.status_code == 400
    assert response.content.decode() == (
        'Nothing exported:\nfile: Choose "csv", "csv-spreadsheet-safe", "xlsx", "jsonl" or "parquet", not "ods".'
    )


def test_the_api_sends_the_workbook_and_refuses_an_unknown_kind_of_file(judged, client):
    api = token_client(client, StaffUserFactory())
    response = api.get(api_url(judged), {"file": "xlsx"})
    assert response.status_code == 200
    assert sheet_rows(b"".join(response.streaming_content)) == EXPECTED
    response = api.get(api_url(judged), {"file": "ods"})
    assert response.status_code == 400
    assert response.json()["errors"]["file"][0].startswith('Choose "csv"')
