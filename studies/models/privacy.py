"""The log of personal-data purges: who deleted what, and when."""

from django.conf import settings
from django.db import models

from .study import Study


class PersonalDataPurge(models.Model):
    """One purge of a closed study (``studies.services.privacy.study_purge_personal_data``).
    ``deleted`` counts what went, by what it was ({"e-mail addresses": 12, ...}); the
    values themselves are never logged."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="purges")
    purged_at = models.DateTimeField()
    purged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    purged_by_name = models.CharField(
        max_length=150, blank=True, help_text="Kept if the account is deleted later."
    )
    deleted = models.JSONField(default=dict)

    class Meta:
        ordering = ["-purged_at"]
        verbose_name = "personal-data purge"

    def __str__(self) -> str:
        return f"{self.study.slug} purged {self.purged_at:%Y-%m-%d %H:%M}"
