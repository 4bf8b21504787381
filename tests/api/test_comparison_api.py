"""Pairwise and ranking answers through the API: the judgement list gives a pair's two
candidates, the side shown and the choice, and a ranking's ranks; the source filter
finds a pair by either candidate; the export of both instruments is a zip."""

import io
import zipfile

from studies.models import Judgement
from tests.studies.comparison_fixtures import answered_comparisons


def test_the_judgement_list_gives_pairs_and_ranks(api, study):
    answered_comparisons(study)
    rows = []
    url = f"/api/studies/{study.slug}/judgements/"
    while url:
        page = api.get(url).json()
        rows += page["results"]
        url = page["next"]
    pairs = [r for r in rows if r["opponent"] is not None]
    ranks = [r for r in rows if r["rank"] is not None]
    assert len(pairs) == 3 * 6 and len(ranks) == 3 * 5  # attention answers included
    assert len(pairs) + len(ranks) == len(rows)
    for row in pairs:
        stored = Judgement.objects.get(pk=row["id"])
        assert (row["reflection"], row["opponent"], row["shown_swapped"], row["choice"]) == (
            stored.reflection_id,
            stored.opponent_id,
            stored.shown_swapped,
            stored.choice,
        )
        assert row["opponent_source"] == stored.opponent.source
        assert row["coherent"] is None and row["rank"] is None
    assert all(r["choice"] == "" and r["opponent_source"] is None for r in ranks)
    # A source filter finds a pair by either of its candidates.
    gpt3 = api.get(f"/api/studies/{study.slug}/judgements/?source=GPT-3").json()["results"]
    gpt3_pairs = [r for r in gpt3 if r["opponent"] is not None]
    assert gpt3_pairs and all("GPT-3" in (r["source"], r["opponent_source"]) for r in gpt3_pairs)
    assert any(r["source"] != "GPT-3" for r in gpt3_pairs)


def test_the_api_export_of_both_instruments_is_a_zip(api, study):
    answered_comparisons(study)
    response = api.get(f"/api/studies/{study.slug}/export/")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.namelist() == ["pilot-annotations-pairwise.csv", "pilot-annotations-ranking.csv"]
