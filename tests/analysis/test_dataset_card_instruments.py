"""The dataset card of a study of pairwise and ranking stages: a data file per
instrument, each with as many rows as the card says."""

import pytest
import yaml

from analysis.dataset_card import dataset_card, dataset_files
from studies.exports import ExportOptions, export_row_count, export_rows
from studies.models import Stage
from tests.studies.comparison_fixtures import answered_comparisons

pytestmark = pytest.mark.django_db


def test_row_counts_match_the_files_of_every_instrument(study):
    answered = answered_comparisons(study)
    options = ExportOptions(extended=True)
    for instrument in (Stage.Instrument.PAIRWISE, Stage.Instrument.RANKING):
        rows = list(export_rows(study=answered, options=options, instrument=instrument))
        assert export_row_count(study=answered, options=options, instrument=instrument) == (
            len(rows) - 1
        )
    files = dataset_files(answered)
    assert [(f.instrument, f.name) for f in files] == [
        ("pairwise", "pilot-annotations-pairwise.parquet"),
        ("ranking", "pilot-annotations-ranking.parquet"),
    ]
    header = yaml.safe_load(dataset_card(answered)[4:].split("\n---\n", 1)[0])
    assert [c["config_name"] for c in header["configs"]] == ["pairwise", "ranking"]
    assert header["license"] == "unknown"
