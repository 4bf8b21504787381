"""A study's error categories: what a "No" can name, each stored as one bit of a
judgement and written as a column of its own in the exports."""

from collections.abc import Collection, Sequence

from django.db import models
from django.db.models import Q

from ..columns import RESERVED_COLUMN_NAMES
from ..limits import SHORT_TEXT_MAX_LENGTH, text_cap
from .study import MAX_CATEGORY_BIT, SLUG_REGEX, Study


class ErrorCategory(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="categories")
    slug = models.CharField(
        max_length=64, help_text="Column name in exports, e.g. off_topic. Lower-case, digits, _."
    )
    label = models.CharField(max_length=100)
    definition = models.TextField(
        max_length=SHORT_TEXT_MAX_LENGTH, help_text="Short definition shown next to the checkbox."
    )
    order = models.PositiveSmallIntegerField(default=0, help_text="Display order.")
    bit = models.PositiveSmallIntegerField(
        help_text="Storage position in judgements (0–30). Never change it once annotated."
    )
    example_reflection = models.TextField(
        blank=True,
        max_length=SHORT_TEXT_MAX_LENGTH,
        help_text="Tutorial: a response to the worked example showing this error.",
    )
    example_explanation = models.TextField(blank=True, max_length=SHORT_TEXT_MAX_LENGTH)
    catches_attention_check = models.BooleanField(
        default=False,
        help_text="A No with this category passes the attention check (in stages that "
        "ask for categories; elsewhere a No alone passes).",
    )

    class Meta:
        verbose_name_plural = "error categories"
        ordering = ["study", "order", "bit"]
        constraints = [
            models.UniqueConstraint(fields=["study", "slug"], name="category_slug_unique"),
            models.UniqueConstraint(fields=["study", "label"], name="category_label_unique"),
            models.UniqueConstraint(fields=["study", "bit"], name="category_bit_unique"),
            models.CheckConstraint(
                condition=Q(slug__regex=SLUG_REGEX), name="category_slug_format"
            ),
            # A category's slug is an export column of its own: never another column's
            # name, or the export's columns would shift.
            models.CheckConstraint(
                condition=~Q(slug__in=sorted(RESERVED_COLUMN_NAMES)),
                name="category_slug_not_an_export_column",
            ),
            models.CheckConstraint(
                condition=Q(bit__lte=MAX_CATEGORY_BIT), name="category_bit_range"
            ),
            *(
                text_cap("category", field, SHORT_TEXT_MAX_LENGTH)
                for field in ("definition", "example_reflection", "example_explanation")
            ),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def mask(self) -> int:
        return 1 << self.bit


def stage_offered_categories(
    categories: Sequence[ErrorCategory], chosen: Collection[int]
) -> list[ErrorCategory]:
    """The error categories a stage offers, from all of its study's ``categories`` (in
    display order) and the ids the stage chose (``Stage.categories``): the chosen ones,
    or all of them when it chose none; and, always, those that catch the attention
    check, so a No with one of them can pass the check in every stage."""
    if not chosen:
        return list(categories)
    return [c for c in categories if c.pk in chosen or c.catches_attention_check]
