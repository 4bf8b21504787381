"""Write endpoints: importing materials, starting an analysis, rejecting an
assignment. Every bad input gets a 400 with a message and field errors, and writes
nothing."""

import json
from unittest import mock

import pytest

from analysis.models import AnalysisRun
from analysis.services import analysis_run_execute
from studies.errors import ErrorCode
from studies.limits import GENERATION_MAX_LENGTH
from studies.models import Assignment, Batch, BatchItem, DialogueContext, Judgement, Reflection
from tests.conftest import materials_doc


def materials_snapshot() -> tuple:
    return (
        sorted(DialogueContext.objects.values_list("pk", "external_id", "turns")),
        sorted(Reflection.objects.values_list("pk", "text", "generation")),
        sorted(Batch.objects.values_list("pk", "stage_id", "context_id")),
        sorted(BatchItem.objects.values_list("batch_id", "reflection_id", "position")),
    )


def post(api, url: str, body) -> object:
    content = body if isinstance(body, str | bytes) else json.dumps(body)
    return api.post(url, content, content_type="application/json")


def assert_400(response, code: ErrorCode = ErrorCode.INVALID) -> dict:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == code, body
    assert body["message"] and isinstance(body["errors"], dict)
    return body


# --- materials -------------------------------------------------------------------------------


def test_posting_materials_imports_them_and_reports_counts(api, loaded_study):
    response = post(api, "/api/studies/pilot/materials/", materials_doc(n_contexts=4))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["changed"] is True
    assert (body["contexts_created"], body["batches_created"]) == (1, 2)
    assert body["reflections_created"] == 1 + 4 + body["attention_checks_generated"]
    assert body["message"].startswith("1 contexts")
    context = DialogueContext.objects.get(study=loaded_study, external_id="dlg-4")
    assert context.batches.count() == 2


def test_posting_the_same_materials_again_changes_nothing(api, loaded_study):
    before = materials_snapshot()
    response = post(api, "/api/studies/pilot/materials/", materials_doc())
    assert response.status_code == 200
    assert response.json()["changed"] is False
    assert response.json()["message"].startswith("Nothing to import")
    assert materials_snapshot() == before


def test_posting_a_pool_adds_candidates_in_no_stage(api, loaded_study):
    from studies.models import PoolCandidate

    doc = materials_doc(n_contexts=4, stages=())
    for context in doc["contexts"]:
        context["synthetic"] = [
            {"source": "GPT-4", "text": text, "generation": {"decoding": decoding}}
            for text, decoding in (("A.", "greedy"), ("A.", "beam"), ("B.", "greedy"))
        ]
    before = materials_snapshot()[2:]
    response = post(api, "/api/studies/pilot/materials/?pool=true", doc)
    assert response.status_code == 201, response.content
    assert response.json()["pool_candidates_created"] == 12
    assert PoolCandidate.objects.filter(context__study=loaded_study).count() == 12
    assert materials_snapshot()[2:] == before  # no batch, no batch item


def test_a_bad_pool_flag_is_refused_and_nothing_written(api, loaded_study):
    before = materials_snapshot()
    body = assert_400(post(api, "/api/studies/pilot/materials/?pool=yes", materials_doc(4)))
    assert body["errors"] == {"pool": ["pool is true or false, not 'yes'."]}
    assert materials_snapshot() == before


def test_materials_with_problems_list_every_issue_and_write_nothing(api, loaded_study):
    doc = materials_doc(n_contexts=5)
    doc["contexts"][3]["synthetic"][0]["stage"] = "GPT-9 stage"
    doc["contexts"][4]["human_reflection"] = ""
    before = materials_snapshot()
    body = assert_400(post(api, "/api/studies/pilot/materials/", doc))
    assert body["message"] == "Nothing was imported: the document has 2 problem(s)."
    assert body["errors"] == {
        "materials": [f"{i['where']}: {i['message']}" for i in body["issues"]]
    }
    wheres = [issue["where"] for issue in body["issues"]]
    assert wheres == [
        "contexts[3] (id \"dlg-4\"), synthetic[0], field 'stage'",
        "contexts[4] (id \"dlg-5\"), field 'human_reflection'",
    ]
    assert "unknown stage 'GPT-9 stage'" in body["issues"][0]["message"]
    assert materials_snapshot() == before


def test_a_long_problem_list_is_capped_as_everywhere_else(api, loaded_study):
    from studies.datafiles import MAX_REPORTED_PROBLEMS

    doc = {"contexts": [{"id": f"new-{n}"} for n in range(40)]}  # three problems each
    before = materials_snapshot()
    body = assert_400(post(api, "/api/studies/pilot/materials/", doc))
    assert body["message"] == "Nothing was imported: the document has 120 problem(s)."
    assert len(body["issues"]) == MAX_REPORTED_PROBLEMS
    assert body["errors"]["materials"][:-1] == [
        f"{i['where']}: {i['message']}" for i in body["issues"]
    ]
    assert body["errors"]["materials"][-1] == f"... and {120 - MAX_REPORTED_PROBLEMS} more"
    assert materials_snapshot() == before


