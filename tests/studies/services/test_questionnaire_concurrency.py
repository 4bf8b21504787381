"""Screening people out at the same instant (PostgreSQL, one connection each): every
count is added exactly once, and one person answering twice at once is recorded once."""

import pytest

from studies.models import QuestionnaireResponse, ScreeningTally
from studies.services import annotators_create
from studies.services.questionnaires import questionnaire_respond
from tests.studies.questionnaire_helpers import ids, screening
from tests.studies.services.test_assignment_concurrency import in_parallel

pytestmark = [pytest.mark.django_db(transaction=True)]

PEOPLE = 12


def test_concurrent_screenings_out_lose_no_count(study):
    q = screening(study)
    m = ids(q)
    people = annotators_create(group=study.groups.get(name="Layperson"), count=PEOPLE)
    answers = {m["1"]: [str(m["1:No"])], m["3"]: ["2"]}
    outcomes = in_parallel(
        lambda a: questionnaire_respond(annotator=a, questionnaire=q, answers=answers), people
    )
    assert all(isinstance(o, QuestionnaireResponse) for o in outcomes), outcomes
    rows = ScreeningTally.objects.values_list("question__position", "answer", "count")
    assert sorted(rows, key=str) == sorted(
        [
            (None, "people", PEOPLE),
            (1, "answered", PEOPLE),
            (1, f"choice:{m['1:No']}", PEOPLE),
            (3, "answered", PEOPLE),
            (3, "scale:2", PEOPLE),
        ],
        key=str,
    )


def test_one_person_answering_twice_at_once_is_recorded_once(study):
    q = screening(study)
    m = ids(q)
    person = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    answers = {m["1"]: [str(m["1:No"])], m["3"]: ["2"]}
    outcomes = in_parallel(
        lambda _: questionnaire_respond(annotator=person, questionnaire=q, answers=answers),
        range(4),
    )
    refused = [o for o in outcomes if not isinstance(o, QuestionnaireResponse)]
    assert len(refused) == 3
    assert all(o.messages == ["You have answered this questionnaire already."] for o in refused)
    assert QuestionnaireResponse.objects.count() == 1
    assert ScreeningTally.objects.get(question=None).count == 1


def test_an_answer_waits_for_an_admin_change_and_is_checked_against_it(study):
    """The admin holds the questionnaire (as its has-answers check does) and deletes a
    choice; an answer with that choice, sent meanwhile, waits, then is refused with
    the choice rule's message (never a database error), and nothing is written."""
    import time

    from django.core.exceptions import ValidationError
    from django.db import transaction

    from studies.locks import questionnaire_lock
    from studies.models import Choice, QuestionAnswer

    q = screening(study)
    m = ids(q)
    person = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    answers = {m["1"]: [str(m["1:Yes"])], m["2"]: [str(m["2:Neither"])], m["3"]: ["2"]}

    def work(role):
        if role == "admin":
            with transaction.atomic():
                questionnaire_lock(questionnaire=q, share=False)
                time.sleep(0.5)
                Choice.objects.filter(pk=m["2:Neither"]).delete()
            return "deleted"
        time.sleep(0.1)  # the admin holds the lock by now
        return questionnaire_respond(annotator=person, questionnaire=q, answers=answers)

    admin, answer = in_parallel(work, ["admin", "answer"])
    assert admin == "deleted"
    assert isinstance(answer, ValidationError), answer
    assert answer.message_dict == {f"q{m['2']}": ["This is not one of the question's choices."]}
    assert not QuestionnaireResponse.objects.exists() and not QuestionAnswer.objects.exists()
