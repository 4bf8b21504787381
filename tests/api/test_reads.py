"""Read endpoints: what they return, filters, pagination, query counts, and that no
personal data ever leaves through them."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from analysis.models import AnalysisRun
from studies.datafiles.materials import materials_import
from studies.models import Annotator, Assignment, Batch, Judgement, Reflection, StageGroupWait
from studies.services import study_create
from tests.conftest import materials_doc

from .conftest import PERSONAL


def judgement_ids(api, url: str) -> list[int]:
    """Follow the cursor from ``url`` to the end; every id seen, in order."""
    ids = []
    pages = 0
    while url:
        response = api.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        assert set(body) == {"next", "previous", "results"}
        ids += [row["id"] for row in body["results"]]
        url = body["next"]
        pages += 1
        assert pages < 100
    return ids


def test_study_list_and_detail_show_the_protocol_configuration(api, api_study):
    listing = api.get("/api/studies/").json()
    assert listing["count"] == 1
    assert listing["results"][0]["slug"] == "pilot"

    detail = api.get("/api/studies/pilot/").json()
    assert detail["status"] == "open"
    assert (detail["overlap_k"], detail["batches_per_stage"]) == (2, 5)
    assert detail["batch_time_limit_seconds"] == 1800
    assert [s["name"] for s in detail["stages"]] == ["GPT-2 stage", "GPT-3 stage"]
    assert [s["position"] for s in detail["stages"]] == [1, 2]
    assert detail["stages"][1]["min_wait_seconds"] == 3 * 24 * 3600
    # Each stage's k and m (the study's unless its own), groups taking part (none
    # listed: every group) and groups' own waits.
    assert [(s["overlap_k"], s["batches_per_stage"]) for s in detail["stages"]] == [
        (2, 5),
        (2, 5),
    ]
    assert [(s["groups"], s["group_waits"]) for s in detail["stages"]] == [([], []), ([], [])]
    assert [g["name"] for g in detail["groups"]] == ["Expert", "Layperson"]
    assert [c["slug"] for c in detail["categories"]] == [
        "malformed",
        "dialogue_contradicting",
        "parroting",
        "off_topic",
        "on_topic_but_unverifiable",
    ]


def test_a_stages_own_groups_k_m_and_waits_are_listed(api, api_study):
    stage = api_study.stages.get(position=2)
    expert = api_study.groups.get(name="Expert")
    stage.groups.set([expert])
    stage.overlap_k, stage.batches_per_stage = 1, 2
    stage.save()
    StageGroupWait.objects.create(stage=stage, group=expert, min_wait=timedelta(hours=2))
    second = api.get("/api/studies/pilot/stages/").json()[1]
    assert (second["overlap_k"], second["batches_per_stage"], second["groups"]) == (
        1,
        2,
        [expert.pk],
    )
    assert second["group_waits"] == [{"group": expert.pk, "min_wait_seconds": 7200.0}]
    assert api.get("/api/studies/pilot/").json()["stages"][1]["groups"] == [expert.pk]
    progress = api.get("/api/studies/pilot/progress/").json()["stages"][1]
    assert (progress["k"], progress["m"]) == (1, 2)
    cells = {g["name"]: g for g in progress["groups"]}
    assert (cells["Layperson"]["takes_part"], cells["Layperson"]["slots"]) == (False, 0)
    assert (cells["Expert"]["takes_part"], cells["Expert"]["slots"]) == (True, 3)


def test_stages_and_groups_are_plain_lists(api, api_study):
    stages = api.get("/api/studies/pilot/stages/").json()
    assert [s["name"] for s in stages] == ["GPT-2 stage", "GPT-3 stage"]
    groups = api.get("/api/studies/pilot/groups/").json()
    assert [g["pseudonym_prefix"] for g in groups] == ["Expert", "Layperson"]


def test_contexts_come_with_all_their_reflections(api, api_study):
    body = api.get("/api/studies/pilot/contexts/").json()
    assert body["count"] == 3
    first = body["results"][0]
    assert first["external_id"] == "dlg-1"
    assert first["turns"][0] == {"role": "therapist", "text": "What brings you here today (1)?"}
    kinds = sorted(r["kind"] for r in first["reflections"])
    assert kinds == ["attention_check", "human", "synthetic", "synthetic", "synthetic", "synthetic"]
    assert {r["source"] for r in first["reflections"]} == {
        "Human",
        "GPT-2",
        "GPT-3",
        "Attention check",
    }
    gpt2 = next(r for r in first["reflections"] if r["source"] == "GPT-2")
    assert gpt2["generation"] == {"model": "gpt-2", "decoding": "greedy"}


def test_contexts_take_a_fixed_number_of_queries(api, api_study, django_assert_num_queries):
    # token, study, count, page, reflections of the page
    with django_assert_num_queries(5):
        response = api.get("/api/studies/pilot/contexts/?page_size=2")
    assert len(response.json()["results"]) == 2


def test_contexts_are_paginated_by_page_number(api, api_study):
    first = api.get("/api/studies/pilot/contexts/?page_size=2").json()
    assert first["next"].endswith("/api/studies/pilot/contexts/?page=2&page_size=2")
    second = api.get(first["next"]).json()
    ids = [c["external_id"] for c in first["results"] + second["results"]]
    assert ids == ["dlg-1", "dlg-2", "dlg-3"]
    assert second["next"] is None


def test_batches_list_reflection_ids_in_batch_order_and_filter_by_stage(api, api_study):
    body = api.get("/api/studies/pilot/batches/").json()
    assert body["count"] == 6
    for row in body["results"]:
        batch = Batch.objects.get(pk=row["id"])
        assert row["reflections"] == list(
            batch.items.order_by("position").values_list("reflection_id", flat=True)
        )
        assert row["context"] == batch.context.external_id
    stage2 = api_study.stages.get(position=2)
    filtered = api.get(f"/api/studies/pilot/batches/?stage={stage2.pk}").json()
    assert filtered["count"] == 3
    assert {row["stage"] for row in filtered["results"]} == {stage2.pk}


def test_assignments_show_pseudonyms_statuses_and_filter(api, api_study):
    body = api.get("/api/studies/pilot/assignments/?page_size=100").json()
    assert body["count"] == 17
    rejected = [row for row in body["results"] if row["status"] == "rejected"]
    assert len(rejected) == 1
    assert rejected[0]["annotator"] == "Expert 2"
    assert rejected[0]["rejection_reason"] == "Answered in 3 seconds."
    assert rejected[0]["rejected_at"] is not None
    expert = api_study.groups.get(name="Expert")
    stage2 = api_study.stages.get(position=2)
    lay_stage2 = [
        row
        for row in body["results"]
        if row["annotator"] == "Layperson 1" and row["stage"] == stage2.pk
    ]
    assert len(lay_stage2) == 3 and all(row["is_recurring"] for row in lay_stage2)

    filtered = api.get(
        f"/api/studies/pilot/assignments/?group={expert.pk}&stage={stage2.pk}"
        "&status=in_progress&status=rejected"
    ).json()
    assert sorted(row["status"] for row in filtered["results"]) == ["in_progress", "rejected"]
    only_submitted = api.get("/api/studies/pilot/assignments/?status=submitted").json()
    assert only_submitted["count"] == 15


def test_judgements_cursor_walks_every_submitted_judgement_exactly_once(api, api_study):
    ids = judgement_ids(api, "/api/studies/pilot/judgements/?page_size=7")
    expected = list(
        Judgement.objects.filter(
            assignment__stage__study=api_study, assignment__status=Assignment.Status.SUBMITTED
        )
        .order_by("id")
        .values_list("id", flat=True)
    )
    assert len(expected) == 15 * 4
    assert ids == expected


def test_judgements_cursor_pages_go_back_too(api, api_study):
    first = api.get("/api/studies/pilot/judgements/?page_size=5").json()
    second = api.get(first["next"]).json()
    back = api.get(second["previous"]).json()
    assert [r["id"] for r in back["results"]] == [r["id"] for r in first["results"]]


def test_judgements_show_the_answer_with_category_slugs(api, api_study):
    rows = api.get("/api/studies/pilot/judgements/?page_size=1000").json()["results"]
    incoherent = [r for r in rows if r["kind"] == "synthetic" and not r["coherent"]]
    assert incoherent
    for row in incoherent:
        assert row["categories"] == ["malformed", "parroting"]  # display order
        assert row["most_evident"] == "parroting"
        assert row["empathy"] is None
    coherent = [r for r in rows if r["coherent"]]
    assert coherent and all(r["categories"] == [] and r["most_evident"] is None for r in coherent)
    assert all(1 <= r["empathy"] <= 5 for r in coherent)
    attention = [r for r in rows if r["kind"] == "attention_check"]
    assert attention and all(r["categories"] == ["off_topic"] for r in attention)
    row = rows[0]
    judgement = Judgement.objects.select_related("assignment__annotator", "reflection").get(
        pk=row["id"]
    )
    assert row["annotator"] == judgement.assignment.annotator.pseudonym
    assert row["reflection"] == judgement.reflection_id
    assert row["source"] == judgement.reflection.source
    assert row["stage"] == judgement.assignment.stage_id
    assert row["group"] == judgement.assignment.group_id
    assert row["assignment"] == judgement.assignment_id


def test_judgements_take_a_fixed_number_of_queries(api, api_study, django_assert_num_queries):
    # token, study, categories, page (joined), the page's Likert ratings (prefetched)
    with django_assert_num_queries(5):
        response = api.get("/api/studies/pilot/judgements/?page_size=50")
    assert len(response.json()["results"]) == 50


def _count(api, query: str) -> int:
    return len(judgement_ids(api, f"/api/studies/pilot/judgements/?page_size=1000&{query}"))


def test_judgement_filters(api, api_study):
    study = api_study
    stage1 = study.stages.get(position=1)
    expert = study.groups.get(name="Expert")
    judgements = Judgement.objects.filter(assignment__stage__study=study)
    submitted = judgements.filter(assignment__status="submitted")

    assert _count(api, f"stage={stage1.pk}") == submitted.filter(assignment__stage=stage1).count()
    assert _count(api, f"group={expert.pk}") == 12  # Expert 1: three batches of four
    assert _count(api, "source=Human") == 15
    assert _count(api, "kind=attention_check") == 15
    assert _count(api, "annotator=Layperson%202") == 24
    assert _count(api, "annotator=Nobody") == 0
    # Rejected and in-progress work only when asked for.
    assert _count(api, "status=rejected") == 4
    assert _count(api, "status=in_progress") == 1
    assert _count(api, "status=submitted&status=rejected&status=in_progress") == judgements.count()
    middle = sorted(submitted.values_list("id", flat=True))[29]
    assert _count(api, f"since_id={middle}") == 30


@pytest.mark.parametrize(
    "query, field",
    [
        ("stage=abc", "stage"),
        ("group=0", "group"),
        ("status=finished", "status"),
        ("kind=robot", "kind"),
        ("since_id=-1", "since_id"),
        ("stage=99999999999999999999999", "stage"),
        ("cursor=not-a-cursor", "cursor"),
        ("cursor=cD1hYmM=", "cursor"),  # a well-formed cursor with a forged position
    ],
)
def test_bad_judgement_filters_are_400_with_field_errors(api, api_study, query, field):
    response = api.get(f"/api/studies/pilot/judgements/?{query}")
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"message", "code", "errors"} and body["code"] == "invalid"
    assert field in body["errors"] and body["message"].startswith(field)


def test_progress_counts_per_stage_and_group(api, api_study):
    body = api.get("/api/studies/pilot/progress/").json()
    assert (body["study"], body["overlap_k"]) == ("pilot", 2)
    stage1, stage2 = body["stages"]
    assert (stage1["batches"], stage2["batches"]) == (3, 3)
    cells = {(s["position"], g["name"]): g for s in body["stages"] for g in s["groups"]}
    lay1 = cells[(1, "Layperson")]
    assert lay1["assignments"]["submitted"] == 6
    assert lay1["slots"] == 6
    assert lay1["batches_complete"] == 3  # both laypeople did every batch
    assert lay1["judgements"] == 6 * 3  # attention checks left out
    assert lay1["judgements_stored"] == 6 * 4
    expert1 = cells[(1, "Expert")]
    assert (expert1["assignments"]["submitted"], expert1["batches_complete"]) == (3, 0)
    assert stage1["batches_complete"] == 0  # experts have one of two in each
    expert2 = cells[(2, "Expert")]
    assert expert2["assignments"] == {
        "assigned": 0,
        "in_progress": 1,
        "submitted": 0,
        "expired": 0,
        "rejected": 1,
    }
    assert (expert2["judgements"], expert2["judgements_stored"]) == (0, 5)


def test_progress_takes_a_fixed_number_of_queries(api, api_study, django_assert_num_queries):
    # token, study, stages, groups, assignments by batch and status with their
    # judgements; who can no longer get work: batches, assignments, annotators, crowd
    # entries (a part that ended early) and training quiz attempts (who failed the quiz
    # gets no work); the groups taking part in each stage and groups' own waits; the
    # study's gates (more batches may come to a gated stage)
    with django_assert_num_queries(13):
        api.get("/api/studies/pilot/progress/")


def test_analysis_runs_list_leaves_out_reports_and_detail_has_them(api, api_study):
    run = AnalysisRun.objects.create(
        study=api_study,
        status=AnalysisRun.Status.DONE,
        result={"study": "pilot", "cells": []},
        parameters={"seed": 0},
        trigger=AnalysisRun.Trigger.COMMAND,
        finished_at=timezone.now(),
    )
    listing = api.get("/api/studies/pilot/analysis-runs/").json()
    assert listing["count"] == 1
    assert listing["results"][0]["id"] == run.pk
    assert "result" not in listing["results"][0]
    detail = api.get(f"/api/analysis-runs/{run.pk}/").json()
    assert detail["result"] == {"study": "pilot", "cells": []}
    assert (detail["status"], detail["study"], detail["trigger"]) == ("done", "pilot", "command")


def test_no_personal_data_in_any_response(api, api_study):
    annotator = Annotator.objects.get(study=api_study, pseudonym="Layperson 1")
    assert annotator.email == PERSONAL["email"]
    secrets = [
        PERSONAL["email"],
        PERSONAL["platform_participant_id"],
        *Annotator.objects.values_list("access_token", flat=True),
    ]
    run = AnalysisRun.objects.create(study=api_study, trigger="command")
    urls = [
        "/api/studies/",
        "/api/studies/pilot/",
        "/api/studies/pilot/stages/",
        "/api/studies/pilot/groups/",
        "/api/studies/pilot/progress/",
        "/api/studies/pilot/contexts/?page_size=500",
        "/api/studies/pilot/batches/?page_size=500",
        "/api/studies/pilot/assignments/?page_size=500",
        "/api/studies/pilot/judgements/?page_size=1000&status=submitted&status=rejected"
        "&status=in_progress",
        "/api/studies/pilot/analysis-runs/",
        f"/api/analysis-runs/{run.pk}/",
    ]
    for url in urls:
        text = json.dumps(api.get(url).json())
        for secret in secrets:
            assert secret not in text, (url, secret)
        assert "prolific" not in text.lower(), url
        assert "email" not in text.lower(), url
    rejected = Assignment.objects.get(status="rejected")
    text = json.dumps(
        api.post(
            f"/api/assignments/{Assignment.objects.filter(status='submitted').first().pk}/reject/",
            {"reason": "Test"},
            format="json",
        ).json()
    )
    assert not any(secret in text for secret in secrets)
    assert rejected.annotator.pseudonym == "Expert 2"


def test_another_studys_rows_never_show(api, api_study):
    other = study_create(slug="other", title="Other", stages=[("GPT-2 stage", timedelta(0))])
    materials_import(
        study=other, content=json.dumps(materials_doc(stages=["GPT-2 stage"])), fmt="json"
    )
    body = api.get("/api/studies/pilot/contexts/?page_size=500").json()
    ids = {r["id"] for c in body["results"] for r in c["reflections"]}
    assert ids == set(
        Reflection.objects.filter(context__study=api_study).values_list("id", flat=True)
    )
    assert api.get("/api/studies/other/batches/").json()["count"] == 3
    assert api.get("/api/studies/pilot/batches/").json()["count"] == 6
    assert api.get("/api/studies/other/judgements/").json()["results"] == []


# --------------------------------------------------------------------------- export


def test_export_streams_the_same_csv_as_the_download(api, small_study):
    from django.http import StreamingHttpResponse

    from studies.exports import ExportOptions, export_csv_chunks

    response = api.get(f"/api/studies/{small_study.slug}/export/", {"group": "Expert"})
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    body = b"".join(response.streaming_content).decode()
    expected = "".join(
        export_csv_chunks(study=small_study, options=ExportOptions(groups=("Expert",)))
    )
    assert body == expected
    assert f'filename="{small_study.slug}-annotations.csv"' in response["Content-Disposition"]


def test_export_offers_the_spreadsheet_safe_csv_and_the_excel_workbook(api, small_study):
    import io

    from openpyxl import load_workbook

    from studies.datafiles.xlsx import CONTENT_TYPE
    from studies.exports import ExportOptions, export_csv_chunks, export_rows

    url = f"/api/studies/{small_study.slug}/export/"
    response = api.get(url, {"file": "csv-spreadsheet-safe"})
    assert response.status_code == 200
    expected = "".join(
        export_csv_chunks(study=small_study, options=ExportOptions(file="csv-spreadsheet-safe"))
    )
    assert b"".join(response.streaming_content).decode() == expected

    response = api.get(url, {"file": "xlsx", "format": "full"}, HTTP_ACCEPT=CONTENT_TYPE)
    assert response.status_code == 200
    assert response["Content-Type"] == CONTENT_TYPE
    assert f'filename="{small_study.slug}-annotations-full.xlsx"' in response["Content-Disposition"]
    sheet = load_workbook(io.BytesIO(b"".join(response.streaming_content))).active
    rows = [["" if c is None else c for c in row] for row in sheet.iter_rows(values_only=True)]
    assert rows == [
        list(r) for r in export_rows(study=small_study, options=ExportOptions(fmt="full"))
    ]


def test_export_refuses_an_unknown_kind_of_file_as_a_json_400(api, small_study):
    response = api.get(f"/api/studies/{small_study.slug}/export/", {"file": "ods"})
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "file": ['Choose "csv", "csv-spreadsheet-safe", "xlsx", "jsonl" or "parquet", not "ods".']
    }


def test_export_refuses_unknown_names_as_a_json_400(api, small_study):
    response = api.get(
        f"/api/studies/{small_study.slug}/export/", {"format": "xml", "stage": "Nope"}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["errors"]["format"] == ['Choose "published", "full" or "training", not "xml".']
    assert body["errors"]["stage"] == ["Not a stage of this study: Nope."]
