"""The item-level export of Likert stages: a row per (stage, item, group, dimension)
of the ratings the report analyses, through the command, the download and the API;
an unknown instrument is refused with a message and nothing is written."""

import csv
import io

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.item_export import LIKERT_COLUMNS
from studies.models import Reflection
from tests.studies.likert_fixtures import answer_both_stages


@pytest.fixture
def study(loaded_study):
    return answer_both_stages(loaded_study)


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_one_row_per_stage_item_group_and_dimension(study, tmp_path):
    out = tmp_path / "items.csv"
    call_command("export_items", study.slug, "--instrument", "likert", "--out", str(out))
    rows = rows_of(out.read_text(encoding="utf-8"))
    assert rows[0] == list(LIKERT_COLUMNS)
    second = study.stages.get(position=2)
    candidates = (
        Reflection.objects.filter(batch_items__batch=second.batches.first())
        .exclude(kind=Reflection.Kind.ATTENTION_CHECK)
        .count()
    )
    assert len(rows) - 1 == 2 * candidates
    by_dimension = {}
    for row in rows[1:]:
        by_dimension.setdefault(row[5], set()).add(tuple(row[6:]))
    # One rater: fluency 4 (no SD of one rating); warmth "cannot judge" only.
    assert by_dimension == {
        "fluency": {("5", "1", "0", "4.0", "", "4.0")},
        "warmth": {("slider", "1", "1", "", "", "")},
    }
    assert {row[0] for row in rows[1:]} == {second.name} and {row[4] for row in rows[1:]} == {
        "Layperson"
    }


def test_the_coherence_items_stay_the_default(study, tmp_path):
    out = tmp_path / "items.csv"
    call_command("export_items", study.slug, "--out", str(out))
    assert rows_of(out.read_text(encoding="utf-8"))[0][5] == "n_raters"


def test_the_download_and_the_api_take_the_instrument(admin_client, study):
    url = reverse("analysis:items_csv", args=[study.slug])
    response = admin_client.get(url, {"instrument": "likert"})
    assert response.status_code == 200
    assert 'filename="pilot-items-likert.csv"' in response["Content-Disposition"]
    text = b"".join(response.streaming_content).decode("utf-8")
    assert rows_of(text)[0] == list(LIKERT_COLUMNS)
    refused = admin_client.get(url, {"instrument": "pairwise"})
    assert refused.status_code == 400
    assert 'instrument: Choose "coherence" or "likert", not "pairwise".' in refused.content.decode()
    api = admin_client.get(f"/api/studies/{study.slug}/items/", {"instrument": "likert"})
    assert api.status_code == 200
    assert rows_of(b"".join(api.streaming_content).decode("utf-8"))[0] == list(LIKERT_COLUMNS)
    blank = admin_client.get(f"/api/studies/{study.slug}/items/", {"instrument": ""})
    assert blank.status_code == 200  # empty: the default (here the coherence items)
    assert rows_of(b"".join(blank.streaming_content).decode("utf-8"))[0][5] == "n_raters"


def test_an_unknown_instrument_writes_nothing(study, tmp_path):
    out = tmp_path / "items.csv"
    with pytest.raises(CommandError):
        call_command("export_items", study.slug, "--instrument", "ranking", "--out", str(out))
    assert not out.exists()
