"""A quiz that tests knowledge: each attempt draws practice items the annotator has not
been shown when the study has enough (else the least shown come back), the feedback
keeps back the expected answer and explanation of an item that may come back, and an
expected No is matched on the categories marked required and wrong."""

import re
from collections import Counter

import pytest
from django.core.exceptions import ValidationError

from studies.models import ErrorCategory, TrainingAnswer, TrainingAttempt, TrainingItem
from studies.selectors.training import training_pool_warning, training_rules
from studies.services import study_create
from studies.services.judgements import Answer
from studies.services.training import (
    training_answer_record,
    training_attempt_items,
    training_attempt_start,
    training_draw,
    training_item_categories_check,
    training_reveals_answers,
)
from tests.studies.services.test_training import QUIZ, WITHHELD, item, open_study  # noqa: F401
from tests.studies.training_fixtures import (
    WRONG_ANSWER,
    annotator_ready_for_quiz,
    quiz_add,
    right_answer,
)


def trainee(client, study):
    annotator = annotator_ready_for_quiz(study)
    client.get(f"/i/{annotator.access_token}/")
    return annotator


def take_attempt(client, annotator, *, right: bool) -> TrainingAttempt:
    """Start an attempt and answer each drawn item right (or wrong), by the forms."""
    assert client.post(QUIZ).status_code == 302
    attempt = TrainingAttempt.objects.get(annotator=annotator, status="in_progress")
    for number, shown in enumerate(training_attempt_items(attempt=attempt), start=1):
        response = client.post(item(number), right_answer(shown) if right else WRONG_ANSWER)
        assert response.status_code == 302, response.content.decode()[:2000]
    attempt.refresh_from_db()
    return attempt


def positions(attempt: TrainingAttempt) -> list[int]:
    return [i.position for i in training_attempt_items(attempt=attempt)]


# --- the draws ----------------------------------------------------------------------------


def test_a_retry_shows_practice_items_not_shown_before(client, open_study):
    quiz = quiz_add(open_study, attempts=2, items_per_attempt=5, rounds=2)
    annotator = trainee(client, open_study)
    assert "judge 5 practice response candidates" in client.get(QUIZ).content.decode()
    first = take_attempt(client, annotator, right=False)
    assert first.n_items == 5 and positions(first) == sorted(positions(first))
    page = client.get(QUIZ).content.decode()
    assert "the next attempt shows practice items you have not seen yet" in page
    second = take_attempt(client, annotator, right=True)
    assert second.status == TrainingAttempt.Status.PASSED and second.n_items == 5
    assert set(first.item_ids).isdisjoint(second.item_ids)
    assert set(first.item_ids) | set(second.item_ids) == {i.pk for i in quiz}


def test_items_that_will_not_come_back_show_the_expected_answer_and_why(client, open_study):
    quiz_add(open_study, attempts=2, items_per_attempt=5, rounds=2)
    annotator = trainee(client, open_study)
    client.post(QUIZ)
    attempt = TrainingAttempt.objects.get(annotator=annotator)
    shown = training_attempt_items(attempt=attempt)
    # A No on the first item: wrong for an expected Yes, or for an expected No when it
    # misses a required category; either way the expected answer is shown.
    client.post(item(1), WRONG_ANSWER)
    page = client.get(item(1)).content.decode()
    assert "Not quite ✗" in page and WITHHELD not in page
    assert shown[0].explanation in page and "data-expected" in page
    expected = "Yes" if shown[0].expected_coherent else "No — choose:"
    assert re.search(rf"data-expected>{expected}", page)


def test_the_draw_is_reproducible_per_annotator_and_attempt(open_study):
    items = quiz_add(open_study, attempts=2, items_per_attempt=3, rounds=2)
    annotator = annotator_ready_for_quiz(open_study)
    attempt = training_attempt_start(annotator=annotator)
    seed = f"{open_study.seed}/training/{annotator.pseudonym}/1"
    again = training_draw(items=items, size=3, shown=Counter(), seed=seed)
    assert attempt.item_ids == [i.pk for i in again]
    draws = {
        tuple(i.pk for i in training_draw(items=items, size=3, shown=Counter(), seed=f"s/{n}"))
        for n in range(10)
    }
    assert len(draws) > 1  # other annotators and attempts get other items