def test_a_failure_while_writing_rolls_back_what_was_written_before(api, small_study):
    """dlg-9 comes first and would be created; then dlg-1's stage-1 batch, which an
    annotator already has, would change. Nothing may stay."""
    doc = materials_doc(n_contexts=1)
    changed = doc["contexts"][0]
    changed["synthetic"][0]["text"] = "A different candidate."
    new = materials_doc(n_contexts=1)["contexts"][0] | {"id": "dlg-9"}
    new["human_reflection"] = "Something else entirely."
    new["synthetic"] = [dict(s, text=s["text"] + " (9)") for s in new["synthetic"]]
    before = materials_snapshot()
    body = assert_400(post(api, "/api/studies/pilot/materials/", {"contexts": [new, changed]}))
    assert "already has annotators" in body["errors"]["materials"][0]
    assert materials_snapshot() == before
    assert not DialogueContext.objects.filter(external_id="dlg-9").exists()


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"contexts": [', "line 1, column 15: invalid JSON"),
        ("[1, 2]", 'file: expected an object with a "contexts" list'),
        ('{"contexts": [{"id": "x", "turns": [], "p": NaN}]}', "NaN and Infinity"),
        ("", "invalid JSON"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_unreadable_materials_are_400_with_the_importers_words(
    api, loaded_study, content, expected
):
    before = materials_snapshot()
    body = assert_400(post(api, "/api/studies/pilot/materials/", content))
    assert expected in body["errors"]["materials"][0]
    assert materials_snapshot() == before


def test_materials_must_be_sent_as_json(api, loaded_study):
    response = api.post("/api/studies/pilot/materials/", "a,b\n1,2\n", content_type="text/csv")
    assert response.status_code == 415
    assert response.json() == {
        "message": 'Unsupported media type "text/csv" in request.',
        "code": "unsupported_media_type",
    }


def test_materials_for_a_study_without_stages_are_refused(api, db):
    from studies.services import study_create

    study_create(slug="empty", title="Empty")
    body = assert_400(post(api, "/api/studies/empty/materials/", materials_doc()))
    assert any("has no stages" in e for e in body["errors"]["materials"])
    assert not DialogueContext.objects.exists()


# --- rejecting an assignment ------------------------------------------------------------------


@pytest.fixture
def submitted(small_study) -> Assignment:
    return Assignment.objects.get(status=Assignment.Status.SUBMITTED)


def test_rejecting_an_assignment_frees_its_slot_and_keeps_its_answers(api, staff, submitted):
    response = post(api, f"/api/assignments/{submitted.pk}/reject/", {"reason": " Too fast. "})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["id"], body["status"], body["rejection_reason"]) == (
        submitted.pk,
        "rejected",
        "Too fast.",
    )
    assert body["annotator"] == "Layperson 1"
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.REJECTED
    assert submitted.rejected_by == staff
    assert Judgement.objects.filter(assignment=submitted).count() == len(submitted.order)


def _assignment_row(assignment: Assignment) -> tuple:
    return Assignment.objects.filter(pk=assignment.pk).values_list(
        "status", "rejection_reason", "rejected_at", "rejected_by"
    )[0]


@pytest.mark.parametrize(
    "body, errors, message",
    [
        (
            {"reason": "   "},
            {"reason": ["Give a reason for the rejection."]},
            "reason: Give a reason for the rejection.",
        ),
        ({}, {"reason": ["This field is required."]}, "reason: This field is required."),
        ({"reason": ["a"]}, {"reason": ["Not a valid string."]}, "reason: Not a valid string."),
        ({"reason": "a\x00b"}, {"reason": ["Null characters are not allowed."]}, None),
        (
            ["reason"],
            {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]},
            "Invalid data. Expected a dictionary, but got list.",
        ),
    ],
)
def test_a_rejection_without_a_usable_reason_is_400_and_changes_nothing(
    api, submitted, body, errors, message
):
    before = _assignment_row(submitted)
    response = assert_400(post(api, f"/api/assignments/{submitted.pk}/reject/", body))
    assert response["errors"] == errors
    if message:
        assert response["message"] == message
    assert _assignment_row(submitted) == before


def test_work_that_is_no_longer_active_cannot_be_rejected(api, submitted):
    post(api, f"/api/assignments/{submitted.pk}/reject/", {"reason": "First."})
    before = _assignment_row(submitted)
    body = assert_400(post(api, f"/api/assignments/{submitted.pk}/reject/", {"reason": "Again."}))
    message = "Only assigned, in-progress or submitted work can be rejected; this one is rejected."
    assert body == {
        "message": message,
        "code": "invalid",
        "errors": {"non_field_errors": [message]},
    }
    assert _assignment_row(submitted) == before


def test_malformed_json_is_a_400(api, submitted):
    body = assert_400(
        post(api, f"/api/assignments/{submitted.pk}/reject/", '{"reason": '), ErrorCode.PARSE_ERROR
    )
    assert body["message"].startswith("JSON parse error")


# --- analysis runs ----------------------------------------------------------------------------


