"""A Likert stage for tests: two dimensions, one on points and one on a slider."""

from studies.models import LikertDimension, Stage

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
