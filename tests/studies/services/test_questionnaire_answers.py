"""Checking questionnaire answers (studies.services.questionnaires): every bad answer
is refused with a message that says what is wrong, and nothing is written; the
database refuses the same rules on raw writes."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from studies.models import QuestionAnswer, QuestionnaireResponse, ScreeningTally
from studies.services import annotators_create
from studies.services.questionnaires import questionnaire_respond
from tests.studies.questionnaire_helpers import after_stage, ids, screening


@pytest.fixture
def setup(study):
    q = screening(study)
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    return q, annotator, ids(q)


def nothing_written():
    return (
        QuestionnaireResponse.objects.count(),
        QuestionAnswer.objects.count(),
        ScreeningTally.objects.count(),
    ) == (0, 0, 0)


def refused(q, annotator, answers) -> dict:
    with pytest.raises(ValidationError) as caught:
        questionnaire_respond(annotator=annotator, questionnaire=q, answers=answers)
    assert nothing_written()
    return caught.value.message_dict


def valid(m, extra=None):
    return {m["1"]: [str(m["1:Yes"])], m["3"]: ["3"], **(extra or {})}


def test_an_answer_to_a_question_of_another_questionnaire_is_refused(setup, study):
    q, annotator, m = setup
    other = after_stage(study, 1).questions.first()
    errors = refused(q, annotator, valid(m, {other.pk: ["1"]}))
    assert errors["__all__"] == [
        "An answer was sent to a question that is not part of this questionnaire (perhaps the "
        "page is out of date): please reload it."
    ]


def test_an_answer_to_a_question_that_does_not_exist_is_refused(setup):
    q, annotator, m = setup
    errors = refused(q, annotator, valid(m, {999_999: ["x"]}))
    assert "not part of this questionnaire" in errors["__all__"][0]


def test_a_choice_of_another_question_is_refused(setup):
    q, annotator, m = setup
    errors = refused(q, annotator, valid(m) | {m["1"]: [str(m["2:Linguistics"])]})
    assert errors == {f"q{m['1']}": ["This is not one of the question's choices."]}


@pytest.mark.parametrize(
    "values, message",
    [
        (["Yes"], "This is not one of the question's choices."),
        (["1", "2"], "Choose one answer only."),
    ],
)
def test_a_malformed_or_double_single_choice_is_refused(setup, values, message):
    q, annotator, m = setup
    if values == ["1", "2"]:
        values = [str(m["1:Yes"]), str(m["1:No"])]
    errors = refused(q, annotator, valid(m) | {m["1"]: values})
    assert errors == {f"q{m['1']}": [message]}


def test_a_choice_sent_twice_is_refused(setup):
    q, annotator, m = setup
    twice = [str(m["2:Linguistics"])] * 2
    errors = refused(q, annotator, valid(m, {m["2"]: twice}))
    assert errors == {f"q{m['2']}": ["A choice was sent twice."]}


@pytest.mark.parametrize("value", ["0", "6", "-1", "three", "2.5"])
def test_a_scale_answer_outside_1_to_5_is_refused(setup, value):
    q, annotator, m = setup
    errors = refused(q, annotator, valid(m) | {m["3"]: [value]})
    assert errors == {f"q{m['3']}": ["Choose a number from 1 to 5."]}


def test_required_questions_left_unanswered_are_each_named(setup):
    q, annotator, m = setup
    errors = refused(q, annotator, {m["4"]: ["   "]})
    assert errors == {
        f"q{m['1']}": ["Please answer this question."],
        f"q{m['3']}": ["Please answer this question."],
    }


def test_a_text_over_its_cap_is_refused(setup):
    q, annotator, m = setup
    errors = refused(q, annotator, valid(m, {m["4"]: ["x" * 2001]}))
    assert errors == {
        f"q{m['4']}": ["Please keep your answer under 2,000 characters (it has 2,001)."]
    }


def test_answering_twice_is_refused_and_the_first_answers_stand(setup):
    q, annotator, m = setup
    questionnaire_respond(annotator=annotator, questionnaire=q, answers=valid(m))
    before = list(QuestionAnswer.objects.values_list("pk", "choice_id", "scale"))
    with pytest.raises(ValidationError) as caught:
        questionnaire_respond(
            annotator=annotator, questionnaire=q, answers={m["1"]: [str(m["1:No"])], m["3"]: ["1"]}
        )
    assert caught.value.messages == ["You have answered this questionnaire already."]
    assert list(QuestionAnswer.objects.values_list("pk", "choice_id", "scale")) == before
    assert not ScreeningTally.objects.exists()


def test_a_questionnaire_of_another_study_is_refused(setup, db):
    from studies.services import study_create

    q, _, m = setup
    elsewhere = study_create(slug="other", title="Other", groups=["Layperson"])
    stranger = annotators_create(group=elsewhere.groups.get(), count=1)[0]
    with pytest.raises(ValidationError) as caught:
        questionnaire_respond(annotator=stranger, questionnaire=q, answers=valid(m))
    assert caught.value.messages == ["This questionnaire belongs to another study."]
    assert nothing_written()


@pytest.mark.parametrize(
    "fields, constraint",
    [
        ({"scale": 6}, "answer_scale_range"),
        ({"scale": 0}, "answer_scale_range"),
        ({"scale": 3, "text": "and a text"}, "answer_one_value"),
        ({}, "answer_one_value"),
        ({"text": " padded"}, "answer_text_trimmed"),
    ],
)
def test_the_database_refuses_what_the_service_refuses(setup, fields, constraint):
    q, annotator, m = setup
    response = QuestionnaireResponse.objects.create(
        questionnaire=q, annotator=annotator, submitted_at=timezone.now()
    )
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        QuestionAnswer.objects.create(response=response, question_id=m["3"], **fields)
    assert not QuestionAnswer.objects.exists()


def test_the_database_refuses_a_second_response(setup):
    q, annotator, _ = setup
    QuestionnaireResponse.objects.create(
        questionnaire=q, annotator=annotator, submitted_at=timezone.now()
    )
    with pytest.raises(IntegrityError, match="questionnaire_response_unique"), transaction.atomic():
        QuestionnaireResponse.objects.create(
            questionnaire=q, annotator=annotator, submitted_at=timezone.now()
        )


def test_the_database_keeps_one_screening_questionnaire_and_a_stage_for_stage_ones(study):
    from studies.models import Questionnaire

    screening(study)
    with pytest.raises(IntegrityError, match="questionnaire_one_screening"), transaction.atomic():
        Questionnaire.objects.create(study=study, name="Again", placement="screening")
    with pytest.raises(IntegrityError, match="questionnaire_placement"), transaction.atomic():
        Questionnaire.objects.create(study=study, name="No stage", placement="after_stage")


def test_a_stage_keeps_its_questionnaire_and_a_questionnaire_goes_with_its_answers(setup, study):
    """(The admin refuses deleting a questionnaire with answers; its row, deleted, takes
    its questions and answers along: RESTRICT only stops a question or choice alone.)"""
    from django.db.models import RestrictedError

    from studies.models import Questionnaire

    q, annotator, m = setup
    questionnaire_respond(annotator=annotator, questionnaire=q, answers=valid(m))
    after_stage(study, 1)
    with pytest.raises(RestrictedError), transaction.atomic():
        study.stages.get(position=1).delete()
    assert Questionnaire.objects.count() == 2
    with pytest.raises(RestrictedError), transaction.atomic():
        q.questions.get(position=1).delete()
    q.delete()
    assert Questionnaire.objects.count() == 1 and not QuestionAnswer.objects.exists()


def test_a_nul_character_in_a_text_answer_is_refused_with_a_message(setup):
    q, annotator, m = setup
    errors = refused(q, annotator, valid(m, {m["4"]: ["I type\x00 slowly"]}))
    assert errors == {
        f"q{m['4']}": [
            "Your answer contains a NUL character, which cannot be saved: please retype it."
        ]
    }


def test_answers_are_written_holding_the_questionnaire_for_share(setup):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    q, annotator, m = setup
    with CaptureQueriesContext(connection) as queries:
        questionnaire_respond(annotator=annotator, questionnaire=q, answers=valid(m))
    sql = [x["sql"] or "" for x in queries.captured_queries]
    lock = next(i for i, s in enumerate(sql) if s.endswith("FOR SHARE"))
    # The questions and choices are read under the lock, then the answers written.
    assert any("studies_choice" in s for s in sql[lock:])
    assert any(s.startswith("INSERT") for s in sql[lock:])


def test_a_clash_with_a_change_made_meanwhile_is_a_message_not_an_error(setup, monkeypatch):
    from studies.services.questionnaires import CHANGED_MEANWHILE

    q, annotator, m = setup

    def clash(*args, **kwargs):
        raise IntegrityError("violates foreign key constraint")

    monkeypatch.setattr(QuestionAnswer.objects, "bulk_create", clash)
    with pytest.raises(ValidationError) as caught:
        questionnaire_respond(annotator=annotator, questionnaire=q, answers=valid(m))
    assert caught.value.messages == [CHANGED_MEANWHILE]
    assert nothing_written()
