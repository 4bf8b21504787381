import pytest
from django.core.exceptions import ValidationError

from analysis.models import AnalysisRun
from analysis.services import analysis_parameters_clean, analysis_run_execute


def test_parameters_get_defaults_and_sorted_sources():
    params = analysis_parameters_clean({"excluded_sources": ["BART", "Alpha", "BART"]})
    assert params == {
        "excluded_sources": ["Alpha", "BART"],
        "include_expired": False,
        "bootstrap_resamples": 1000,
        "seed": 0,
    }


@pytest.mark.parametrize(
    ("parameters", "field", "message"),
    [
        ({"colour": "red"}, "parameters", "Unknown parameters: colour."),
        ({"excluded_sources": "BART"}, "excluded_sources", "Give a list of source names."),
        ({"include_expired": "yes"}, "include_expired", "Must be true or false."),
        ({"bootstrap_resamples": -1}, "bootstrap_resamples", "Must be a whole number, 0 or more."),
        ({"seed": True}, "seed", "Must be a whole number, 0 or more."),
    ],
)
def test_bad_parameters_are_rejected_with_a_message(parameters, field, message):
    with pytest.raises(ValidationError) as info:
        analysis_parameters_clean(parameters)
    assert info.value.message_dict == {field: [message]}


def test_execute_stores_an_empty_report_for_a_study_without_judgements(loaded_study):
    run = AnalysisRun.objects.create(study=loaded_study, parameters=analysis_parameters_clean({}))
    run = analysis_run_execute(run_id=run.pk)
    assert run.status == AnalysisRun.Status.DONE
    assert run.result["n_judgements"] == 0
    assert run.result["groups"] == {}
    assert run.result["study"] == "pilot"


def test_execute_is_idempotent_for_a_finished_run(loaded_study):
    run = AnalysisRun.objects.create(study=loaded_study, parameters=analysis_parameters_clean({}))
    first = analysis_run_execute(run_id=run.pk)
    second = analysis_run_execute(run_id=run.pk)
    assert second.finished_at == first.finished_at
    assert AnalysisRun.objects.count() == 1


def test_execute_records_the_error_of_a_failing_run(loaded_study, monkeypatch):
    def broken(**kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("analysis.services.report_build", broken)
    run = AnalysisRun.objects.create(study=loaded_study, parameters=analysis_parameters_clean({}))
    run = analysis_run_execute(run_id=run.pk)
    assert run.status == AnalysisRun.Status.FAILED
    assert run.error == "ZeroDivisionError: division by zero"
    assert run.finished_at is not None


def test_execute_of_a_deleted_run_does_nothing(db):
    assert analysis_run_execute(run_id=987654) is None
