"""Who may do what in which study: a role per (study, user), and the audit list of
every grant, change and withdrawal. What each role allows is ``studies.permissions``
(``ROLE_CAPABILITIES``); granting and withdrawing is ``studies.services.roles``."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from .study import Study


class Role(models.TextChoices):
    """A user's part in one study, from the most to the least they may do."""

    OWNER = "owner", "Owner"
    COLLABORATOR = "collaborator", "Collaborator"
    ANALYST = "analyst", "Analyst"
    CODER = "coder", "Coder"
    VIEWER = "viewer", "Viewer"


class StudyRole(models.Model):
    """``user``'s role in ``study``: one per user and study."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="roles")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_roles"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["study", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="study_role_unique"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="study_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.get_role_display()} of {self.study.slug})"


class StudyRoleEvent(models.Model):
    """One line of a study's audit list: ``user`` was given ``role`` (after
    ``previous_role``; empty: none) or lost it (``role`` empty), by ``by`` at ``at``.
    Names are kept as text too, so the list stays readable after an account is
    deleted."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="role_events")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150)
    role = models.CharField(max_length=16, blank=True, choices=Role.choices)
    previous_role = models.CharField(max_length=16, blank=True, choices=Role.choices)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    by_username = models.CharField(
        max_length=150, blank=True, help_text="Empty: the system (the migration to roles)."
    )
    at = models.DateTimeField(default=timezone.now)
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["study", "-at", "-pk"]
        verbose_name = "role change"
        constraints = [
            models.CheckConstraint(
                condition=Q(role__in=["", *Role.values]), name="study_role_event_role_valid"
            ),
            models.CheckConstraint(
                condition=Q(previous_role__in=["", *Role.values]),
                name="study_role_event_previous_role_valid",
            ),
            models.CheckConstraint(
                condition=~Q(role=models.F("previous_role")), name="study_role_event_changes"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.username}: {self.previous_role or '–'} → {self.role or '–'}"
