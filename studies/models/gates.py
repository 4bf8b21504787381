"""Gated stages: a stage that takes only the items an earlier stage let through.

A ``StageGate`` on a stage names the earlier stage whose judgements decide, the
deciding group (two for the rule comparing groups) and the rule; each item of the
deciding stage is decided once all k ratings of the deciding group(s) are in
(``studies.services.gates``), and its ``GateDecision`` is recorded with the ratings it
used and never changes: a database trigger refuses any change, and removal while the
gated stage has work. The rule's arithmetic is ``studies.protocol.gate_passes``.
"""

from django.db import models
from django.db.models import Q

from ..protocol import (
    GATE_LIKERT_MEAN_AT_LEAST,
    GATE_MAJORITIES_DIFFER,
    GATE_MAJORITY_CATEGORY,
    GATE_MAJORITY_COHERENT,
    GATE_MAJORITY_INCOHERENT,
    GATE_NOT_UNANIMOUS,
    GATE_RULES,
    GATE_SCORE_AT_LEAST,
)
from .categories import ErrorCategory
from .likert import LikertDimension
from .materials import Reflection
from .stages import Stage
from .study import AnnotatorGroup


def possessive(name: str) -> str:
    """``Layperson's``, ``Experts'``."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


class StageGate(models.Model):
    """The rule that lets an earlier stage's items into a stage (``stage``)."""

    class Rule(models.TextChoices):
        MAJORITY_COHERENT = GATE_MAJORITY_COHERENT, "The group's majority said coherent (Yes)"
        MAJORITY_INCOHERENT = GATE_MAJORITY_INCOHERENT, "The group's majority said incoherent (No)"
        MAJORITY_CATEGORY = (
            GATE_MAJORITY_CATEGORY,
            "The group's majority flagged an error category",
        )
        SCORE_AT_LEAST = GATE_SCORE_AT_LEAST, "The coherence score is at least s"
        NOT_UNANIMOUS = GATE_NOT_UNANIMOUS, "The group's raters were not unanimous"
        MAJORITIES_DIFFER = GATE_MAJORITIES_DIFFER, "Two groups' majorities differ"
        LIKERT_MEAN_AT_LEAST = (
            GATE_LIKERT_MEAN_AT_LEAST,
            "A Likert dimension's item mean is at least x",
        )

    stage = models.OneToOneField(
        Stage,
        on_delete=models.CASCADE,
        related_name="gate",
        help_text="The gated stage: it takes only the items the rule lets through.",
    )
    source_stage = models.ForeignKey(
        Stage,
        on_delete=models.PROTECT,
        related_name="gates_fed",
        verbose_name="deciding stage",
        help_text="The earlier stage whose judgements decide (its own reflections become "
        "the gated stage's items).",
    )
    rule = models.CharField(max_length=30, choices=Rule.choices)
    deciding_group = models.ForeignKey(
        AnnotatorGroup,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The group whose judgements decide.",
    )
    other_group = models.ForeignKey(
        AnnotatorGroup,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name="second group",
        help_text="Two groups' majorities differ: the group compared with the deciding one.",
    )
    min_votes = models.PositiveSmallIntegerField(
        "at least n raters",
        null=True,
        blank=True,
        help_text="A majority rule: at least this many of the group's raters gave the "
        "majority's answer (e.g. 2 of 3). Empty: any majority.",
    )
    threshold = models.FloatField(
        "threshold (s or x)",
        null=True,
        blank=True,
        help_text="The coherence score rule: the least number of Yes (s); the Likert rule: "
        "the least item mean (x).",
    )
    category = models.ForeignKey(
        ErrorCategory,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The majority flagged this category rule: the category.",
    )
    dimension = models.ForeignKey(
        LikertDimension,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        help_text="The Likert rule: the deciding stage's dimension.",
    )
    min_passed = models.PositiveSmallIntegerField(
        "least items per context",
        default=1,
        help_text="A context gets a batch in the gated stage only when at least this many "
        "of its items passed.",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(rule__in=GATE_RULES), name="gate_rule_valid"),
            models.CheckConstraint(
                condition=Q(rule=GATE_MAJORITY_CATEGORY, category__isnull=False)
                | (~Q(rule=GATE_MAJORITY_CATEGORY) & Q(category__isnull=True)),
                name="gate_category_for_its_rule",
            ),
            models.CheckConstraint(
                condition=Q(rule=GATE_LIKERT_MEAN_AT_LEAST, dimension__isnull=False)
                | (~Q(rule=GATE_LIKERT_MEAN_AT_LEAST) & Q(dimension__isnull=True)),
                name="gate_dimension_for_its_rule",
            ),
            models.CheckConstraint(
                condition=Q(
                    rule__in=[GATE_SCORE_AT_LEAST, GATE_LIKERT_MEAN_AT_LEAST],
                    threshold__isnull=False,
                )
                | (
                    ~Q(rule__in=[GATE_SCORE_AT_LEAST, GATE_LIKERT_MEAN_AT_LEAST])
                    & Q(threshold__isnull=True)
                ),
                name="gate_threshold_for_its_rule",
            ),
            models.CheckConstraint(
                condition=(
                    Q(rule=GATE_MAJORITIES_DIFFER, other_group__isnull=False)
                    & ~Q(other_group=models.F("deciding_group"))
                )
                | (~Q(rule=GATE_MAJORITIES_DIFFER) & Q(other_group__isnull=True)),
                name="gate_second_group_for_its_rule",
            ),
            models.CheckConstraint(
                condition=Q(min_votes__isnull=True)
                | (
                    Q(min_votes__gte=1)
                    & Q(
                        rule__in=[
                            GATE_MAJORITY_COHERENT,
                            GATE_MAJORITY_INCOHERENT,
                            GATE_MAJORITY_CATEGORY,
                        ]
                    )
                ),
                name="gate_min_votes_for_a_majority",
            ),
            models.CheckConstraint(condition=Q(min_passed__gte=1), name="gate_min_passed_positive"),
            models.CheckConstraint(
                condition=~Q(source_stage=models.F("stage")), name="gate_source_not_itself"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stage.name}: {self.get_rule_display()}"

    def describe(self) -> str:
        """The rule in words, with its settings ("Lay coherence: Laypeople's majority
        said Yes (at least 2 of its raters)"): the exports' ``gate`` column."""
        group = possessive(self.deciding_group.name)
        said = {
            GATE_MAJORITY_COHERENT: f"{group} majority said Yes",
            GATE_MAJORITY_INCOHERENT: f"{group} majority said No",
            GATE_MAJORITY_CATEGORY: f"{group} majority flagged "
            f"{self.category.label if self.category_id else 'a category'}",
            GATE_SCORE_AT_LEAST: f"at least {self.threshold:g} of {group} answers were Yes"
            if self.threshold is not None
            else "",
            GATE_NOT_UNANIMOUS: f"{group} raters were not unanimous",
            GATE_MAJORITIES_DIFFER: f"{group} and "
            f"{possessive(self.other_group.name) if self.other_group_id else 'another group'}"
            " majorities differ",
            GATE_LIKERT_MEAN_AT_LEAST: f"{group} mean "
            f"{self.dimension.name if self.dimension_id else ''} rating was at least "
            f"{self.threshold:g}"
            if self.threshold is not None
            else "",
        }[self.rule]
        if self.min_votes:
            said += f" (at least {self.min_votes} of its raters)"
        return f"{self.source_stage.name}: {said}"

    @property
    def groups_deciding(self) -> list[int]:
        """The ids of the deciding group(s): every one's k ratings decide an item."""
        return [g for g in (self.deciding_group_id, self.other_group_id) if g is not None]


class GateDecision(models.Model):
    """Whether one item of the deciding stage passed a gate: recorded once its ratings
    were all in, with them, and never changed."""

    gate = models.ForeignKey(StageGate, on_delete=models.CASCADE, related_name="decisions")
    reflection = models.ForeignKey(
        Reflection, on_delete=models.PROTECT, related_name="gate_decisions"
    )
    passed = models.BooleanField()
    decided_at = models.DateTimeField()
    #: The judgements that decided (ids), and what the rule read from them: per deciding
    #: group, its raters, Yes answers, votes for the category and mean rating.
    judgements = models.JSONField(default=list)
    summary = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["gate", "reflection"], name="gate_decision_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.gate}: {self.reflection_id} {'passed' if self.passed else 'not passed'}"
