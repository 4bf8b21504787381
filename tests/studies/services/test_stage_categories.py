"""The error categories a stage offers (a subset of its study's), and a stage whose
categories come from coding, closed to annotators until its scheme is marked final."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from studies.errors import ErrorCode
from studies.models import Assignment, Code, ErrorCategory, Judgement, Stage, Study
from studies.protocol import NO_ANSWER_FREE_TEXT
from studies.selectors import (
    StageStatus,
    annotator_stage_states,
    stage_categories,
    study_stage_categories,
)
from studies.services import (
    Answer,
    StageLocked,
    annotators_create,
    assignment_claim,
    consent_version_current,
    judgement_record,
    study_create,
)
from studies.services.coding_categories import codes_to_categories, coding_next_stage
from studies.services.stages import stage_scheme_mark_final
from tests.factories import StaffUserFactory

T0 = timezone.now().replace(microsecond=0)


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    loaded_study.refresh_from_db()
    return loaded_study


def consented(study):
    (annotator,) = annotators_create(group=study.groups.get(name="Layperson"), count=1)
    annotator.consented_version, annotator.consented_at = consent_version_current(study=study), T0
    annotator.save()
    return annotator


def slugs(categories) -> list[str]:
    return [c.slug for c in categories]


def catching(study) -> ErrorCategory:
    return study.categories.get(catches_attention_check=True)


def test_a_stage_without_a_choice_offers_every_category_of_its_study(study):
    stage = study.stages.get(position=1)
    assert slugs(stage_categories(stage=stage)) == slugs(study.categories.all())
    assert len(slugs(study.categories.all())) == 5


def test_a_stage_offers_its_chosen_categories_and_the_attention_check_s(study):
    stage = study.stages.get(position=2)
    chosen = study.categories.exclude(catches_attention_check=True).order_by("order")[:1]
    stage.categories.set(chosen)
    offered = stage_categories(stage=stage)
    assert set(slugs(offered)) == {chosen[0].slug, catching(study).slug}
    # Display order of the study, and the other stage keeps them all.
    assert slugs(offered) == [c for c in slugs(study.categories.all()) if c in slugs(offered)]
    by_stage = study_stage_categories(study_id=study.pk)
    assert by_stage[stage.pk] == offered
    assert len(by_stage[study.stages.get(position=1).pk]) == 5


def test_an_answer_with_a_category_the_stage_does_not_offer_is_refused(open_study):
    stage = open_study.stages.get(position=1)
    kept = open_study.categories.exclude(catches_attention_check=True).order_by("order")
    stage.categories.set(kept[:1])
    refused = kept[1]
    annotator = consented(open_study)
    assignment = assignment_claim(annotator=annotator)
    reflection = assignment.batch.reflections.get(pk=assignment.order[0])
    with pytest.raises(ValidationError) as exc:
        judgement_record(
            assignment=assignment,
            reflection=reflection,
            answer=Answer(False, frozenset({refused.slug})),
        )
    assert exc.value.message_dict["categories"] == [f"Unknown error categories: {refused.slug}."]
    assert not Judgement.objects.exists()
    judgement_record(
        assignment=assignment,
        reflection=reflection,
        answer=Answer(False, frozenset({kept[0].slug})),
    )
    assert Judgement.objects.count() == 1


def test_the_database_refuses_a_category_of_another_study(study):
    other = study_create(slug="other", title="Other", stages=[("Only", T0 - T0)], groups=["G"])
    stage = study.stages.get(position=1)
    foreign = other.categories.first()
    with pytest.raises(IntegrityError, match="own study"), transaction.atomic():
        stage.categories.add(foreign)
    assert not stage.categories.exists()


def test_a_stage_awaiting_its_scheme_refuses_claims_until_marked_final(open_study):
    stage = open_study.stages.get(position=1)
    Stage.objects.filter(pk=stage.pk).update(categories_from_coding=True)
    annotator = consented(open_study)
    states = annotator_stage_states(annotator=annotator)
    assert states[0].status == StageStatus.AWAITING_SCHEME
    with pytest.raises(StageLocked) as exc:
        assignment_claim(annotator=annotator)
    assert exc.value.code == ErrorCode.STAGE_SCHEME_NOT_FINAL
    assert str(exc.value) == (
        "Stage 1 opens once the researchers have finalised its error categories. "
        "Please come back later."
    )
    assert not Assignment.objects.exists()

    researcher = StaffUserFactory()
    stage_scheme_mark_final(stage=stage, by=researcher)
    stage.refresh_from_db()
    assert stage.scheme_final_by == researcher
    assert stage.scheme_final_at is not None
    assert annotator_stage_states(annotator=annotator)[0].status == StageStatus.OPEN
    assert assignment_claim(annotator=annotator).stage == stage


def test_marking_final_is_refused_where_there_is_no_scheme_or_it_is_final(study):
    researcher = StaffUserFactory()
    stage = study.stages.get(position=2)
    with pytest.raises(ValidationError) as exc:
        stage_scheme_mark_final(stage=stage, by=researcher)
    assert exc.value.messages == [
        "GPT-3 stage: its categories do not come from coding, so it has no scheme to mark "
        "final (it opens as usual)."
    ]
    stage.refresh_from_db()
    assert stage.scheme_final_at is None
    Stage.objects.filter(pk=stage.pk).update(categories_from_coding=True)
    first = stage_scheme_mark_final(stage=stage, by=researcher)
    with pytest.raises(ValidationError, match="marked final already"):
        stage_scheme_mark_final(stage=stage, by=StaffUserFactory())
    stage.refresh_from_db()
    assert (stage.scheme_final_at, stage.scheme_final_by) == (
        first.scheme_final_at,
        researcher,
    )


def test_a_free_text_stage_cannot_take_its_categories_from_coding(study):
    stage = study.stages.get(position=1)
    stage.no_answer = NO_ANSWER_FREE_TEXT
    stage.categories_from_coding = True
    with pytest.raises(ValidationError) as exc:
        stage.full_clean()
    assert exc.value.messages == [
        "Only a stage that asks for error categories can take its categories from coding."
    ]


@pytest.fixture
def two_phase(study):
    """Stage 1 asks for descriptions; two codes with definitions."""
    Stage.objects.filter(study=study, position=1).update(no_answer=NO_ANSWER_FREE_TEXT)
    for slug in ("lost_context", "too_vague"):
        Code.objects.create(study=study, slug=slug, label=slug.title(), definition=f"{slug}.")
    return study


def test_codes_become_the_next_stage_s_categories_and_close_it(two_phase):
    stage = coding_next_stage(study=two_phase)
    assert stage.position == 2
    created = codes_to_categories(codes=list(two_phase.codes.all()), study=two_phase, stage=stage)
    stage.refresh_from_db()
    assert set(stage.categories.all()) == set(created)
    assert stage.categories_from_coding and stage.awaits_scheme
    assert set(slugs(stage_categories(stage=stage))) == {
        "lost_context",
        "too_vague",
        catching(two_phase).slug,
    }
    # The first stage keeps all of the study's categories (it asks for none).
    assert len(stage_categories(stage=two_phase.stages.get(position=1))) == 7


def test_codes_for_a_stage_asking_no_categories_change_nothing(two_phase):
    stage = two_phase.stages.get(position=1)
    with pytest.raises(ValidationError) as exc:
        codes_to_categories(codes=list(two_phase.codes.all()), study=two_phase, stage=stage)
    assert exc.value.messages == ["GPT-2 stage asks for no error categories: it cannot offer them."]
    assert two_phase.categories.count() == 5
    stage.refresh_from_db()
    assert not stage.categories_from_coding
