"""Behaviour of the write services in studies/services/."""

from datetime import timedelta

import pytest
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.utils import timezone

from studies.errors import ErrorCode
from studies.models import (
    Annotator,
    Assignment,
    Batch,
    ConsentVersion,
    Judgement,
    Reflection,
    Study,
)
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_shuffled_order,
    consent_version_sync,
    judgement_record,
    study_category_bits,
    study_create,
)


def messages(excinfo, key=NON_FIELD_ERRORS) -> str:
    return " ".join(excinfo.value.message_dict[key])


def batch_of(study, position, external_id):
    return Batch.objects.get(
        stage__study=study, stage__position=position, context__external_id=external_id
    )


@pytest.fixture
def layperson(study):
    return study.groups.get(name="Layperson")


@pytest.fixture
def annotator(layperson):
    (annotator,) = annotators_create(group=layperson, count=1)
    return annotator


@pytest.fixture
def assignment(loaded_study, annotator):
    return assignment_create(annotator=annotator, batch=batch_of(loaded_study, 1, "dlg-1"))


@pytest.fixture
def bits(study):
    return study_category_bits(study_id=study.pk)


@pytest.fixture
def synthetic(assignment):
    return assignment.batch.reflections.filter(kind=Reflection.Kind.SYNTHETIC).order_by("id")[0]


# --- study_create --------------------------------------------------------------------


def test_new_study_gets_the_five_default_categories(study):
    assert sorted(study.categories.values_list("slug", flat=True)) == [
        "dialogue_contradicting",
        "malformed",
        "off_topic",
        "on_topic_but_unverifiable",
        "parroting",
    ]
    assert sorted(study.categories.values_list("bit", flat=True)) == [0, 1, 2, 3, 4]


def test_new_study_numbers_its_stages_in_the_given_order(study):
    assert list(study.stages.values_list("position", "name")) == [
        (1, "GPT-2 stage"),
        (2, "GPT-3 stage"),
    ]


def test_new_study_groups_use_their_name_as_pseudonym_prefix(study):
    assert sorted(study.groups.values_list("name", "pseudonym_prefix")) == [
        ("Expert", "Expert"),
        ("Layperson", "Layperson"),
    ]


def test_new_study_with_consent_texts_starts_at_consent_version_1(study):
    version = study.consent_versions.get()
    assert version.number == 1
    assert version.information_sheet == "What the study is about."
    assert version.consent_text == "I agree to take part."


def test_new_study_without_consent_texts_has_no_consent_version(db):
    study = study_create(slug="draft", title="Draft")
    assert not study.consent_versions.exists()


# --- consent_version_sync ------------------------------------------------------------


def test_editing_the_information_sheet_creates_consent_version_2(study):
    study.information_sheet = "What the study is about, and now also what it pays."
    study.save()
    version = consent_version_sync(study=study)
    assert version.number == 2
    assert version.information_sheet == "What the study is about, and now also what it pays."
    assert list(study.consent_versions.values_list("number", flat=True)) == [2, 1]


def test_editing_the_consent_text_creates_a_new_version(study):
    study.consent_text = "I agree to take part and to the publication of my answers."
    study.save()
    assert consent_version_sync(study=study).number == 2


def test_unchanged_consent_texts_create_no_version(study):
    study.title = "Pilot study (renamed)"
    study.save()
    assert consent_version_sync(study=study) is None
    assert consent_version_sync(study=study) is None
    assert study.consent_versions.count() == 1


def test_an_earlier_consent_keeps_pointing_at_the_version_accepted(study, annotator):
    v1 = study.consent_versions.get()
    consented_at = timezone.now()
    Annotator.objects.filter(pk=annotator.pk).update(
        consented_version=v1, consented_at=consented_at
    )
    study.information_sheet = "A rewritten information sheet."
    study.save()
    v2 = consent_version_sync(study=study)

    annotator.refresh_from_db()
    assert annotator.consented_version_id == v1.pk != v2.pk
    assert annotator.consented_at == consented_at
    v1.refresh_from_db()
    assert v1.information_sheet == "What the study is about."


def test_emptied_consent_text_creates_no_version(study):
    study.consent_text = "   "
    study.save()
    assert consent_version_sync(study=study) is None
    assert ConsentVersion.objects.count() == 1


# --- annotators_create ---------------------------------------------------------------


def test_annotators_are_named_prefix_and_number(layperson):
    annotators = annotators_create(group=layperson, count=3)
    assert [a.pseudonym for a in annotators] == ["Layperson 1", "Layperson 2", "Layperson 3"]
    assert [a.number for a in annotators] == [1, 2, 3]
    assert {a.study_id for a in annotators} == {layperson.study_id}


