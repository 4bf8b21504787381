"""The report's ``quality`` and ``waiting_periods`` from a study annotated through the
real services, checked against a plain computation from the ORM rows; the dashboard's
quality panel links to the batches, where the rejection service is."""

import json
import statistics
from collections import defaultdict
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db.models import F
from django.urls import reverse

from analysis.models import AnalysisRun
from analysis.report.build import REPORT_VERSION
from analysis.report.text import report_summary_lines
from analysis.services import analysis_run_compute, analysis_run_create
from studies.models import Annotator, Assignment, Judgement, Reflection
from tests.api.conftest import token_client
from tests.factories import StaffUserFactory

pytestmark = pytest.mark.django_db
FAST = {"bootstrap_resamples": 0}


@pytest.fixture
def annotated_study(shared_annotated_study):
    """Built once for the module; the tests that build a study of their own (its slug)
    run first (see tests.conftest.pytest_collection_modifyitems)."""
    return shared_annotated_study


@pytest.fixture
def timed_study(annotated_study):
    """Times per item of 1–5 s (by judgement id) and a second stage claimed 3 or 4
    days (by assignment id) after the first."""
    for judgement in Judgement.objects.filter(assignment__stage__study=annotated_study):
        Judgement.objects.filter(pk=judgement.pk).update(seconds_spent=1 + judgement.pk % 5)
    later = Assignment.objects.filter(stage__study=annotated_study, stage__position=2)
    for assignment in later:
        shift = timedelta(days=3 + assignment.pk % 2)
        Assignment.objects.filter(pk=assignment.pk).update(
            assigned_at=F("assigned_at") + shift,
            expires_at=F("expires_at") + shift,
            started_at=F("started_at") + shift,
            submitted_at=F("submitted_at") + shift,
        )
    return annotated_study


def plain_quality(study, *, fast_seconds=3.0):
    rows = [
        j
        for j in Judgement.objects.filter(assignment__stage__study=study).select_related(
            "assignment__annotator__group", "reflection"
        )
        if j.assignment.status == Assignment.Status.SUBMITTED
        and j.reflection.kind != Reflection.Kind.ATTENTION_CHECK
    ]
    by_item = defaultdict(list)
    for j in rows:
        by_item[(j.assignment.annotator.group.name, j.assignment.stage_id, j.reflection_id)].append(
            j
        )
    result = {}
    for j in rows:
        annotator = j.assignment.annotator
        entry = result.setdefault(
            (annotator.group.name, annotator.pseudonym),
            {"batches": set(), "seconds": [], "yes": [], "agree": []},
        )
        entry["batches"].add(j.assignment_id)
        entry["seconds"].append(j.seconds_spent)
        entry["yes"].append(j.coherent)
        others = [
            o.coherent
            for o in by_item[(annotator.group.name, j.assignment.stage_id, j.reflection_id)]
            if o.pk != j.pk
        ]
        if len(others) >= 2 and 2 * sum(others) != len(others):
            entry["agree"].append((2 * sum(others) > len(others)) == j.coherent)
    return {
        key: {
            "n_batches": len(e["batches"]),
            "median_seconds": statistics.median(e["seconds"]),
            "fast_share": sum(s < fast_seconds for s in e["seconds"]) / len(e["seconds"]),
            "yes_rate": sum(e["yes"]) / len(e["yes"]),
            "agreement_with_group": sum(e["agree"]) / len(e["agree"]) if e["agree"] else None,
        }
        for key, e in result.items()
    }


def test_quality_matches_a_plain_computation_from_the_rows(timed_study):
    report = analysis_run_compute(study=timed_study, parameters=FAST).result
    json.dumps(report, allow_nan=False)
    assert report["report_version"] == REPORT_VERSION >= 4
    expected = plain_quality(timed_study)
    got = {
        (group, name): entry
        for group, annotators in report["quality"].items()
        for name, entry in annotators.items()
    }
    assert set(got) == set(expected) and len(got) == 8
    for key, values in expected.items():
        entry = got[key]
        assert set(entry) == {
            "n_batches", "median_seconds", "fast_share", "attention_failed", "partial_stages",
            "yes_rate", "agreement_with_group", "flags",
        }  # fmt: skip
        for name, value in values.items():
            assert entry[name] == pytest.approx(value), (key, name)
        assert (
            entry["attention_failed"]
            == Assignment.objects.filter(
                annotator__pseudonym=key[1], attention_passed=False
            ).count()
        )
        assert ("fast" in entry["flags"]) == (entry["fast_share"] > 0.5)


