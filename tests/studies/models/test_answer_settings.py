"""What a stage asks after Yes and after No (``Stage.no_answer``, ``empathy_after_yes``):
the rules (``answer_encode``), the database, the item panel (plain form, htmx, no
JavaScript), the review page, the tutorial, the API, the attention check and the lock
once annotation started. Every refusal: its message, and nothing written."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from studies.admin.forms import StageForm
from studies.models import Assignment, Judgement, Reflection, Stage, Study
from studies.protocol import (
    DESCRIPTION_MAX_LENGTH,
    DESCRIPTION_MIN_LENGTH,
    NO_ANSWER_BOTH,
    NO_ANSWER_CATEGORIES,
    NO_ANSWER_FREE_TEXT,
    AnswerSettings,
)
from studies.services import (
    Answer,
    annotators_create,
    answer_encode,
    assignment_claim,
    assignment_submit,
    consent_version_current,
    judgement_record,
)

HX = {"HTTP_HX_REQUEST": "true"}
BITS = {"malformed": 1, "dialogue_contradicting": 0, "off_topic": 2}
FREE = AnswerSettings(no_answer=NO_ANSWER_FREE_TEXT)
BOTH = AnswerSettings(no_answer=NO_ANSWER_BOTH)
CATEGORIES = AnswerSettings(no_answer=NO_ANSWER_CATEGORIES)
NOTHING_AFTER_YES = AnswerSettings(empathy_after_yes=False)
DESCRIPTION = "It says the client hates his job; he never said so."


def refused(answer: Answer, settings: AnswerSettings, **kwargs) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as caught:
        answer_encode(answer=answer, categories=BITS, settings=settings, **kwargs)
    return caught.value.message_dict


# --- the rules ---------------------------------------------------------------------------


def test_free_text_no_is_a_trimmed_description_without_categories():
    encoded = answer_encode(
        answer=Answer(coherent=False, description=f"  {DESCRIPTION}\n"),
        categories=BITS,
        settings=FREE,
    )
    assert encoded.error_description == DESCRIPTION
    assert encoded.error_flags == 0 and encoded.most_evident_bit is None


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ("", "Describe in your own words what is wrong with it."),
        ("   \n\t ", "Describe in your own words what is wrong with it."),
        ("Too short", f"at least {DESCRIPTION_MIN_LENGTH} characters (you wrote 9)"),
        ("x" * (DESCRIPTION_MAX_LENGTH + 1), f"at most {DESCRIPTION_MAX_LENGTH:,} are allowed"),
    ],
)
def test_free_text_refuses_missing_short_and_overlong_descriptions(description, message):
    errors = refused(Answer(coherent=False, description=description), FREE)
    assert message in errors["description"][0]


def test_exactly_the_limits_are_accepted():
    for text in ("x" * DESCRIPTION_MIN_LENGTH, "x" * DESCRIPTION_MAX_LENGTH):
        encoded = answer_encode(
            answer=Answer(coherent=False, description=text), categories=BITS, settings=FREE
        )
        assert encoded.error_description == text


def test_free_text_refuses_categories_and_a_most_evident_error():
    errors = refused(
        Answer(coherent=False, categories=frozenset({"off_topic"}), description=DESCRIPTION),
        FREE,
    )
    assert errors["categories"] == [
        "This stage asks for a description of what is wrong, not error categories."
    ]
    errors = refused(
        Answer(coherent=False, most_evident="off_topic", description=DESCRIPTION), FREE
    )
    assert "not error categories" in errors["categories"][0]


def test_categories_only_stage_refuses_a_description():
    errors = refused(
        Answer(coherent=False, categories=frozenset({"off_topic"}), description=DESCRIPTION),
        CATEGORIES,
    )
    assert errors["description"] == ["This stage does not ask for a description."]


def test_both_needs_categories_and_takes_an_optional_description():
    chosen = frozenset({"off_topic"})
    without = answer_encode(
        answer=Answer(coherent=False, categories=chosen), categories=BITS, settings=BOTH
    )
    assert without.error_description == ""
    with_text = answer_encode(
        answer=Answer(coherent=False, categories=chosen, description=DESCRIPTION),
        categories=BITS,
        settings=BOTH,
    )
    assert with_text.error_description == DESCRIPTION and with_text.error_flags == 1 << 2
    assert refused(Answer(coherent=False, description=DESCRIPTION), BOTH)["categories"] == [
        "Choose at least one error category."
    ]
    short = refused(Answer(coherent=False, categories=chosen, description="short"), BOTH)
    assert "at least" in short["description"][0]


def test_a_description_is_never_taken_with_yes():
    errors = refused(Answer(coherent=True, empathy=4, description=DESCRIPTION), BOTH)
    assert errors["description"] == [
        "A description of what is wrong is only asked when the answer is No."
    ]


def test_nothing_after_yes_when_the_stage_asks_nothing():
    encoded = answer_encode(
        answer=Answer(coherent=True), categories=BITS, settings=NOTHING_AFTER_YES
    )
    assert encoded.empathy is None
    assert refused(Answer(coherent=True, empathy=4), NOTHING_AFTER_YES)["empathy"] == [
        "This stage asks nothing after Yes."
    ]
    assert "Choose how much" in refused(Answer(coherent=True), CATEGORIES)["empathy"][0]


def test_imported_descriptions_need_text_but_not_the_typing_minimum():
    encoded = answer_encode(
        answer=Answer(coherent=False, description="Odd."),
        categories=BITS,
        settings=FREE,
        require_complete=False,
    )
    assert encoded.error_description == "Odd."
    errors = refused(
        Answer(coherent=False, description="x" * (DESCRIPTION_MAX_LENGTH + 1)),
        FREE,
        require_complete=False,
    )
    assert "at most" in errors["description"][0]


# --- the database ------------------------------------------------------------------------


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN, batches_per_stage=2, tutorial_intro="How it works."
    )
    loaded_study.refresh_from_db()
    return loaded_study


def _ready(client, study):
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    annotator.consented_version = consent_version_current(study=study)
    annotator.consented_at = timezone.now()
    annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    client.get(f"/i/{annotator.access_token}/")
    return annotator


def _set_first_stage(study, **settings):
    Stage.objects.filter(study=study, position=1).update(**settings)


@pytest.fixture
def free_text_assignment(client, open_study):
    _set_first_stage(open_study, no_answer=NO_ANSWER_FREE_TEXT)
    return assignment_claim(annotator=_ready(client, open_study))


def _url(assignment, number):
    return reverse("studies:item", args=["pilot", assignment.pk, number])


def _written(assignment) -> int:
    return Judgement.objects.filter(assignment=assignment).count()


def test_database_refuses_a_description_with_yes_and_an_overlong_one(free_text_assignment):
    reflection_id = free_text_assignment.order[0]
    for values in (
        {"coherent": True, "error_description": DESCRIPTION},
        {"coherent": False, "error_description": "x" * (DESCRIPTION_MAX_LENGTH + 1)},
        {"coherent": False, "error_description": f" {DESCRIPTION} "},
    ):
        with pytest.raises(IntegrityError), transaction.atomic():
            Judgement.objects.create(
                assignment=free_text_assignment, reflection_id=reflection_id, **values
            )
    assert _written(free_text_assignment) == 0


def test_database_refuses_an_unknown_no_answer_setting(open_study):
    with pytest.raises(IntegrityError), transaction.atomic():
        Stage.objects.filter(study=open_study, position=1).update(no_answer="essay")


# --- the item panel ----------------------------------------------------------------------


def test_free_text_panel_shows_a_text_box_and_no_categories(client, free_text_assignment):
    html = client.get(_url(free_text_assignment, 1)).content.decode()
    assert 'name="description"' in html and "In your own words" in html
    assert 'name="categories"' not in html and 'name="most_evident"' not in html
    assert 'name="empathy"' in html  # the stage still asks the rating after Yes


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
def test_free_text_answer_saves_the_description(client, free_text_assignment, headers):
    response = client.post(
        _url(free_text_assignment, 1),
        {"coherent": "no", "description": f"  {DESCRIPTION}  ", "form_mode": "plain"},
        **headers,
    )
    assert response.status_code in (200, 302)
    judgement = Judgement.objects.get(assignment=free_text_assignment)
    assert judgement.error_description == DESCRIPTION and judgement.error_flags == 0
    review = client.get(reverse("studies:review", args=["pilot", free_text_assignment.pk]))
    assert DESCRIPTION in review.content.decode()
    assert "No" in review.content.decode()


@pytest.mark.parametrize("headers", [{}, HX], ids=["plain", "htmx"])
@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"coherent": "no", "description": "   "}, "Describe in your own words"),
        ({"coherent": "no", "description": "short"}, "at least 10 characters"),
        (
            {"coherent": "no", "description": "x" * (DESCRIPTION_MAX_LENGTH + 1)},
            "at most 2,000",
        ),
        (
            {"coherent": "no", "description": DESCRIPTION, "categories": ["off_topic"]},
            "not error categories",
        ),
    ],
    ids=["blank", "short", "overlong", "categories"],
)
def test_free_text_bad_answers_get_a_message_and_write_nothing(
    client, free_text_assignment, headers, data, message
):
    response = client.post(_url(free_text_assignment, 1), {**data, "form_mode": "js"}, **headers)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert _written(free_text_assignment) == 0


def test_categories_stage_refuses_a_description_with_a_message(client, open_study):
    assignment = assignment_claim(annotator=_ready(client, open_study))
    number = next(
        n
        for n, rid in enumerate(assignment.order, start=1)
        if Reflection.objects.get(pk=rid).kind != Reflection.Kind.ATTENTION_CHECK
    )
    response = client.post(
        _url(assignment, number),
        {"coherent": "no", "categories": ["off_topic"], "description": DESCRIPTION},
        **HX,
    )
    assert response.status_code == 422
    assert "This stage does not ask for a description." in response.content.decode()
    assert _written(assignment) == 0


def test_stages_that_differ_are_told_apart_by_the_save(client, open_study):
    """Stage 1 asks for a description, stage 2 for categories: the form cannot know the
    stage, the save checks the answer against the assignment's own stage."""
    _set_first_stage(open_study, no_answer=NO_ANSWER_FREE_TEXT)
    assignment = assignment_claim(annotator=_ready(client, open_study))
    assert assignment.stage.position == 1
    refused_answer = {"coherent": "no", "categories": ["off_topic"], "form_mode": "js"}
    response = client.post(_url(assignment, 1), refused_answer, **HX)
    assert response.status_code == 422
    assert "not error categories" in response.content.decode()
    assert _written(assignment) == 0
    response = client.post(
        _url(assignment, 1), {"coherent": "no", "description": DESCRIPTION}, **HX
    )
    assert response.status_code in (200, 204)
    assert Judgement.objects.get(assignment=assignment).error_description == DESCRIPTION


