"""The study's most-evident-error merge (``Study.mee_merge``) in the report: described
by ``most_evident_error_merge`` and used by the merged variants, whose keys stay."""

import pytest
from django.core.exceptions import ValidationError

from analysis.report.build import REPORT_VERSION
from analysis.services import analysis_run_compute
from studies.models import Study
from studies.protocol import default_mee_merge

PARAMS = {"bootstrap_resamples": 20, "seed": 1}


def _merged_categories(report: dict) -> set[str]:
    found = set()
    for group in report["groups"].values():
        for cell in group["stages"].values():
            variant = cell["most_evident_error"]["hallucinatory_merged"]
            found |= set(variant.get("categories") or ())
    return found


def test_the_report_describes_and_uses_the_study_merge(annotated_study):
    default = analysis_run_compute(study=annotated_study, parameters=PARAMS).result
    assert default["report_version"] == REPORT_VERSION >= 3
    assert default["most_evident_error_merge"] == default_mee_merge()
    assert "hallucinatory" in _merged_categories(default)

    surface = {"surface": ["malformed", "parroting"]}
    Study.objects.filter(pk=annotated_study.pk).update(mee_merge=surface)
    annotated_study.refresh_from_db()
    report = analysis_run_compute(study=annotated_study, parameters=PARAMS).result
    assert report["most_evident_error_merge"] == surface
    merged = _merged_categories(report)
    assert "surface" in merged and "hallucinatory" not in merged
    assert not {"malformed", "parroting"} & merged


@pytest.mark.parametrize(
    "merge",
    [
        ["off_topic"],
        {"": ["off_topic"]},
        {"x": []},
        {"x": ["off_topic"], "y": ["off_topic"]},
        {"x": ["off_topic", "off_topic"]},
    ],
)
def test_a_malformed_merge_is_refused(study, merge):
    study.mee_merge = merge
    with pytest.raises(ValidationError) as caught:
        study.full_clean()
    assert "merged label" in str(caught.value.message_dict["mee_merge"])
    assert Study.objects.get(pk=study.pk).mee_merge == default_mee_merge()