def test_the_draw_takes_the_least_shown_items_first():
    items = [TrainingItem(pk=pk, position=pk) for pk in range(1, 6)]
    shown = Counter({1: 2, 2: 1, 3: 1, 4: 0, 5: 1})
    for n in range(10):
        drawn = training_draw(items=items, size=3, shown=shown, seed=f"s/{n}")
        assert 4 in {i.pk for i in drawn} and 1 not in {i.pk for i in drawn}
        assert [i.position for i in drawn] == sorted(i.position for i in drawn)


def test_with_too_few_items_the_least_shown_come_back_and_their_answers_are_kept_back(
    client, open_study
):
    """Five items, three attempts of three: the second attempt shows the two not shown
    and one again; the third, three of the four shown once. Only the last attempt's
    feedback shows the expected answers (nothing comes back after it)."""
    quiz_add(open_study, attempts=3, items_per_attempt=3)
    annotator = trainee(client, open_study)
    first = take_attempt(client, annotator, right=False)
    assert not training_reveals_answers(attempt=first)
    assert WITHHELD in client.get(item(3)).content.decode()
    page = client.get(QUIZ).content.decode()
    assert "may show some of the same practice items again" in page
    second = take_attempt(client, annotator, right=False)
    assert len(set(first.item_ids) | set(second.item_ids)) == 5
    assert len(set(first.item_ids) & set(second.item_ids)) == 1
    assert not training_reveals_answers(attempt=second)
    third = take_attempt(client, annotator, right=True)
    twice = (Counter(first.item_ids) + Counter(second.item_ids)).most_common(1)[0][0]
    assert twice not in third.item_ids and len(third.item_ids) == 3
    assert training_reveals_answers(attempt=third)
    last = training_attempt_items(attempt=third)[-1]
    page = client.get(item(3)).content.decode()
    assert WITHHELD not in page and last.explanation in page


def test_every_item_in_every_attempt_without_items_per_attempt(client, open_study):
    quiz = quiz_add(open_study, attempts=2)
    annotator = trainee(client, open_study)
    first = take_attempt(client, annotator, right=False)
    assert first.item_ids == [i.pk for i in quiz]
    assert training_rules(study=open_study).items_needed(len(quiz)) == 10


# --- the researcher's warning -------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempts", "per_attempt", "rounds", "warning"),
    [
        # Every item in each attempt: the advice is a number per attempt that fits.
        (2, None, 1, "Set practice items per attempt to 2 or fewer"),
        (3, None, 2, "Set practice items per attempt to 3 or fewer"),
        (3, 3, 1, "3 attempts of 3 practice items need 9 practice items for every"),
        (2, 5, 2, None),
        (1, None, 1, None),
    ],
)
def test_the_study_warns_when_its_practice_items_are_too_few(
    open_study, attempts, per_attempt, rounds, warning
):
    quiz_add(open_study, attempts=attempts, items_per_attempt=per_attempt, rounds=rounds)
    message = training_pool_warning(study=open_study)
    if warning is None:
        assert message is None
    else:
        assert warning in message
        if per_attempt is None:
            assert "Add practice items" not in message  # more items would not help


def test_a_study_without_practice_items_has_no_warning(open_study):
    assert training_pool_warning(study=open_study) is None


# --- what counts as right -----------------------------------------------------------------

YES = Answer(coherent=True, empathy=3)


def answer_first_three(annotator) -> None:
    """Start an attempt (every item, in order) and answer items 1 to 3 right."""
    training_attempt_start(annotator=annotator)
    off_topic = Answer(coherent=False, categories=frozenset({"off_topic"}))
    for number, answer in enumerate([YES, off_topic, YES], start=1):
        assert training_answer_record(annotator=annotator, number=number, answer=answer).is_right


@pytest.mark.parametrize(
    ("categories", "right"),
    [
        ({"parroting"}, True),  # the required category
        ({"parroting", "malformed"}, True),  # plus one neither required nor wrong
        ({"parroting", "off_topic"}, False),  # plus the wrong one
        ({"malformed"}, False),  # without the required one
        ({"malformed", "dialogue_contradicting", "on_topic_but_unverifiable"}, False),
    ],
)
def test_an_expected_no_is_matched_on_its_required_and_wrong_categories(
    open_study, categories, right
):
    """Practice item 4: parroting required, off-topic wrong."""
    quiz_add(open_study, attempts=1)
    annotator = annotator_ready_for_quiz(open_study)
    answer_first_three(annotator)
    answer = Answer(
        coherent=False, categories=frozenset(categories), most_evident=sorted(categories)[0]
    )
    recorded = training_answer_record(annotator=annotator, number=4, answer=answer)
    assert recorded.is_right is right