def test_annotator_numbering_continues_after_the_groups_highest_number(study, layperson):
    annotators_create(group=layperson, count=2)
    # A gap (e.g. number 7 created by hand) must not be reused or collided with.
    Annotator.objects.create(study=study, group=layperson, number=7, pseudonym="Layperson 7")
    annotators = annotators_create(group=layperson, count=2)
    assert [a.pseudonym for a in annotators] == ["Layperson 8", "Layperson 9"]


def test_annotator_numbering_is_per_group(study, layperson):
    annotators_create(group=layperson, count=3)
    (expert,) = annotators_create(group=study.groups.get(name="Expert"), count=1)
    assert expert.pseudonym == "Expert 1"


def test_each_new_annotator_gets_its_own_access_token(layperson):
    annotators = annotators_create(group=layperson, count=5)
    assert len({a.access_token for a in annotators}) == 5


def test_up_to_1000_annotators_can_be_created_at_once(layperson):
    annotators = annotators_create(group=layperson, count=1000)
    assert annotators[-1].pseudonym == "Layperson 1000"
    assert Annotator.objects.count() == 1000


@pytest.mark.parametrize("count", [0, -1, 1001])
def test_annotator_count_outside_1_to_1000_is_rejected_and_nothing_written(layperson, count):
    annotators_create(group=layperson, count=1)
    with pytest.raises(ValidationError) as excinfo:
        annotators_create(group=layperson, count=count)
    assert "Create between 1 and 1000 annotators at a time." in messages(excinfo, "count")
    assert list(Annotator.objects.values_list("pseudonym", flat=True)) == ["Layperson 1"]


# --- assignment_create ---------------------------------------------------------------


def test_assignment_order_is_a_permutation_of_the_batch_reflections(assignment):
    batch_ids = list(assignment.batch.items.values_list("reflection_id", flat=True))
    assert len(assignment.order) == len(batch_ids) == 4
    assert sorted(assignment.order) == sorted(batch_ids)


def test_assignment_order_is_stable(assignment):
    stored = Assignment.objects.get(pk=assignment.pk).order
    recomputed = assignment_shuffled_order(batch=assignment.batch, annotator=assignment.annotator)
    assert recomputed == stored
    assert assignment_shuffled_order(batch=assignment.batch, annotator=assignment.annotator) == (
        stored
    )


def test_assignment_orders_differ_between_annotators(loaded_study, layperson):
    Study.objects.filter(pk=loaded_study.pk).update(overlap_k=6)
    batch = batch_of(loaded_study, 1, "dlg-1")
    in_position_order = list(batch.items.values_list("reflection_id", flat=True))
    orders = [
        tuple(assignment_create(annotator=a, batch=batch).order)
        for a in annotators_create(group=layperson, count=6)
    ]
    assert len(set(orders)) > 1
    # Shuffled, not the import order for everyone.
    assert any(list(order) != in_position_order for order in orders)


def test_new_assignment_is_assigned_at_the_given_time(loaded_study, annotator):
    now = timezone.now()
    assignment = assignment_create(
        annotator=annotator, batch=batch_of(loaded_study, 1, "dlg-1"), now=now
    )
    assert assignment.status == Assignment.Status.ASSIGNED
    assert assignment.assigned_at == now
    assert assignment.started_at is None
    assert assignment.submitted_at is None


def test_first_stage_assignment_is_not_recurring(assignment):
    assert assignment.is_recurring is False


def _judge_human(assignment):
    human = assignment.batch.reflections.get(kind=Reflection.Kind.HUMAN)
    judgement_record(assignment=assignment, reflection=human, answer=Answer(True, empathy=4))


def test_assignment_is_recurring_when_the_annotator_judged_the_context_in_stage_1(
    loaded_study, annotator
):
    _judge_human(assignment_create(annotator=annotator, batch=batch_of(loaded_study, 1, "dlg-1")))
    second = assignment_create(annotator=annotator, batch=batch_of(loaded_study, 2, "dlg-1"))
    assert second.is_recurring is True


def test_a_context_assigned_but_never_judged_is_not_recurring(loaded_study, annotator):
    assignment_create(annotator=annotator, batch=batch_of(loaded_study, 1, "dlg-1"))
    second = assignment_create(annotator=annotator, batch=batch_of(loaded_study, 2, "dlg-1"))
    assert second.is_recurring is False


