"""A study imported from a published file has no times and no recorded order: its
waiting periods say unknown (null), not 0.0 ± 0.0, and it has no order effects, while
the study it came from has both; studies imported before this was marked are found by
their one-instant assignments."""

import io

import pytest
from django.apps import apps as global_apps

from analysis.services import analysis_run_compute
from studies.datafiles.published import annotations_import
from studies.exports import ExportOptions, export_csv_chunks
from studies.models import Study

pytestmark = pytest.mark.django_db
FAST = {"bootstrap_resamples": 0}


def _copy(study) -> Study:
    text = "".join(export_csv_chunks(study=study, options=ExportOptions(extended=True)))
    annotations_import(path_or_file=io.StringIO(text), study_slug="copy")
    return Study.objects.get(slug="copy")


def test_an_imported_study_has_unknown_waits(annotated_study):
    copy = _copy(annotated_study)
    assert annotated_study.work_recorded and not copy.work_recorded
    original = analysis_run_compute(study=annotated_study, parameters=FAST).result
    imported = analysis_run_compute(study=copy, parameters=FAST).result
    for group in ("Expert", "Layperson"):
        (live,) = original["waiting_periods"][group]
        (entry,) = imported["waiting_periods"][group]
        assert live["mean_days"] is not None
        # The same annotators went on; how long they waited is not in the file.
        assert entry["n"] == live["n"] == 4
        assert [entry[k] for k in ("mean_days", "sd_days", "min_days", "max_days")] == [None] * 4
    # Nor in what order they saw the items: the copy's order was made up at import.
    assert original["order_effects"] and imported["order_effects"] == {}


def test_the_migration_marks_the_studies_imported_before_it(annotated_study):
    from importlib import import_module

    migration = import_module("studies.migrations.0034_study_work_recorded")
    copy = _copy(annotated_study)
    Study.objects.update(work_recorded=True)  # as before the migration
    migration.imported_studies_mark(global_apps, None)
    assert set(Study.objects.filter(work_recorded=False).values_list("slug", flat=True)) == {
        copy.slug
    }
