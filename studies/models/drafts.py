"""Drafts: the choices an annotator made on an item before saving it, kept on the
server as they change so that a closed tab, a crash or another device does not lose
them. A draft is never an answer: no judgement, count, export or analysis reads this
table; the item page reads it only to fill the form again."""

from django.db import models
from django.db.models.functions import Cast, Length
from django.db.models.lookups import LessThanOrEqual

from .work import Assignment

#: The most characters a draft's fields may hold as JSON text: the form's two free-text
#: fields at their cap, with room for the rest (checked by the service and the database).
DRAFT_MAX_CHARS = 20_000


class ItemDraft(models.Model):
    """The form's fields of item ``number`` (1-based, in the assignment's shuffled
    order) as last sent by the page: field name → list of values. ``base_revision`` is
    the revision of the saved answer the page showed (0: none yet), so a draft made
    before the latest save is stale and never shown."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="drafts")
    number = models.PositiveSmallIntegerField()
    base_revision = models.PositiveIntegerField()
    fields = models.JSONField()
    # The page's clock when it sent the draft (ms since 1970; null: not given): a draft
    # that arrives after a later one of the same page (a beacon overtaking a request)
    # does not replace it.
    sent_ms = models.BigIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assignment", "number"], name="one_draft_per_item"),
            models.CheckConstraint(condition=models.Q(number__gte=1), name="draft_number_from_1"),
            models.CheckConstraint(
                condition=LessThanOrEqual(
                    Length(Cast("fields", models.TextField())), DRAFT_MAX_CHARS
                ),
                name="draft_fields_capped",
            ),
        ]

    def __str__(self) -> str:
        return f"Draft of item {self.number} of assignment {self.assignment_id}"
