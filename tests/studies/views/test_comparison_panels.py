"""The annotation pages of pairwise and ranking stages: a pair's two responses on the
sides the annotator's order gives them, A, B or a tie saved by the one-statement save;
a ranking's responses ranked with numbers (the page without JavaScript) and saved
whole; refusals shown with nothing written; the review and the submit."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from studies.models import Assignment, Judgement, Reflection, Stage, Study
from studies.services import (
    annotators_create,
    assignment_claim,
    consent_version_current,
)
from tests.studies.comparison_fixtures import make_comparison
from tests.studies.views.test_annotate import HX, item_url


def _signed_in(client, study):
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    annotator.consented_version = consent_version_current(study=study)
    annotator.consented_at = timezone.now()
    annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    client.get(f"/i/{annotator.access_token}/")
    return annotator


def _open(study, instrument, **settings):
    make_comparison(study, instrument, **settings)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN, batches_per_stage=1)
    Stage.objects.filter(study=study, position=2).update(min_wait=timedelta(0))


@pytest.fixture
def pair_batch(client, study):
    """Stage 1 compares pairs (ties allowed, a reason asked); a signed-in annotator
    holds a batch of it."""
    _open(study, Stage.Instrument.PAIRWISE, asks_reason=True)
    return assignment_claim(annotator=_signed_in(client, study))


@pytest.fixture
def ranking_batch(client, study):
    _open(study, Stage.Instrument.RANKING)
    return assignment_claim(annotator=_signed_in(client, study))


def text(pk) -> str:
    return Reflection.objects.get(pk=pk).text


def test_a_pair_is_shown_on_its_sides_and_saved(client, pair_batch):
    first, second, swapped = pair_batch.order[0]
    left, right = (second, first) if swapped else (first, second)
    page = client.get(item_url(pair_batch, 1)).content.decode()
    assert "Pair 1 of 6" in page
    assert page.index(text(left)) < page.index(text(right))
    assert "Which of the two responses is better?" in page
    assert 'name="choice"' in page and 'value="Tie"' in page and 'name="reason"' in page
    response = client.post(item_url(pair_batch, 1), {"choice": "B", "reason": " Kinder. "}, **HX)
    assert response.status_code == 200
    assert "Pair 2 of 6" in response.content.decode()
    saved = Judgement.objects.get(assignment=pair_batch)
    assert (saved.reflection_id, saved.opponent_id, saved.shown_swapped) == (
        first,
        second,
        bool(swapped),
    )
    assert (saved.choice, saved.reason) == ("B", "Kinder.")
    # Shown again with the saved choice.
    again = client.get(item_url(pair_batch, 1)).content.decode()
    assert 'value="B" checked' in again and "Kinder." in again


def test_a_pair_answer_the_stage_refuses_is_shown_with_nothing_written(client, pair_batch):
    Stage.objects.filter(pk=pair_batch.stage_id).update(allows_ties=False, asks_reason=False)
    page = client.get(item_url(pair_batch, 1)).content.decode()
    assert 'value="Tie"' not in page and 'name="reason"' not in page
    response = client.post(item_url(pair_batch, 1), {"choice": "Tie"})
    assert response.status_code == 422
    assert "This stage allows no ties: choose A or B." in response.content.decode()
    response = client.post(item_url(pair_batch, 1), {})
    assert response.status_code == 422
    assert "Choose A or B." in response.content.decode()
    assert not Judgement.objects.exists()


def test_every_pair_answered_then_reviewed_and_submitted(client, pair_batch):
    for number in range(1, len(pair_batch.order) + 1):
        first, _, swapped = pair_batch.order[number - 1]
        attention = Reflection.objects.get(pk=first).kind == Reflection.Kind.ATTENTION_CHECK
        # The off-topic response (the first) loses: choose the other side.
        choice = ("A" if swapped else "B") if attention else "A"
        client.post(item_url(pair_batch, number), {"choice": choice})
    review = client.get(reverse("studies:review", args=["pilot", pair_batch.pk]))
    page = review.content.decode()
    assert page.count("A is better") >= 1 and "Not answered yet" not in page
    response = client.post(reverse("studies:review", args=["pilot", pair_batch.pk]))
    assert response.status_code == 302
    pair_batch.refresh_from_db()
    assert (pair_batch.status, pair_batch.attention_passed) == (
        Assignment.Status.SUBMITTED,
        True,
    )


def test_a_ranking_is_typed_without_javascript_and_saved_whole(client, ranking_batch):
    url = item_url(ranking_batch, 1)
    page = client.get(url).content.decode()
    assert "Rank the 5 responses" in page
    assert "Put the responses in order, the best first." in page
    for rid in ranking_batch.order:
        assert f'name="rank_{rid}"' in page
    assert client.get(item_url(ranking_batch, 2)).status_code == 404  # one item
    # A ranking that is not one: refused, nothing written.
    numbers = {f"rank_{rid}": "9" for rid in ranking_batch.order}
    response = client.post(url, numbers)
    assert response.status_code == 422
    assert "A rank is a number from 1 (the best) to 5." in response.content.decode()
    assert not Judgement.objects.exists()
    # The off-topic response last; a tie in second place typed as 1, 2, 2, 3, 4.
    check = next(
        rid
        for rid in ranking_batch.order
        if Reflection.objects.get(pk=rid).kind == Reflection.Kind.ATTENTION_CHECK
    )
    others = [rid for rid in ranking_batch.order if rid != check]
    posted = {f"rank_{rid}": str(n) for rid, n in zip(others, (1, 2, 2, 3), strict=True)}
    posted[f"rank_{check}"] = "4"
    response = client.post(url, posted)
    assert response.status_code == 302
    assert response["Location"] == reverse("studies:review", args=["pilot", ranking_batch.pk])
    ranks = dict(Judgement.objects.values_list("reflection_id", "rank"))
    assert [ranks[rid] for rid in others] == [1, 2, 2, 4]
    assert ranks[check] == 5
    review = client.get(response["Location"]).content.decode()
    assert review.index(text(others[0])) < review.index(text(check))
    assert "Change the ranking" in review
    # The page shows the saved ranking again, best first.
    again = client.get(url).content.decode()
    assert again.index(text(others[0])) < again.index(text(check))
    # The page's form carries the revision it showed: a save from it is the one
    # statement; one from the older page is refused, the saved ranking shown.
    assert 'name="revision" value="1"' in again
    reversed_ranks = {f"rank_{rid}": str(n) for rid, n in zip(others, (4, 3, 2, 1), strict=True)}
    stale = client.post(url, {**reversed_ranks, f"rank_{check}": "5", "revision": "0"})
    assert stale.status_code == 409
    assert dict(Judgement.objects.values_list("reflection_id", "rank")) == ranks
    revised = client.post(url, {**reversed_ranks, f"rank_{check}": "5", "revision": "1"})
    assert revised.status_code == 302
    assert set(Judgement.objects.values_list("revision", flat=True)) == {2}
    assert [Judgement.objects.get(reflection_id=rid).rank for rid in others] == [4, 3, 2, 1]
    assert client.post(response["Location"]).status_code == 302
    ranking_batch.refresh_from_db()
    assert ranking_batch.attention_passed is True


def test_an_answer_form_posted_to_a_ranking_is_refused_and_the_ranking_shown(client, ranking_batch):
    response = client.post(item_url(ranking_batch, 1), {"coherent": "yes", "empathy": "4"})
    assert response.status_code == 422
    assert "Rank the 5 responses" in response.content.decode()
    assert not Judgement.objects.exists()


def test_a_pairwise_stage_words_its_question_by_its_instrument(pair_batch):
    stage = Stage.objects.get(pk=pair_batch.stage_id)
    assert stage.wording.question == "Which of the two responses is better?"
    stage.coherence_question = "Which one would you say?"
    assert stage.wording.question == "Which one would you say?"


def test_a_ranking_with_ties_where_the_stage_allows_none_is_refused(client, ranking_batch):
    Stage.objects.filter(pk=ranking_batch.stage_id).update(allows_ties=False)
    posted = {f"rank_{rid}": "1" for rid in ranking_batch.order}
    response = client.post(item_url(ranking_batch, 1), posted, **HX)
    assert response.status_code == 422
    assert "This stage allows no ties" in response.content.decode()
    assert not Judgement.objects.exists()
    review = client.get(reverse("studies:review", args=["pilot", ranking_batch.pk]))
    assert "The ranking is not saved yet" in review.content.decode()