def test_both_stage_takes_categories_and_an_optional_description(client, open_study):
    _set_first_stage(open_study, no_answer=NO_ANSWER_BOTH)
    assignment = assignment_claim(annotator=_ready(client, open_study))
    html = client.get(_url(assignment, 1)).content.decode()
    assert 'name="description"' in html and 'name="categories"' in html and "optional" in html
    response = client.post(
        _url(assignment, 1),
        {"coherent": "no", "categories": ["malformed"], "description": DESCRIPTION},
        **HX,
    )
    assert response.status_code == 200
    judgement = Judgement.objects.get(assignment=assignment)
    assert judgement.error_description == DESCRIPTION and judgement.error_flags != 0


def test_nothing_after_yes_panel_and_save(client, open_study):
    _set_first_stage(open_study, empathy_after_yes=False)
    assignment = assignment_claim(annotator=_ready(client, open_study))
    html = client.get(_url(assignment, 1)).content.decode()
    assert 'name="empathy"' not in html and "rating (after Yes)" not in html
    response = client.post(_url(assignment, 1), {"coherent": "yes", "empathy": "4"}, **HX)
    assert response.status_code == 422
    assert "This stage asks nothing after Yes." in response.content.decode()
    assert _written(assignment) == 0
    response = client.post(_url(assignment, 1), {"coherent": "yes"}, **HX)
    assert response.status_code == 200
    assert Judgement.objects.get(assignment=assignment).empathy is None
    review = client.get(reverse("studies:review", args=["pilot", assignment.pk]))
    assert "no rating" not in review.content.decode()


