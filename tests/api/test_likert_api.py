"""A Likert stage's answers through the API: the judgement list gives each its ratings
(and no Yes/No), and the annotation export of a study with both instruments is the
zip of one file per instrument, as on the download page."""

import io
import zipfile

from tests.studies.likert_fixtures import answer_both_stages


def test_the_judgement_list_gives_a_likert_answer_s_ratings(api, loaded_study):
    study = answer_both_stages(loaded_study)
    response = api.get(f"/api/studies/{study.slug}/judgements/")
    assert response.status_code == 200
    rows = response.json()["results"]
    likert = [r for r in rows if r["coherent"] is None]
    coherence = [r for r in rows if r["coherent"] is not None]
    assert likert and coherence
    assert {r["stage"] for r in likert} == {study.stages.get(position=2).pk}
    assert all(
        r["ratings"]
        == [
            {"dimension": "fluency", "scale": "5", "value": 4, "cannot_judge": False},
            {"dimension": "warmth", "scale": "slider", "value": None, "cannot_judge": True},
        ]
        for r in likert
    )
    assert all(r["ratings"] == [] and r["empathy"] == 4 for r in coherence)


def test_the_api_export_of_both_instruments_is_a_zip(api, loaded_study):
    study = answer_both_stages(loaded_study)
    response = api.get(f"/api/studies/{study.slug}/export/")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.namelist() == ["pilot-annotations.csv", "pilot-annotations-likert.csv"]
