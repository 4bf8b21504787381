"""The text summary of a study none of whose judgements count (every batch rejected)
still reports what needs none: the annotators' failed attention checks and the waits
between stages."""

import statistics

import pytest

from analysis.report.text import report_summary_lines
from analysis.services import analysis_run_compute
from studies.models import Assignment
from studies.services import assignment_reject
from tests.analysis.report.test_quality import FAST, timed_study  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def all_rejected(request):
    """The quality report's study (second stage 3 or 4 days after the first); Layperson
    1 failed every attention check; then every batch is rejected."""
    study = request.getfixturevalue("timed_study")
    Assignment.objects.filter(stage__study=study, annotator__pseudonym="Layperson 1").update(
        attention_passed=False
    )
    for assignment in Assignment.objects.filter(stage__study=study):
        assignment_reject(assignment=assignment, reason="Test: nothing counts.")
    return study


def test_summary_without_counted_judgements_still_shows_quality_and_waits(all_rejected):
    report = analysis_run_compute(study=all_rejected, parameters=FAST).result
    assert report["groups"] == {} and report["n_judgements"] == 0
    failed = Assignment.objects.filter(
        stage__study=all_rejected, annotator__pseudonym="Layperson 1"
    ).count()
    assert report["quality"] == {
        "Layperson": {
            "Layperson 1": {
                "n_batches": 0,
                "median_seconds": None,
                "fast_share": None,
                "attention_failed": failed,
                "partial_stages": 0,
                "yes_rate": None,
                "agreement_with_group": None,
                "flags": [],
            }
        }
    }
    lines = report_summary_lines(report)
    text = "\n".join(lines)
    assert "No judgements count yet (only submitted, non-rejected batches do)." in text
    # The quality table: Layperson 1's row with their failed checks, nobody else.
    quality = lines[lines.index("Annotator quality") :]
    row = next(line for line in quality if "Layperson 1" in line)
    assert f" {failed} " in f" {row} "
    assert "Layperson 2" not in text
    # The waits, with the mean the report computed (one decimal), per group.
    waits = lines[lines.index("Waiting periods between stages (days)") :]
    for group in ("Expert", "Layperson"):
        (entry,) = report["waiting_periods"][group]
        assert entry["n"] == 4
        row = next(line for line in waits if line.startswith(group))
        assert f"{entry['mean_days']:.1f}" in row and "GPT-2 stage" in row
    days = [e["mean_days"] for g in report["waiting_periods"].values() for e in g]
    assert all(3 <= d <= 4 for d in days) and statistics.mean(days) > 3