def test_without_javascript_switching_to_yes_drops_the_typed_description(
    client, free_text_assignment
):
    response = client.post(
        _url(free_text_assignment, 1),
        {"coherent": "yes", "empathy": "3", "description": DESCRIPTION, "form_mode": "plain"},
    )
    assert response.status_code == 302
    judgement = Judgement.objects.get(assignment=free_text_assignment)
    assert judgement.coherent and judgement.error_description == ""


def test_tutorial_of_a_free_text_stage_leaves_the_categories_out(client, open_study):
    _set_first_stage(open_study, no_answer=NO_ANSWER_FREE_TEXT)
    _ready(client, open_study)
    html = client.get(reverse("studies:tutorial", args=["pilot"])).content.decode()
    assert "describe in your own words" in html
    assert "Dialogue-contradicting" not in html
    Stage.objects.filter(study=open_study).update(no_answer=NO_ANSWER_CATEGORIES)
    assert (
        "Dialogue-contradicting"
        in client.get(reverse("studies:tutorial", args=["pilot"])).content.decode()
    )


# --- attention check, API, admin lock ----------------------------------------------------


def test_attention_check_of_a_free_text_stage_is_passed_by_no_alone(open_study, client):
    _set_first_stage(open_study, no_answer=NO_ANSWER_FREE_TEXT)
    assignment = assignment_claim(annotator=_ready(client, open_study))
    for rid in assignment.order:
        reflection = Reflection.objects.get(pk=rid)
        if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
            answer = Answer(coherent=False, description=DESCRIPTION)
        else:
            answer = Answer(coherent=True, empathy=4)
        judgement_record(assignment=assignment, reflection=reflection, answer=answer)
    assignment_submit(assignment=Assignment.objects.get(pk=assignment.pk))
    assert Assignment.objects.get(pk=assignment.pk).attention_passed is True


