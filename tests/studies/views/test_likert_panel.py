"""A Likert stage's item panel: each dimension rated on its points (radio buttons) or
a slider (a number field without JavaScript), "cannot judge" where offered; saved by
the same one-statement save as the coherence protocol; refusals shown at their
dimension with nothing written; the saved ratings shown again and on the review."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from studies.models import Judgement, LikertDimension, Reflection, Stage, Study
from studies.selectors import annotator_stage_states, stage_tutorial_due
from studies.services import (
    annotator_complete_tutorial,
    annotators_create,
    assignment_claim,
    consent_version_current,
)
from tests.studies.likert_fixtures import make_likert
from tests.studies.views.test_annotate import HX, item_url
from tests.studies.views.test_stage_wording import finish_stage_1


def _open(study, *, likert_positions) -> Study:
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN, batches_per_stage=1)
    Stage.objects.filter(study=study, position=2).update(min_wait=timedelta(0))
    for stage in Stage.objects.filter(study=study, position__in=likert_positions):
        make_likert(stage)
    study.refresh_from_db()
    return study


def _signed_in(client, study):
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    annotator.consented_version = consent_version_current(study=study)
    annotator.consented_at = timezone.now()
    annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    client.get(f"/i/{annotator.access_token}/")
    return annotator


@pytest.fixture
def likert_batch(client, loaded_study):
    """Every stage rates fluency (5 points, attention check) and warmth (a slider,
    "cannot judge" offered); a signed-in annotator holds a batch of stage 1."""
    study = _open(loaded_study, likert_positions=(1, 2))
    return assignment_claim(annotator=_signed_in(client, study))


@pytest.fixture
def mixed_batch(client, loaded_study):
    """Stage 1 asks the coherence protocol, stage 2 rates: the annotator holds a batch
    of stage 2."""
    study = _open(loaded_study, likert_positions=(2,))
    annotator = _signed_in(client, study)
    finish_stage_1(annotator)
    # A later Likert stage shows its tutorial (its statements and keys) first.
    assert stage_tutorial_due(
        annotator=annotator, states=annotator_stage_states(annotator=annotator)
    ) == study.stages.get(position=2)
    annotator_complete_tutorial(annotator=annotator, stage=study.stages.get(position=2))
    assignment = assignment_claim(annotator=annotator)
    assert assignment.stage.position == 2
    return assignment


def _ratings(assignment, number) -> dict:
    judgement = Judgement.objects.get(
        assignment=assignment, reflection_id=assignment.order[number - 1]
    )
    return {
        r.dimension.name: "cannot judge" if r.cannot_judge else r.value
        for r in judgement.ratings.select_related("dimension")
    }


PLAIN = {"form_mode": "plain", "revision": 0}


def test_the_panel_shows_each_dimension_and_no_yes_or_no(client, likert_batch):
    page = client.get(item_url(likert_batch, 1)).content.decode()
    assert 'name="coherent"' not in page
    assert "The response is fluent." in page and "The response is warm." in page
    for point in range(1, 6):
        assert f'name="rating_fluency" value="{point}"' in page
    assert "poor" in page and "excellent" in page
    # A slider is a number field from 0 to 100 without JavaScript, a range control with it.
    assert 'type="number" name="rating_warmth" min="0" max="100"' in page
    assert "data-slider-range hidden" in page
    assert 'name="cannot_judge_warmth"' in page  # offered for warmth only
    assert 'name="rating_fluency" value="cannot_judge"' not in page
    assert "data-likert" in page and 'data-next-key="n"' in page


def test_a_plain_form_saves_the_ratings_and_shows_them_again_and_on_the_review(
    client, likert_batch
):
    response = client.post(
        item_url(likert_batch, 1), {**PLAIN, "rating_fluency": "4", "rating_warmth": "70"}
    )
    assert response.status_code == 302 and "saved=1" in response["Location"]
    assert _ratings(likert_batch, 1) == {"fluency": 4, "warmth": 70}
    page = client.get(item_url(likert_batch, 1)).content.decode()
    assert 'name="rating_fluency" value="4" checked' in page
    assert 'name="rating_warmth" min="0" max="100" step="1" inputmode="numeric" value="70"' in page
    # Revised: "cannot judge" on the slider (its number is then left out).
    response = client.post(
        item_url(likert_batch, 1),
        {**PLAIN, "revision": 1, "rating_fluency": "5", "rating_warmth": "40",
         "cannot_judge_warmth": "on"},
    )  # fmt: skip
    assert response.status_code == 302
    assert _ratings(likert_batch, 1) == {"fluency": 5, "warmth": "cannot judge"}
    review = client.get(reverse("studies:review", args=["pilot", likert_batch.pk])).content.decode()
    assert "fluency: 5 of 5 (excellent); warmth: cannot judge" in review


@pytest.mark.parametrize(
    ("posted", "message"),
    [
        ({"rating_warmth": "70"}, "Rate fluency."),
        ({"rating_fluency": "6", "rating_warmth": "70"}, "A rating of fluency is from 1 to 5."),
        ({"rating_fluency": "4", "rating_warmth": "101"}, "A rating of warmth is from 0 to 100."),
        (
            {"rating_fluency": "four", "rating_warmth": "7"},
            "A rating of fluency is a whole number.",
        ),
        (
            {"rating_fluency": "cannot_judge", "rating_warmth": "7"},
            "&quot;Cannot judge&quot; is not offered for fluency.",
        ),
        ({"coherent": "yes", "empathy": "4"}, "This stage asks for ratings, not Yes or No."),
    ],
    ids=["missing", "above-points", "above-slider", "not-a-number", "cannot-judge", "yes-no"],
)
def test_a_bad_answer_is_refused_at_its_dimension_and_nothing_is_written(
    client, likert_batch, posted, message
):
    response = client.post(item_url(likert_batch, 1), {**PLAIN, **posted}, **HX)
    assert response.status_code == 422
    page = response.content.decode()
    assert message in page
    assert 'name="rating_fluency"' in page  # the panel is shown again, with the answer
    assert not Judgement.objects.filter(assignment=likert_batch).exists()


def test_a_study_with_a_coherence_and_a_likert_stage_saves_each_by_its_stage(client, mixed_batch):
    url = item_url(mixed_batch, 1)
    page = client.get(url, **HX).content.decode()
    assert 'name="rating_fluency"' in page and 'name="coherent"' not in page
    # The study's stages differ, so the save checks the answer against this one's.
    refused = client.post(url, {**PLAIN, "coherent": "yes", "empathy": "4"}, **HX)
    assert refused.status_code == 422
    assert "This stage asks for ratings, not Yes or No." in refused.content.decode()
    missing = client.post(url, {**PLAIN, "rating_warmth": ""}, **HX)
    assert missing.status_code == 422 and "Rate fluency." in missing.content.decode()
    assert not Judgement.objects.filter(assignment=mixed_batch).exists()
    saved = client.post(url, {**PLAIN, "rating_fluency": "2", "cannot_judge_warmth": "on"}, **HX)
    assert saved.status_code == 200 and "Response candidate 2 of" in saved.content.decode()
    assert _ratings(mixed_batch, 1) == {"fluency": 2, "warmth": "cannot judge"}


def test_a_likert_save_costs_what_a_coherence_save_costs(client, likert_batch):
    """The dimensions come with the annotator and the ratings are written by the save's
    one statement: no query is added for them."""
    url = item_url(likert_batch, 1)
    with CaptureQueriesContext(connection) as likert_save:
        client.post(url, {**PLAIN, "rating_fluency": "4", "rating_warmth": "70"}, **HX)
    assert _ratings(likert_batch, 1) == {"fluency": 4, "warmth": 70}
    Stage.objects.filter(pk=likert_batch.stage_id).update(instrument=Stage.Instrument.COHERENCE)
    with CaptureQueriesContext(connection) as coherence_save:
        client.post(item_url(likert_batch, 2), {**PLAIN, "coherent": "yes", "empathy": "4"}, **HX)
    assert Judgement.objects.filter(assignment=likert_batch).count() == 2
    assert len(likert_save) == len(coherence_save)


def test_the_attention_check_of_a_likert_batch(client, likert_batch):
    """Rated within the passing ratings of the check's dimension (here: fluency 1)."""
    for number, rid in enumerate(likert_batch.order, start=1):
        kind = Reflection.objects.get(pk=rid).kind
        fluency = "1" if kind == Reflection.Kind.ATTENTION_CHECK else "4"
        response = client.post(
            item_url(likert_batch, number),
            {**PLAIN, "rating_fluency": fluency, "rating_warmth": "50"},
        )
        assert response.status_code == 302
    client.post(reverse("studies:review", args=["pilot", likert_batch.pk]))
    likert_batch.refresh_from_db()
    assert likert_batch.submitted_at is not None
    assert likert_batch.attention_passed is True
    assert (
        LikertDimension.objects.get(stage=likert_batch.stage, checks_attention=True).name
        == "fluency"
    )
