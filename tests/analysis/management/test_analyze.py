import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from analysis.models import AnalysisRun

pytestmark = pytest.mark.django_db


def analyze(*args) -> str:
    out = StringIO()
    call_command("analyze", *args, stdout=out)
    return out.getvalue()


def test_analyze_prints_a_summary_stores_the_run_and_writes_json(annotated_study, tmp_path):
    target = tmp_path / "report.json"
    output = analyze("pilot", "--json", str(target), "--resamples", "50", "--seed", "3")
    run = AnalysisRun.objects.get()
    assert run.status == AnalysisRun.Status.DONE
    assert run.trigger == AnalysisRun.Trigger.COMMAND
    assert run.parameters["seed"] == 3
    written = json.loads(target.read_text(encoding="utf-8"))
    assert written == run.result
    assert "108 judgements analysed" in output
    # The dashboard's tables, under their captions.
    assert "Global agreement on coherent / incoherent" in output
    cell = run.result["groups"]["Expert"]["stages"]["GPT-2 stage"]["coherence"]
    # The table row of Expert / GPT-2 stage carries its Fleiss kappa and band.
    row = next(
        line for line in output.splitlines() if line.startswith("Expert") and "GPT-2" in line
    )
    assert f"{cell['fleiss_kappa']:.3f}" in row
    assert cell["fleiss_band"] in row
    assert "Inter-group correlation and agreement" in output
    assert "Cross-stage shift on human reflections" in output
    assert f"Stored as analysis run #{run.pk}" in output


def test_analyze_passes_exclusions_and_expired_flag(annotated_study):
    output = analyze(
        "pilot",
        "--exclude-source",
        "GPT-2",
        "--exclude-source",
        "GPT-3",
        "--include-expired",
        "--resamples",
        "0",
    )
    run = AnalysisRun.objects.get()
    assert run.parameters["excluded_sources"] == ["GPT-2", "GPT-3"]
    assert run.parameters["include_expired"] is True
    assert run.result["n_judgements"] == 36  # human reflections only
    assert "excluding GPT-2, GPT-3, expired batches included" in output


def test_analyze_of_a_study_without_judgements_says_so(loaded_study):
    output = analyze("pilot", "--resamples", "0")
    assert "No judgements count yet" in output
    assert AnalysisRun.objects.get().result["groups"] == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], 'No study with slug "nope".'),
        (["pilot", "--resamples", "-5"], "Must be a whole number, 0 or more."),
        (["pilot", "--json", "/nonexistent-dir/x.json"], "no directory"),
        # A typo in a source name is refused as the item export refuses it.
        (["pilot", "--exclude-source", "BRAT"], r"Not a source of this study: BRAT \(it has: "),
    ],
)
def test_analyze_refuses_bad_input_and_stores_nothing(loaded_study, args, message):
    with pytest.raises(CommandError, match=message):
        analyze(*args)
    assert not AnalysisRun.objects.exists()


def test_analyze_reports_a_failed_run(loaded_study, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("analysis.services.report_build", broken)
    with pytest.raises(CommandError, match="failed: RuntimeError: boom"):
        analyze("pilot")
    assert AnalysisRun.objects.get().status == AnalysisRun.Status.FAILED


def test_analyze_crosses_the_named_generation_settings(annotated_study):
    output = analyze("pilot", "--resamples", "0", "--cross", "model", "--cross", "decoding")
    run = AnalysisRun.objects.get()
    assert run.parameters["crossed_settings"] == ["model", "decoding"]
    crossed = run.result["generation_crossed"]["Expert"]["GPT-2 stage"]
    # Each stage's candidates share one model and decoding: one combination, six items.
    assert [(e["values"], e["n_items"]) for e in crossed] == [
        ({"model": "gpt-2", "decoding": "greedy"}, 6)
    ]
    assert "Label distribution per combination of generation settings" in output
    assert "model gpt-2, decoding greedy" in output


def test_analyze_refuses_a_setting_the_study_lacks(annotated_study):
    with pytest.raises(CommandError, match="Not a generation setting of this study's"):
        analyze("pilot", "--cross", "temperature")
    assert not AnalysisRun.objects.exists()
