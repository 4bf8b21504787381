"""Saving a Likert stage's answers (``judgement_record``, ``judgement_record_item``):
a Judgement without Yes/No and one rating per dimension of the stage, written in the
save's one statement (or the ORM path), revised like any answer; the attention check
of a Likert stage. Each refusal writes nothing."""

import pytest
from django.core.exceptions import ValidationError

from analysis.selectors.judgements import judgements_frame
from studies.exports import ExportOptions
from studies.exports.rows import export_rows
from studies.models import Judgement, LikertDimension, LikertRating, Reflection, Stage
from studies.services import (
    Answer,
    StaleAnswer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
)
from studies.services.judgements import judgement_record_item
from tests.studies.likert_fixtures import make_likert


@pytest.fixture
def likert(loaded_study):
    """Stage 1 rates fluency (5 points, the attention check's dimension) and warmth (a
    slider, "cannot judge" offered); one annotator holds a batch of it."""
    stage = loaded_study.stages.get(position=1)
    make_likert(stage)
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    return assignment_create(annotator=annotator, batch=stage.batches.first())


def ratings_of(judgement) -> dict:
    return {
        r.dimension.name: ("cannot judge" if r.cannot_judge else r.value)
        for r in judgement.ratings.select_related("dimension")
    }


def item(assignment, kind=Reflection.Kind.SYNTHETIC) -> tuple[int, Reflection]:
    for number, rid in enumerate(assignment.order, start=1):
        reflection = Reflection.objects.get(pk=rid)
        if reflection.kind == kind:
            return number, reflection
    raise AssertionError(kind)


def test_an_answer_is_stored_with_its_ratings_and_revised(likert):
    _, reflection = item(likert)
    saved = judgement_record(
        assignment=likert,
        reflection=reflection,
        answer=Answer(coherent=None, ratings={"fluency": 4, "warmth": 70}),
        expected_revision=0,
    )
    assert saved.coherent is None and saved.revision == 1
    assert ratings_of(saved) == {"fluency": 4, "warmth": 70}
    revised = judgement_record(
        assignment=likert,
        reflection=reflection,
        answer=Answer(coherent=None, ratings={"fluency": 2, "warmth": None}),
        expected_revision=1,
    )
    assert revised.pk == saved.pk and revised.revision == 2
    assert ratings_of(revised) == {"fluency": 2, "warmth": "cannot judge"}
    assert LikertRating.objects.count() == 2
    # A save from a page that showed revision 1 is stale: nothing changes.
    with pytest.raises(StaleAnswer):
        judgement_record(
            assignment=likert,
            reflection=reflection,
            answer=Answer(coherent=None, ratings={"fluency": 5, "warmth": 5}),
            expected_revision=1,
        )
    assert ratings_of(Judgement.objects.get()) == {"fluency": 2, "warmth": "cannot judge"}


def test_the_orm_path_writes_the_same(likert):
    """Without the stages' settings the save goes through the ORM path."""
    number, _ = item(likert)
    _, saved = judgement_record_item(
        annotator_id=likert.annotator_id,
        assignment_id=likert.pk,
        number=number,
        answer=Answer(coherent=None, ratings={"fluency": 3, "warmth": 0}),
    )
    _, again = judgement_record_item(
        annotator_id=likert.annotator_id,
        assignment_id=likert.pk,
        number=number,
        answer=Answer(coherent=None, ratings={"fluency": 1, "warmth": 100}),
        expected_revision=1,
    )
    assert again.pk == saved.pk and again.revision == 2
    assert ratings_of(again) == {"fluency": 1, "warmth": 100}


@pytest.mark.parametrize(
    ("answer", "field", "message"),
    [
        (Answer(coherent=None, ratings={"fluency": 4}), "rating_warmth", "Rate warmth."),
        (
            Answer(coherent=None, ratings={"fluency": 6, "warmth": 5}),
            "rating_fluency",
            "A rating of fluency is from 1 to 5.",
        ),
        (
            Answer(coherent=None, ratings={"fluency": None, "warmth": 5}),
            "rating_fluency",
            '"Cannot judge" is not offered for fluency.',
        ),
        (
            Answer(coherent=None, ratings={"fluency": 3, "warmth": 5, "empathy": 2}),
            "ratings",
            "Unknown dimensions: empathy.",
        ),
        (
            Answer(coherent=True, empathy=4, ratings={"fluency": 3, "warmth": 5}),
            "coherent",
            "This stage asks for ratings, not Yes or No.",
        ),
    ],
)
def test_a_wrong_answer_is_refused_and_nothing_is_written(likert, answer, field, message):
    _, reflection = item(likert)
    with pytest.raises(ValidationError) as error:
        judgement_record(assignment=likert, reflection=reflection, answer=answer)
    assert message in error.value.message_dict[field]
    assert not Judgement.objects.exists() and not LikertRating.objects.exists()