def test_judgement_record_follows_the_stage(open_study, client):
    _set_first_stage(open_study, no_answer=NO_ANSWER_FREE_TEXT)
    assignment = assignment_claim(annotator=_ready(client, open_study))
    reflection = Reflection.objects.get(pk=assignment.order[0])
    with pytest.raises(ValidationError) as caught:
        judgement_record(
            assignment=assignment,
            reflection=reflection,
            answer=Answer(coherent=False, categories=frozenset({"off_topic"})),
        )
    assert "not error categories" in caught.value.message_dict["categories"][0]
    assert _written(assignment) == 0


def test_api_lists_the_description(admin_client, open_study, client):
    _set_first_stage(open_study, no_answer=NO_ANSWER_FREE_TEXT)
    assignment = assignment_claim(annotator=_ready(client, open_study))
    judgement_record(
        assignment=assignment,
        reflection=Reflection.objects.get(pk=assignment.order[0]),
        answer=Answer(coherent=False, description=DESCRIPTION),
    )
    response = admin_client.get("/api/studies/pilot/judgements/?status=in_progress")
    assert response.status_code == 200
    (row,) = response.json()["results"]
    assert row["error_description"] == DESCRIPTION and row["categories"] == []


def test_stage_answer_settings_are_locked_once_annotation_started(open_study, client):
    stage = Stage.objects.get(study=open_study, position=1)
    fields = {
        "study": open_study.pk,
        "position": 1,
        "name": stage.name,
        "min_wait": "3 days",
        "no_answer": NO_ANSWER_FREE_TEXT,
        "empathy_after_yes": "on",
        "join_key": stage.join_key,
        "completion_code": stage.completion_code,
    }
    assert StageForm(fields, instance=stage).is_valid()  # no assignment yet
    assignment_claim(annotator=_ready(client, open_study))
    stage = Stage.objects.get(pk=stage.pk)  # the first form changed its instance in memory
    form = StageForm(fields, instance=stage)
    assert not form.is_valid()
    assert "cannot change: annotators already work in this stage" in str(form.errors)
    stage.refresh_from_db()
    assert stage.no_answer == NO_ANSWER_CATEGORIES