def test_an_analysis_excluding_a_source_the_study_lacks_is_refused(api, staff, small_study):
    with mock.patch("analysis.tasks.analysis_run_task.apply_async") as apply_async:
        response = post(api, "/api/studies/pilot/analysis-runs/", {"excluded_sources": ["BART"]})
    assert response.status_code == 400
    assert response.json()["code"] == ErrorCode.INVALID
    assert response.json()["errors"] == {
        "excluded_sources": ["Not a source of this study: BART (it has: GPT-2, GPT-3, Human)."]
    }
    assert not AnalysisRun.objects.exists()
    apply_async.assert_not_called()


def test_crossing_a_setting_the_study_lacks_is_refused(api, staff, small_study):
    with mock.patch("analysis.tasks.analysis_run_task.apply_async") as apply_async:
        response = post(
            api, "/api/studies/pilot/analysis-runs/", {"crossed_settings": ["model", "p"]}
        )
        repeated = post(
            api, "/api/studies/pilot/analysis-runs/", {"crossed_settings": ["model", "model"]}
        )
    assert response.status_code == repeated.status_code == 400
    assert response.json()["errors"] == {
        "crossed_settings": [
            "Not a generation setting of this study's reflections: p (they carry: decoding, "
            "generated, model, taken_from_dialogue)."
        ]
    }
    assert repeated.json()["errors"] == {"crossed_settings": ["Name each setting once."]}
    assert not AnalysisRun.objects.exists()
    apply_async.assert_not_called()


def test_starting_an_analysis_queues_one_run_with_cleaned_parameters(
    api, staff, small_study, django_capture_on_commit_callbacks
):
    with (
        mock.patch("analysis.tasks.analysis_run_task.apply_async") as apply_async,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = post(
            api,
            "/api/studies/pilot/analysis-runs/",
            {
                "excluded_sources": ["GPT-3", "GPT-2", "GPT-3"],
                "bootstrap_resamples": 0,
                "seed": 7,
            },
        )
    assert response.status_code == 202, response.content
    run = AnalysisRun.objects.get()
    assert response["Location"] == f"/api/analysis-runs/{run.pk}/"
    assert response.json()["id"] == run.pk and response.json()["status"] == "queued"
    assert run.parameters == {
        "excluded_sources": ["GPT-2", "GPT-3"],
        "include_expired": False,
        "bootstrap_resamples": 0,
        "seed": 7,
        "fast_seconds": 3.0,
        "agreement_floor": 0.5,
        "crossed_settings": [],
    }
    assert (run.trigger, run.requested_by) == (AnalysisRun.Trigger.MANUAL, staff)
    apply_async.assert_called_once()
    assert apply_async.call_args.args[0] == (run.pk,)

    # What the worker does; then the report is there to read.
    analysis_run_execute(run_id=run.pk)
    detail = api.get(response["Location"]).json()
    assert detail["status"] == "done"
    assert detail["result"]["parameters"]["excluded_sources"] == ["GPT-2", "GPT-3"]


def test_an_analysis_without_parameters_uses_the_defaults(api, small_study):
    assert post(api, "/api/studies/pilot/analysis-runs/", {}).status_code == 202
    assert AnalysisRun.objects.get().parameters == {
        "excluded_sources": [],
        "include_expired": False,
        "bootstrap_resamples": 1000,
        "seed": 0,
        "fast_seconds": 3.0,
        "agreement_floor": 0.5,
        "crossed_settings": [],
    }


@pytest.mark.parametrize(
    "body, field, message",
    [
        ({"seed": -1}, "seed", "Ensure this value is greater than or equal to 0."),
        ({"seed": 2.5}, "seed", "A valid integer is required."),
        (
            {"bootstrap_resamples": 10_001},
            "bootstrap_resamples",
            "Ensure this value is less than or equal to 10000.",
        ),
        ({"include_expired": "maybe"}, "include_expired", "Must be a valid boolean."),
        (
            {"excluded_sources": "BART"},
            "excluded_sources",
            'Expected a list of items but got type "str".',
        ),
        ({"alpha": 0.05}, "parameters", "Unknown parameters: alpha."),
        ([1], "non_field_errors", "Invalid data. Expected a dictionary, but got list."),
    ],
)
def test_bad_analysis_parameters_are_400_and_queue_nothing(api, small_study, body, field, message):
    response = assert_400(post(api, "/api/studies/pilot/analysis-runs/", body))
    assert response["errors"][field] == [message]
    assert not AnalysisRun.objects.exists()


def test_materials_with_oversized_generation_metadata_name_the_reflection_and_write_nothing(
    api, loaded_study
):
    doc = materials_doc(n_contexts=4)
    doc["contexts"][3]["synthetic"][1]["generation"] = {"model": "x" * 5_000_000}  # 5 MB
    before = materials_snapshot()
    body = assert_400(post(api, "/api/studies/pilot/materials/", doc))
    (issue,) = body["issues"]
    assert issue["where"] == "contexts[3] (id \"dlg-4\"), synthetic[1], field 'generation'"
    assert issue["message"].startswith(
        f"is 5,000,012 characters as JSON, more than the {GENERATION_MAX_LENGTH:,} allowed"
    )
    assert materials_snapshot() == before