def test_assignment_is_not_recurring_for_a_context_new_to_the_annotator(loaded_study, annotator):
    _judge_human(assignment_create(annotator=annotator, batch=batch_of(loaded_study, 1, "dlg-1")))
    second = assignment_create(annotator=annotator, batch=batch_of(loaded_study, 2, "dlg-2"))
    assert second.is_recurring is False


def test_recurrence_is_per_annotator(loaded_study, layperson):
    first, second = annotators_create(group=layperson, count=2)
    _judge_human(assignment_create(annotator=first, batch=batch_of(loaded_study, 1, "dlg-1")))
    later = assignment_create(annotator=second, batch=batch_of(loaded_study, 2, "dlg-1"))
    assert later.is_recurring is False


# --- judgement_record ----------------------------------------------------------------


def test_yes_with_empathy_is_saved(assignment, synthetic):
    judgement = judgement_record(
        assignment=assignment,
        reflection=synthetic,
        answer=Answer(coherent=True, empathy=4, seconds_spent=12.5),
    )
    judgement.refresh_from_db()
    assert judgement.coherent is True
    assert judgement.empathy == 4
    assert judgement.error_flags == 0
    assert judgement.most_evident_bit is None
    assert judgement.seconds_spent == 12.5


def test_no_with_two_categories_and_most_evident_error_is_saved(assignment, synthetic, bits):
    judgement = judgement_record(
        assignment=assignment,
        reflection=synthetic,
        answer=Answer(
            coherent=False,
            categories=frozenset({"malformed", "parroting"}),
            most_evident="parroting",
        ),
    )
    judgement.refresh_from_db()
    assert judgement.error_flags == (1 << bits["malformed"]) | (1 << bits["parroting"])
    assert judgement.most_evident_bit == bits["parroting"]
    assert judgement.empathy is None


def test_single_category_becomes_the_most_evident_error(assignment, synthetic, bits):
    judgement = judgement_record(
        assignment=assignment,
        reflection=synthetic,
        answer=Answer(coherent=False, categories=frozenset({"off_topic"})),
    )
    judgement.refresh_from_db()
    assert judgement.error_flags == 1 << bits["off_topic"]
    assert judgement.most_evident_bit == bits["off_topic"]


@pytest.mark.parametrize(
    ("answer", "field", "message"),
    [
        (
            Answer(coherent=False, categories=frozenset({"malformed", "off_topic"})),
            "most_evident",
            "Choose the most evident error among the chosen categories.",
        ),
        (
            Answer(
                coherent=False,
                categories=frozenset({"malformed", "off_topic"}),
                most_evident="parroting",
            ),
            "most_evident",
            "The most evident error must be one of the chosen categories.",
        ),
        (
            Answer(coherent=False, categories=frozenset({"off_topic"}), empathy=2),
            "empathy",
            "The agreement rating is only asked when the answer is Yes.",
        ),
        (
            Answer(coherent=False, categories=frozenset({"off_topic", "boring"})),
            "categories",
            "Unknown error categories: boring.",
        ),
        (
            Answer(coherent=False),
            "categories",
            "Choose at least one error category.",
        ),
        (
            Answer(coherent=True),
            "empathy",
            "Choose how much you agree with the statement.",
        ),
    ],
    ids=[
        "no-with-two-categories-needs-most-evident",
        "most-evident-not-among-ticked",
        "empathy-on-no",
        "unknown-category",
        "no-without-category",
        "yes-without-empathy",
    ],
)
def test_incomplete_or_inconsistent_answer_is_rejected_and_nothing_written(
    assignment, synthetic, answer, field, message
):
    with pytest.raises(ValidationError) as excinfo:
        judgement_record(assignment=assignment, reflection=synthetic, answer=answer)
    assert message in messages(excinfo, field)
    assert not Judgement.objects.exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED
    assert assignment.started_at is None


def test_rejected_revision_leaves_the_saved_answer_unchanged(assignment, synthetic):
    judgement_record(assignment=assignment, reflection=synthetic, answer=Answer(True, empathy=5))
    with pytest.raises(ValidationError):
        judgement_record(
            assignment=assignment,
            reflection=synthetic,
            answer=Answer(False, categories=frozenset({"malformed", "off_topic"})),
        )
    judgement = Judgement.objects.get()
    assert (judgement.coherent, judgement.empathy, judgement.error_flags) == (True, 5, 0)


def test_saving_the_same_answer_twice_leaves_one_row(assignment, synthetic):
    answer = Answer(coherent=True, empathy=3)
    first = judgement_record(assignment=assignment, reflection=synthetic, answer=answer)
    second = judgement_record(assignment=assignment, reflection=synthetic, answer=answer)
    assert first.pk == second.pk
    assert Judgement.objects.count() == 1