def test_ratings_sent_to_a_coherence_stage_are_refused(loaded_study):
    stage = loaded_study.stages.get(position=2)
    annotator = annotators_create(group=loaded_study.groups.get(name="Expert"), count=1)[0]
    assignment = assignment_create(annotator=annotator, batch=stage.batches.first())
    with pytest.raises(ValidationError) as error:
        judgement_record(
            assignment=assignment,
            reflection=Reflection.objects.get(pk=assignment.order[0]),
            answer=Answer(coherent=None, ratings={"fluency": 3}),
        )
    assert "Answer Yes or No." in error.value.message_dict["coherent"]
    assert not Judgement.objects.exists()


def test_two_likert_stages_with_the_same_names_keep_their_own_dimensions(likert, loaded_study):
    """The save's statement accepts the answer for both stages (their dimensions have
    the same names and scales): the ratings go to the assignment's own stage's."""
    second = loaded_study.stages.get(position=2)
    make_likert(second)
    settings = {s.pk: s.answer_settings for s in loaded_study.stages.all()}
    number, _ = item(likert)
    _, saved = judgement_record_item(
        annotator_id=likert.annotator_id,
        assignment_id=likert.pk,
        number=number,
        answer=Answer(coherent=None, ratings={"fluency": 3, "warmth": 40}),
        settings_by_stage=settings,
    )
    stages = set(saved.ratings.values_list("dimension__stage", flat=True))
    assert stages == {likert.stage_id} and saved.ratings.count() == 2


@pytest.mark.parametrize(
    ("fluency", "passed"), [(1, True), (2, False), (None, False)], ids=["1", "2", "cannot-judge"]
)
def test_the_attention_check_of_a_likert_stage(likert, fluency, passed):
    """Passed when the check's candidate is rated within 1–1 on fluency; "cannot
    judge" never passes (offered on fluency for this test)."""
    LikertDimension.objects.filter(name="fluency").update(offers_cannot_judge=True)
    for rid in likert.order:
        reflection = Reflection.objects.get(pk=rid)
        check = reflection.kind == Reflection.Kind.ATTENTION_CHECK
        judgement_record(
            assignment=likert,
            reflection=reflection,
            answer=Answer(
                coherent=None, ratings={"fluency": fluency if check else 4, "warmth": 50}
            ),
        )
    assert assignment_submit(assignment=likert).attention_passed is passed


def test_likert_answers_stay_out_of_the_coherence_analysis_and_export(likert, loaded_study):
    """A study with a Likert stage 1 and a coherence stage 2: the coherence analysis's
    frame and the published coherence export hold stage 2's answers only."""
    for rid in likert.order:
        judgement_record(
            assignment=likert,
            reflection=Reflection.objects.get(pk=rid),
            answer=Answer(coherent=None, ratings={"fluency": 4, "warmth": 50}),
        )
    assignment_submit(assignment=likert)
    stage_2 = loaded_study.stages.get(position=2)
    annotator = annotators_create(group=loaded_study.groups.get(name="Expert"), count=1)[0]
    coherence = assignment_create(annotator=annotator, batch=stage_2.batches.first())
    for rid in coherence.order:
        reflection = Reflection.objects.get(pk=rid)
        check = reflection.kind == Reflection.Kind.ATTENTION_CHECK
        judgement_record(
            assignment=coherence,
            reflection=reflection,
            answer=Answer(coherent=False, categories=frozenset({"off_topic"}))
            if check
            else Answer(coherent=True, empathy=4),
        )
    assignment_submit(assignment=coherence)
    frame = judgements_frame(study_id=loaded_study.pk)
    assert set(frame["stage"]) == {stage_2.name} and len(frame) == len(coherence.order) - 1
    _header, *rows = export_rows(
        study=loaded_study, options=ExportOptions(), instrument=Stage.Instrument.COHERENCE
    )
    assert len(rows) == len(coherence.order) - 1  # the attention check is not published
    assert {row[1] for row in rows} == {stage_2.name}
    assert Judgement.objects.coherence().count() == len(coherence.order)


def test_a_likert_stage_without_dimensions_takes_no_answer(loaded_study):
    stage = loaded_study.stages.get(position=1)
    Stage.objects.filter(pk=stage.pk).update(instrument=Stage.Instrument.LIKERT)
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    assignment = assignment_create(annotator=annotator, batch=stage.batches.first())
    with pytest.raises(ValidationError) as error:
        judgement_record(
            assignment=assignment,
            reflection=Reflection.objects.get(pk=assignment.order[0]),
            answer=Answer(coherent=None),
        )
    assert error.value.message_dict["ratings"] == ["This stage has no dimensions to rate yet."]
    assert not Judgement.objects.exists()
