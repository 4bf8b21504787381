"""The Likert instrument: a stage's dimensions, each rated on points or a slider, and
the ratings of one answer (``Judgement``) on them.

A Likert stage's answer to a candidate is a ``Judgement`` without the coherence
protocol's fields (``coherent`` null) holding one ``LikertRating`` per dimension of
the stage, so batches, revisions, expiry and review work as for the coherence
protocol. What the database cannot check across tables (a rating within its
dimension's scale, every dimension rated, "cannot judge" only where offered) the
services check before writing (``LikertDimension.rating_problem``).
"""

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Case, F, Func, Q, Value, When
from django.db.models.functions import Coalesce
from django.db.models.lookups import Exact

from ..columns import SLIDER_SCALE
from ..limits import SHORT_TEXT_MAX_LENGTH, text_cap
from ..protocol import (
    LIKERT_POINTS_MAX,
    LIKERT_POINTS_MIN,
    SLIDER_MAX,
    SLIDER_MIN,
    likert_attention_pass_default,
    likert_scale_range,
)
from ..validators import validate_likert_labels
from .stages import Stage
from .study import SLUG_REGEX
from .work import Judgement


def _labels_length():
    return Func(F("labels"), function="jsonb_array_length", output_field=models.IntegerField())


class LikertDimension(models.Model):
    """One thing a Likert stage rates each candidate on (e.g. fluency), in order."""

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="dimensions")
    position = models.PositiveSmallIntegerField(help_text="1, 2, …: the order on the panel.")
    name = models.CharField(
        max_length=50,
        help_text="A short name, unique in the stage: lower-case letters, digits and "
        'underscores, e.g. "fluency" (the exports\' dimension column).',
    )
    statement = models.TextField(
        max_length=SHORT_TEXT_MAX_LENGTH,
        help_text='What annotators rate, e.g. "The response is fluent and grammatical."',
    )
    points = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text=f"{LIKERT_POINTS_MIN} to {LIKERT_POINTS_MAX} points, rated 1 … n. Empty: a "
        f"slider from {SLIDER_MIN} to {SLIDER_MAX}.",
    )
    labels = models.JSONField(
        help_text="One label per point from 1 to n (the two ends not empty, the others may "
        'be ""), or a slider\'s two end labels: ["poor", "", "", "", "excellent"].',
    )
    offers_cannot_judge = models.BooleanField(
        '"cannot judge" offered',
        default=False,
        help_text='Annotators may answer "cannot judge" instead of a rating (counted, and '
        "left out of the statistics).",
    )
    checks_attention = models.BooleanField(
        "attention check dimension",
        default=False,
        help_text="The stage's off-topic candidate passes the attention check when rated "
        "within the passing ratings on this dimension. One per stage.",
    )
    attention_pass_min = models.SmallIntegerField(
        "passing ratings from",
        null=True,
        blank=True,
        help_text="Empty: the lowest point (a slider: 0 to 20).",
    )
    attention_pass_max = models.SmallIntegerField("passing ratings to", null=True, blank=True)

    class Meta:
        ordering = ["stage", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["stage", "position"], name="likert_dimension_position_unique"
            ),
            models.UniqueConstraint(fields=["stage", "name"], name="likert_dimension_name_unique"),
            models.UniqueConstraint(
                fields=["stage"],
                condition=Q(checks_attention=True),
                name="likert_dimension_one_attention_check",
            ),
            models.CheckConstraint(
                condition=Q(position__gte=1), name="likert_dimension_position_positive"
            ),
            models.CheckConstraint(
                condition=Q(name__regex=SLUG_REGEX), name="likert_dimension_name_format"
            ),
            models.CheckConstraint(
                condition=~Q(statement=""), name="likert_dimension_statement_not_empty"
            ),
            models.CheckConstraint(
                condition=Q(points__isnull=True)
                | Q(points__gte=LIKERT_POINTS_MIN, points__lte=LIKERT_POINTS_MAX),
                name="likert_dimension_points_range",
            ),
            models.CheckConstraint(
                condition=Q(Exact(_labels_length(), Coalesce(F("points"), Value(2)))),
                name="likert_dimension_label_per_point",
            ),
            models.CheckConstraint(
                condition=Q(checks_attention=False)
                | Q(
                    attention_pass_min__isnull=False,
                    attention_pass_max__isnull=False,
                    attention_pass_min__lte=F("attention_pass_max"),
                    attention_pass_min__gte=Case(
                        When(points__isnull=True, then=Value(SLIDER_MIN)), default=Value(1)
                    ),
                    attention_pass_max__lte=Coalesce(F("points"), Value(SLIDER_MAX)),
                ),
                name="likert_dimension_attention_pass_in_scale",
            ),
            models.CheckConstraint(
                condition=Q(checks_attention=True)
                | Q(attention_pass_min__isnull=True, attention_pass_max__isnull=True),
                name="likert_dimension_attention_pass_only_for_the_check",
            ),
            text_cap("likert_dimension", "statement", SHORT_TEXT_MAX_LENGTH),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.stage})"

    @property
    def scale(self) -> str:
        """The published format's ``scale``: the number of points, or ``slider``."""
        return SLIDER_SCALE if self.points is None else str(self.points)

    @property
    def scale_range(self) -> tuple[int, int]:
        return likert_scale_range(self.points)

    @property
    def attention_pass(self) -> tuple[int, int] | None:
        """The ratings that pass the attention check (inclusive), on the check's
        dimension only."""
        if not self.checks_attention:
            return None
        return (self.attention_pass_min, self.attention_pass_max)

    def clean(self) -> None:
        """The labels fit the scale; the check's passing ratings default to the lowest
        point (a slider: 0–20) and lie within the scale."""
        problems = {}
        points_ok = self.points is None or LIKERT_POINTS_MIN <= self.points <= LIKERT_POINTS_MAX
        if not points_ok:
            problems["points"] = (
                f"Give {LIKERT_POINTS_MIN} to {LIKERT_POINTS_MAX} points, or none for a slider."
            )
        else:
            try:
                validate_likert_labels(self.labels, self.points)
            except ValidationError as error:
                problems["labels"] = error.messages
        if self.checks_attention and points_ok:
            default = likert_attention_pass_default(self.points)
            if self.attention_pass_min is None:
                self.attention_pass_min = default[0]
            if self.attention_pass_max is None:
                self.attention_pass_max = max(default[1], self.attention_pass_min)
            low, high = self.scale_range
            if not low <= self.attention_pass_min <= self.attention_pass_max <= high:
                problems["attention_pass_max"] = (
                    f"The passing ratings must lie within the scale ({low} to {high}), "
                    "the first not above the last."
                )
        elif not self.checks_attention:
            self.attention_pass_min = self.attention_pass_max = None
        if problems:
            raise ValidationError(problems)

    def rating_problem(self, value: int | None, cannot_judge: bool) -> str | None:
        """Why a rating on this dimension is refused (None: it is valid). The save and
        the annotation form ask here (``likert_answer_encode``); the import reads the
        same scale (``likert_scale_range``) and names the row and column."""
        if cannot_judge:
            if not self.offers_cannot_judge:
                return f'"Cannot judge" is not offered for {self.name}.'
            return (
                None
                if value is None
                else f'Give a rating or "cannot judge" for {self.name}, not both.'
            )
        low, high = self.scale_range
        if value is None:
            return f"Rate {self.name}."
        if not low <= value <= high:
            return f"A rating of {self.name} is from {low} to {high}."
        return None

    def rating_text(self, value: int | None, cannot_judge: bool) -> str:
        """A rating as annotators and researchers read it: "fluency: 4 of 5 (good)",
        "warmth: 70 of 100", "clarity: cannot judge"."""
        if cannot_judge:
            return f"{self.name}: cannot judge"
        high = self.scale_range[1]
        label = self.labels[value - 1] if self.points is not None and 1 <= value <= high else ""
        return f"{self.name}: {value} of {high}" + (f" ({label})" if label else "")

    def passes_attention(self, value: int | None, cannot_judge: bool) -> bool:
        """Whether a rating of the attention check's candidate passes ("cannot judge"
        never does)."""
        bounds = self.attention_pass
        return (
            bounds is not None
            and not cannot_judge
            and value is not None
            and (bounds[0] <= value <= bounds[1])
        )


class LikertRating(models.Model):
    """One answer's rating on one dimension: a value, or "cannot judge"."""

    judgement = models.ForeignKey(Judgement, on_delete=models.CASCADE, related_name="ratings")
    dimension = models.ForeignKey(LikertDimension, on_delete=models.PROTECT, related_name="ratings")
    value = models.SmallIntegerField(null=True, blank=True)
    cannot_judge = models.BooleanField(default=False)

    class Meta:
        ordering = ["judgement", "dimension__position"]
        constraints = [
            models.UniqueConstraint(fields=["judgement", "dimension"], name="likert_rating_unique"),
            models.CheckConstraint(
                condition=Q(cannot_judge=True, value__isnull=True)
                | Q(
                    cannot_judge=False,
                    value__isnull=False,
                    value__gte=min(SLIDER_MIN, 1),
                    value__lte=max(SLIDER_MAX, LIKERT_POINTS_MAX),
                ),
                name="likert_rating_value_or_cannot_judge",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dimension.name}: {'cannot judge' if self.cannot_judge else self.value}"
