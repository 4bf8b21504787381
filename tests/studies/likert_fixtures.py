"""A Likert stage for tests: two dimensions, one on points and one on a slider."""

from django.utils import timezone

from studies.models import Assignment, LikertDimension, Reflection, Stage
from studies.services import Answer, annotators_create, assignment_create, judgement_record

FIVE = ["poor", "", "", "", "excellent"]


def make_likert(stage: Stage) -> None:
    Stage.objects.filter(pk=stage.pk).update(instrument=Stage.Instrument.LIKERT)
    LikertDimension.objects.create(
        stage=stage,
        position=1,
        name="fluency",
        statement="The response is fluent.",
        points=5,
        labels=FIVE,
        checks_attention=True,
        attention_pass_min=1,
        attention_pass_max=1,
    )
    LikertDimension.objects.create(
        stage=stage,
        position=2,
        name="warmth",
        statement="The response is warm.",
        points=None,
        labels=["cold", "warm"],
        offers_cannot_judge=True,
    )


def answer_both_stages(loaded_study):
    """Stage 1 asks the coherence protocol, stage 2 rates; one annotator submitted a
    batch of each."""
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    first, second = loaded_study.stages.order_by("position")
    make_likert(second)
    for stage, answer in (
        (first, Answer(coherent=True, empathy=4)),
        (second, Answer(coherent=None, ratings={"fluency": 4, "warmth": None})),
    ):
        assignment = assignment_create(annotator=annotator, batch=stage.batches.first())
        for rid in assignment.order:
            judgement_record(
                assignment=assignment, reflection=Reflection.objects.get(pk=rid), answer=answer
            )
        Assignment.objects.filter(pk=assignment.pk).update(
            status=Assignment.Status.SUBMITTED, submitted_at=timezone.now()
        )
    return loaded_study
