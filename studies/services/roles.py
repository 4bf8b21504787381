"""Granting, changing and withdrawing a user's role in a study, each recorded in the
study's audit list (``StudyRoleEvent``). Who may call these (the study's owners and
superusers) is the interfaces' check (``studies.permissions``, ``Capability.GOVERN``).
A study keeps at least one owner once it has one."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..locks import studies_locked
from ..models import Role, Study, StudyRole, StudyRoleEvent
from ..permissions import user_is_active_staff, user_study_roles_forget

LAST_OWNER = (
    "A study keeps at least one owner: make another user its owner before {username} "
    "stops being one."
)


def role_user_by_name(name: str):
    """The active staff account whose username (or, failing that, e-mail address) is
    ``name``: a ValidationError saying so when there is none, or several."""
    name = name.strip()
    users = get_user_model().objects.filter(is_active=True, is_staff=True)
    by_username = list(users.filter(username=name)[:1])
    if by_username:
        return by_username[0]
    by_email = list(users.filter(email__iexact=name)[:2]) if "@" in name else []
    if len(by_email) == 1:
        return by_email[0]
    if len(by_email) > 1:
        raise ValidationError(
            f"Several staff accounts have the e-mail address {name}: give the username.",
            code="role_user_ambiguous",
        )
    raise ValidationError(
        f"No active staff account has the username or e-mail address {name!r}. An "
        "administrator creates accounts (and marks them staff) in Users.",
        code="role_user_unknown",
    )


def _record(*, study: Study, user, role: str, previous: str, by, note: str = "") -> None:
    StudyRoleEvent.objects.create(
        study=study,
        user=user,
        username=user.get_username(),
        role=role,
        previous_role=previous,
        by=by,
        by_username=by.get_username() if by is not None else "",
        at=timezone.now(),
        note=note,
    )


def _owners_other_than(study: Study, user) -> bool:
    return StudyRole.objects.filter(study=study, role=Role.OWNER).exclude(user=user).exists()


def study_role_grant(*, study: Study, user, role: str, by, note: str = "") -> StudyRole:
    """Give ``user`` ``role`` in ``study`` (replacing the role they had), recorded as
    done by ``by``. Refused, changing nothing, for an account that is not active staff,
    for the role they already have, and for taking the last owner's ownership away.
    Locks the study row (so two owners cannot demote each other at once)."""
    role = Role(role)
    if not user_is_active_staff(user):
        raise ValidationError(
            f"{user.get_username()} is not an active staff account, so could not sign in "
            "to use a role: an administrator marks the account active and staff first.",
            code="role_user_not_staff",
        )
    with transaction.atomic():
        studies_locked().get(pk=study.pk)
        current = StudyRole.objects.filter(study=study, user=user).first()
        previous = current.role if current is not None else ""
        if previous == role:
            raise ValidationError(
                f"{user.get_username()} is already {role.label.lower()} of this study.",
                code="role_unchanged",
            )
        if previous == Role.OWNER and not _owners_other_than(study, user):
            raise ValidationError(
                LAST_OWNER.format(username=user.get_username()), code="role_last_owner"
            )
        grant, _ = StudyRole.objects.update_or_create(
            study=study,
            user=user,
            defaults={"role": role, "granted_by": by, "granted_at": timezone.now()},
        )
        _record(study=study, user=user, role=role, previous=previous, by=by, note=note)
    user_study_roles_forget(user)
    return grant


def study_role_withdraw(*, study: Study, user, by) -> None:
    """Take ``user``'s role in ``study`` away, recorded as done by ``by``. Refused,
    changing nothing, when they have none or are its last owner."""
    with transaction.atomic():
        studies_locked().get(pk=study.pk)
        current = StudyRole.objects.filter(study=study, user=user).first()
        if current is None:
            raise ValidationError(
                f"{user.get_username()} has no role in this study.", code="role_missing"
            )
        if current.role == Role.OWNER and not _owners_other_than(study, user):
            raise ValidationError(
                LAST_OWNER.format(username=user.get_username()), code="role_last_owner"
            )
        current.delete()
        _record(study=study, user=user, role="", previous=current.role, by=by)
    user_study_roles_forget(user)


def study_created_by(*, study: Study, user) -> None:
    """Record ``user`` as the creator of the new ``study`` and make them its owner (a
    superuser without a role needs none, but is recorded all the same, so every study
    created in the admin starts with an owner)."""
    Study.objects.filter(pk=study.pk).update(created_by=user)
    study.created_by = user
    StudyRole.objects.create(
        study=study, user=user, role=Role.OWNER, granted_by=user, granted_at=timezone.now()
    )
    _record(study=study, user=user, role=Role.OWNER, previous="", by=user, note="created the study")
    user_study_roles_forget(user)
