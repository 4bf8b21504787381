"""What each group is paid for a stage: per batch or per hour, in one currency, with
the least hourly rate the researcher wants everyone to earn (the report's pay block
reads it against the recorded working times)."""

from decimal import Decimal

from django.db import models
from django.db.models import Q

from .stages import Stage
from .study import AnnotatorGroup


class StagePay(models.Model):
    """A group's pay for a stage."""

    class Unit(models.TextChoices):
        BATCH = "batch", "per batch"
        HOUR = "hour", "per hour"

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="pay")
    group = models.ForeignKey(AnnotatorGroup, on_delete=models.CASCADE, related_name="stage_pay")
    unit = models.CharField(max_length=5, choices=Unit.choices, default=Unit.BATCH)
    amount = models.DecimalField(
        max_digits=9,
        decimal_places=2,
        help_text="Paid per submitted batch, or per hour of working time (a batch's time "
        "runs from its claim to its submission).",
    )
    currency = models.CharField(
        max_length=3, help_text='The ISO 4217 code, e.g. "GBP", "USD", "EUR".'
    )
    minimum_hourly_rate = models.DecimalField(
        "least hourly rate",
        max_digits=9,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="In the same currency: the report gives the share of batches paid per "
        "batch that earned less an hour (e.g. a platform's or a country's minimum).",
    )

    class Meta:
        ordering = ["stage", "group__name"]
        verbose_name = "group's pay"
        verbose_name_plural = "groups' pay"
        constraints = [
            models.UniqueConstraint(fields=["stage", "group"], name="stage_pay_unique"),
            models.CheckConstraint(condition=Q(amount__gt=Decimal(0)), name="stage_pay_positive"),
            models.CheckConstraint(
                condition=Q(currency__regex=r"^[A-Z]{3}$"), name="stage_pay_currency_code"
            ),
            models.CheckConstraint(
                condition=Q(minimum_hourly_rate__isnull=True)
                | Q(minimum_hourly_rate__gte=Decimal(0)),
                name="stage_pay_minimum_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group.name}: {self.amount} {self.currency} {self.get_unit_display()}"