def test_saving_again_revises_the_answer(assignment, synthetic, bits):
    judgement_record(assignment=assignment, reflection=synthetic, answer=Answer(True, empathy=3))
    judgement_record(
        assignment=assignment,
        reflection=synthetic,
        answer=Answer(False, categories=frozenset({"parroting"})),
    )
    judgement = Judgement.objects.get()
    assert judgement.coherent is False
    assert judgement.empathy is None
    assert judgement.error_flags == 1 << bits["parroting"]
    assert judgement.most_evident_bit == bits["parroting"]


@pytest.mark.parametrize(
    ("status", "shown"),
    [
        (Assignment.Status.SUBMITTED, "submitted"),
        (Assignment.Status.EXPIRED, "expired"),
        (Assignment.Status.REJECTED, "rejected"),
    ],
)
def test_answers_on_a_closed_assignment_are_rejected(assignment, synthetic, status, shown):
    judgement_record(assignment=assignment, reflection=synthetic, answer=Answer(True, empathy=3))
    other = assignment.batch.reflections.get(kind=Reflection.Kind.HUMAN)
    now = timezone.now()
    closed = {
        Assignment.Status.SUBMITTED: {"submitted_at": now},
        Assignment.Status.EXPIRED: {"expired_at": now},
        Assignment.Status.REJECTED: {"rejected_at": now, "rejection_reason": "Spam."},
    }[status]
    Assignment.objects.filter(pk=assignment.pk).update(status=status, **closed)

    for reflection, answer in [
        (synthetic, Answer(True, empathy=1)),  # revising an existing answer
        (other, Answer(True, empathy=1)),  # a new answer
    ]:
        with pytest.raises(ValidationError) as excinfo:
            judgement_record(assignment=assignment, reflection=reflection, answer=answer)
        expected = (
            "The time for this batch ran out; answers can no longer be changed."
            if status == Assignment.Status.EXPIRED
            else f"This batch is {shown}; answers can no longer be changed."
        )
        assert excinfo.value.messages == [expected]
    judgement = Judgement.objects.get()
    assert (judgement.reflection_id, judgement.empathy) == (synthetic.pk, 3)


def test_first_answer_moves_the_assignment_to_in_progress(assignment, synthetic):
    now = assignment.assigned_at + timedelta(minutes=2)
    judgement_record(
        assignment=assignment, reflection=synthetic, answer=Answer(True, empathy=3), now=now
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS
    assert assignment.started_at == now


def test_later_answers_keep_the_start_time(assignment, synthetic):
    started = assignment.assigned_at + timedelta(minutes=2)
    judgement_record(
        assignment=assignment, reflection=synthetic, answer=Answer(True, empathy=3), now=started
    )
    human = assignment.batch.reflections.get(kind=Reflection.Kind.HUMAN)
    judgement_record(
        assignment=assignment,
        reflection=human,
        answer=Answer(True, empathy=5),
        now=started + timedelta(minutes=3),
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS
    assert assignment.started_at == started
    assert Judgement.objects.count() == 2


def test_judgement_record_refuses_a_stale_revision_and_writes_nothing(loaded_study):
    from studies.models import Annotator, Batch, Judgement
    from studies.services import Answer, annotators_create, assignment_create, judgement_record

    (annotator,) = annotators_create(group=loaded_study.groups.get(name="Expert"), count=1)
    annotator = Annotator.objects.get(pk=annotator.pk)
    batch = Batch.objects.filter(stage__study=loaded_study).first()
    assignment = assignment_create(annotator=annotator, batch=batch)
    reflection = batch.reflections.get(pk=assignment.order[0])
    yes = Answer(coherent=True, empathy=4)
    no = Answer(coherent=False, categories=frozenset({"malformed"}))
    first = judgement_record(
        assignment=assignment, reflection=reflection, answer=yes, expected_revision=0
    )
    assert first.revision == 1
    with pytest.raises(ValidationError) as info:
        judgement_record(
            assignment=assignment, reflection=reflection, answer=no, expected_revision=0
        )
    assert info.value.code == ErrorCode.STALE_ANSWER
    stored = Judgement.objects.get()
    assert (stored.coherent, stored.empathy, stored.revision) == (True, 4, 1)
    # Without an expected revision (the API, imports, older clients) it just saves.
    judgement_record(assignment=assignment, reflection=reflection, answer=no)
    stored.refresh_from_db()
    assert (stored.coherent, stored.revision) == (False, 2)
