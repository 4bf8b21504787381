"""Coding free-text error descriptions into a codebook (the qualitative phase of a
two-phase study): a study's codes, its coders, and each coder's coding of a
description (a judgement with an ``error_description``).

A coding is either *uninformative* (the description says nothing specific) with no
codes, or carries one or more codes of the coder's study; the coding service checks
both and that the judgement belongs to the study. Each coder codes independently:
one coding per (judgement, coder), never overwritten by another coder. The study's
primary coder (by default its first) is the one the analysis reports (the report's
``descriptions`` block).
"""

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Q, Subquery

from ..limits import SHORT_TEXT_MAX_LENGTH, text_cap
from .study import SLUG_REGEX, Study
from .work import Judgement


class Code(models.Model):
    """An entry of a study's codebook. The slug never changes once used (it names the
    code in exports and the report); label, definition and example may be refined."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="codes")
    slug = models.CharField(
        max_length=64, help_text="Never changes once used. Lower-case, digits, _."
    )
    label = models.CharField(max_length=100)
    definition = models.TextField(blank=True, max_length=SHORT_TEXT_MAX_LENGTH)
    example = models.TextField(
        blank=True,
        max_length=SHORT_TEXT_MAX_LENGTH,
        help_text="A description that carries this code.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "label"]
        constraints = [
            models.UniqueConstraint(fields=["study", "slug"], name="code_slug_unique"),
            models.UniqueConstraint(fields=["study", "label"], name="code_label_unique"),
            models.CheckConstraint(condition=Q(slug__regex=SLUG_REGEX), name="code_slug_format"),
            *(
                text_cap("code", field, SHORT_TEXT_MAX_LENGTH)
                for field in ("definition", "example")
            ),
        ]

    def __str__(self) -> str:
        return self.label


#: The primary coder comes first: the one marked primary, else the study's first coder.
PRIMARY_FIRST = ("-is_primary", "added_at", "pk")


class CoderQuerySet(models.QuerySet):
    def primary(self, study) -> "Coder | None":
        """The study's primary coder: the one marked primary, else its first coder."""
        return self.filter(study=study).order_by(*PRIMARY_FIRST).first()

    def primary_pk(self) -> Subquery:
        """``primary``'s pk for the study of each row of an outer Coder query (to
        annotate a list with one query)."""
        return Subquery(
            Coder.objects.filter(study=OuterRef("study")).order_by(*PRIMARY_FIRST).values("pk")[:1]
        )


class Coder(models.Model):
    """A staff user coding a study's descriptions. At most one is primary."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="coders")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="coding_roles"
    )
    is_primary = models.BooleanField(
        default=False, help_text="The analysis reports this coder's codes."
    )
    added_at = models.DateTimeField(auto_now_add=True)

    objects = CoderQuerySet.as_manager()

    class Meta:
        ordering = ["study", "added_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="coder_unique"),
            models.UniqueConstraint(
                fields=["study"], condition=Q(is_primary=True), name="coder_one_primary"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.study.slug})"


class DescriptionCoding(models.Model):
    """One coder's coding of one description."""

    judgement = models.ForeignKey(Judgement, on_delete=models.CASCADE, related_name="codings")
    coder = models.ForeignKey(Coder, on_delete=models.CASCADE, related_name="codings")
    codes = models.ManyToManyField(Code, blank=True, related_name="codings")
    uninformative = models.BooleanField(
        default=False, help_text="The description says nothing specific (no codes)."
    )
    coded_at = models.DateTimeField()

    class Meta:
        ordering = ["judgement", "coder"]
        constraints = [
            models.UniqueConstraint(fields=["judgement", "coder"], name="coding_unique"),
        ]

    def __str__(self) -> str:
        return f"judgement {self.judgement_id} by {self.coder}"