def test_waiting_periods_match_the_assignments(timed_study):
    report = analysis_run_compute(study=timed_study, parameters=FAST).result
    for group in ("Expert", "Layperson"):
        waits = []
        for annotator in Annotator.objects.filter(study=timed_study, group__name=group):
            mine = Assignment.objects.filter(annotator=annotator)
            ends = [a.submitted_at for a in mine if a.stage.position == 1]
            starts = [a.assigned_at for a in mine if a.stage.position == 2]
            if ends and starts:
                waits.append((min(starts) - max(ends)).total_seconds() / 86400)
        (entry,) = report["waiting_periods"][group]
        assert (entry["from"], entry["to"]) == ("GPT-2 stage", "GPT-3 stage")
        assert entry["n"] == len(waits) == 4
        assert entry["mean_days"] == pytest.approx(statistics.mean(waits))
        assert entry["sd_days"] == pytest.approx(statistics.stdev(waits))
        assert entry["min_days"] == pytest.approx(min(waits))
        assert entry["max_days"] == pytest.approx(max(waits))
        assert 2.9 < entry["min_days"] <= entry["max_days"] < 4.1


def test_text_summary_shows_quality_and_waiting_periods(timed_study):
    report = analysis_run_compute(study=timed_study, parameters=FAST).result
    text = "\n".join(report_summary_lines(report))
    assert "Annotator quality" in text and "Layperson 1" in text
    assert "Waiting periods between stages (days)" in text
    assert "Fast: answered in less than 3 s." in text


@pytest.mark.parametrize(
    ("parameters", "field", "message"),
    [
        ({"fast_seconds": -1}, "fast_seconds", "Must be a number, 0 or more."),
        ({"fast_seconds": "3"}, "fast_seconds", "Must be a number, 0 or more."),
        ({"fast_seconds": float("nan")}, "fast_seconds", "Must be a number, 0 or more."),
        ({"agreement_floor": 1.5}, "agreement_floor", "Must be between 0 and 1."),
    ],
)
def test_bad_quality_parameters_are_refused_and_nothing_is_queued(
    loaded_study, parameters, field, message
):
    with pytest.raises(ValidationError) as caught:
        analysis_run_create(study=loaded_study, parameters=parameters)
    assert caught.value.message_dict[field] == [message]
    assert not AnalysisRun.objects.exists()


def test_configured_thresholds_change_the_flags(timed_study):
    strict = analysis_run_compute(
        study=timed_study, parameters={**FAST, "fast_seconds": 10, "agreement_floor": 1}
    ).result
    for annotators in strict["quality"].values():
        for entry in annotators.values():
            assert "fast" in entry["flags"]  # every item took under 10 s
            below = entry["agreement_with_group"] is not None and entry["agreement_with_group"] < 1
            assert ("agreement_below_floor" in entry["flags"]) == below
    assert strict["parameters"]["fast_seconds"] == 10.0


def test_dashboard_quality_panel_links_to_the_batches_to_reject(client, timed_study):
    run = analysis_run_compute(study=timed_study, parameters=FAST)
    client.force_login(StaffUserFactory(is_superuser=True))
    page = client.get(reverse("analysis:dashboard", args=[timed_study.slug]))
    html = page.content.decode()
    assert 'id="quality"' in html and 'id="waiting-periods"' in html
    annotator = Annotator.objects.get(study=timed_study, pseudonym="Layperson 2")
    link = f"{reverse('admin:studies_assignment_changelist')}?annotator__id__exact={annotator.pk}"
    assert f'href="{link}"' in html
    batches = client.get(link)
    assert batches.status_code == 200
    listed = batches.context["cl"].result_list
    assert {a.annotator_id for a in listed} == {annotator.pk}
    assert len(listed) == annotator.assignments.count() > 0
    # The rejection service, through the list's action.
    target = listed[0]
    response = client.post(
        link,
        {
            "action": "reject",
            "_selected_action": [target.pk],
            "apply": "1",
            "reason": "Answers too fast to have read the context.",
        },
    )
    assert response.status_code == 302
    target.refresh_from_db()
    assert target.status == Assignment.Status.REJECTED
    assert run.pk  # the report shown stays until the next run


def test_api_gives_the_same_quality_and_waiting_periods(timed_study):
    run = analysis_run_compute(study=timed_study, parameters=FAST)
    api = token_client(StaffUserFactory())
    result = api.get(f"/api/analysis-runs/{run.pk}/").json()["result"]
    assert result["quality"] == run.result["quality"] != {}
    assert result["waiting_periods"] == run.result["waiting_periods"] != {}