def test_ticking_every_category_no_longer_satisfies_an_expected_no(open_study):
    quiz_add(open_study, attempts=1)
    annotator = annotator_ready_for_quiz(open_study)
    answer_first_three(annotator)
    every = frozenset(ErrorCategory.objects.filter(study=open_study).values_list("slug", flat=True))
    answer = Answer(coherent=False, categories=every, most_evident="parroting")
    assert not training_answer_record(annotator=annotator, number=4, answer=answer).is_right


# --- the marks' rule ----------------------------------------------------------------------


def test_category_marks_are_checked_with_clear_messages(open_study):
    categories = {c.slug: c for c in ErrorCategory.objects.filter(study=open_study)}
    check = training_item_categories_check
    check(
        study=open_study,
        expected_coherent=False,
        required=[categories["parroting"]],
        wrong=[categories["off_topic"]],
    )
    with pytest.raises(ValidationError) as caught:
        check(
            study=open_study,
            expected_coherent=False,
            required=[categories["parroting"], categories["off_topic"]],
            wrong=[categories["off_topic"]],
        )
    assert caught.value.message_dict == {
        "wrong_categories": ["A category cannot be both required and wrong: Off-topic."]
    }
    with pytest.raises(ValidationError) as caught:
        check(
            study=open_study,
            expected_coherent=True,
            required=[],
            wrong=[categories["off_topic"]],
        )
    assert caught.value.message_dict == {
        "wrong_categories": ['Required and wrong categories go with an expected "No" only.']
    }
    foreign = ErrorCategory(study_id=open_study.pk + 1, label="Rude", slug="rude", bit=7)
    with pytest.raises(ValidationError) as caught:
        check(study=open_study, expected_coherent=False, required=[foreign], wrong=[])
    assert caught.value.message_dict == {
        "required_categories": ["These categories belong to another study: Rude."]
    }


def test_the_quiz_offers_the_first_stages_categories_only(client, open_study):
    """A first stage offering a subset of the study's categories: the quiz, which
    prepares for that stage, offers the same subset, and a practice item may not mark a
    category the stage does not offer."""
    first = open_study.stages.get(position=1)
    categories = {c.slug: c for c in ErrorCategory.objects.filter(study=open_study)}
    first.categories.set([categories["parroting"]])
    offered = sorted(
        c.slug for c in categories.values() if c.slug == "parroting" or c.catches_attention_check
    )
    assert len(offered) < len(categories)

    quiz_add(open_study)
    trainee(client, open_study)
    assert client.post(QUIZ).status_code == 302
    page = client.get(item(1)).content.decode()
    shown = sorted(set(re.findall(r'name="categories"[^>]*value="([^"]+)"', page)))
    assert shown == offered

    with pytest.raises(ValidationError) as caught:
        training_item_categories_check(
            study=open_study,
            expected_coherent=False,
            required=[categories["dialogue_contradicting"]],
            wrong=[],
        )
    assert caught.value.message_dict == {
        "required_categories": [
            "The quiz prepares for the first stage, which does not offer these categories: "
            f"{categories['dialogue_contradicting'].label}."
        ]
    }


def test_the_service_refuses_a_category_the_quiz_does_not_offer(open_study):
    """The rule lives in the service, not only in the page's form: an answer naming a
    category the first stage does not offer is refused and nothing is written."""
    categories = {c.slug: c for c in ErrorCategory.objects.filter(study=open_study)}
    open_study.stages.get(position=1).categories.set([categories["parroting"]])
    quiz_add(open_study, attempts=1)
    annotator = annotator_ready_for_quiz(open_study)
    answer_first_three(annotator)
    before = TrainingAnswer.objects.count()
    answer = Answer(coherent=False, categories=frozenset({"malformed"}), most_evident="malformed")
    with pytest.raises(ValidationError) as caught:
        training_answer_record(annotator=annotator, number=4, answer=answer)
    assert "malformed" in str(caught.value)
    assert TrainingAnswer.objects.count() == before


def test_marks_in_a_study_without_stages_are_checked_against_its_categories(db):
    """A draft study whose stages are not saved yet: the quiz would offer all of its
    categories, so the marks are checked against those (no error page)."""
    study = study_create(slug="no-stages", title="No stages yet", stages=[], groups=["Lay"])
    assert not study.stages.exists()
    category = ErrorCategory.objects.filter(study=study).first()
    assert category is not None
    training_item_categories_check(
        study=study, expected_coherent=False, required=[category], wrong=[]
    )
