"""Who may do what, and in which study: one rule for the admin, the pages, the exports,
the API and the commands.

Access to a study comes from a **role** in it (``StudyRole``, granted on the study's
Roles page): owner, collaborator, analyst, coder or viewer. ``ROLE_CAPABILITIES`` is the
one table of what each role allows (a ``Capability``); every interface asks
``user_may`` (one study), ``studies_where`` / ``rows_where`` (lists) or
``study_for_user`` (the study of a URL: a 404 to a user without a role in it, so study
names do not leak, a 403 to one whose role does not allow the action). Active
superusers may do everything everywhere. Global model permissions grant nothing in a
study; the one global permission is ``studies.create_study`` ("may create studies"),
whose holder becomes the owner of each study they create.

Roles are for active staff accounts (the admin's login); an inactive or non-staff
account may do nothing, whatever its roles.
"""

from enum import StrEnum

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from .models import Role, Study, StudyRole


class Capability(StrEnum):
    """What a role may do in its study (the value completes "may ...")."""

    SEE = "see the study, its progress and its dashboard"
    CONFIGURE = "change the study's configuration and open or close it"
    MANAGE_ANNOTATORS = "invite annotators, reject assignments and manage crowd settings"
    READ_ROWS = "read judgements, descriptions and row-level exports"
    PERSONAL_DATA = "see annotators' personal data"
    ANALYSE = "run and download analyses"
    CODE = "code descriptions"
    GOVERN = "grant and withdraw roles, purge personal data and delete the study"


#: What each role may do: the one table (documented in docs/researchers/roles.md).
ROLE_CAPABILITIES: dict[str, frozenset[Capability]] = {
    Role.OWNER: frozenset(Capability),
    Role.COLLABORATOR: frozenset(Capability) - {Capability.GOVERN},
    Role.ANALYST: frozenset({Capability.SEE, Capability.READ_ROWS, Capability.ANALYSE}),
    Role.CODER: frozenset({Capability.CODE}),
    Role.VIEWER: frozenset({Capability.SEE}),
}

CREATE_STUDY_PERM = "studies.create_study"

_ROLES_CACHE = "_study_roles_cache"


def user_is_active_staff(user) -> bool:
    """An active staff account: who may sign in to the admin."""
    return bool(user.is_active and user.is_staff)


def _is_superuser(user) -> bool:
    return bool(user.is_active and user.is_superuser)


def user_study_roles(user) -> dict[int, str]:
    """``{study id: role}`` of ``user`` (empty for an inactive or non-staff account),
    read once per user object (a request's), as Django caches permissions."""
    if not (user.is_authenticated and user_is_active_staff(user)):
        return {}
    roles = getattr(user, _ROLES_CACHE, None)
    if roles is None:
        roles = dict(StudyRole.objects.filter(user=user).values_list("study_id", "role"))
        setattr(user, _ROLES_CACHE, roles)
    return roles


def user_study_roles_forget(user) -> None:
    """Drop ``user_study_roles``'s cache on this user object (after a change)."""
    if hasattr(user, _ROLES_CACHE):
        delattr(user, _ROLES_CACHE)


def roles_with(capability: Capability) -> list[str]:
    return [role for role, allowed in ROLE_CAPABILITIES.items() if capability in allowed]


def user_role(user, study) -> str | None:
    """``user``'s role in ``study`` (a Study or its id), or None."""
    return user_study_roles(user).get(getattr(study, "pk", study))


def user_may(user, study, capability: Capability) -> bool:
    """Whether ``user`` may do ``capability`` in ``study`` (a Study or its id)."""
    if _is_superuser(user):
        return True
    role = user_role(user, study)
    return role is not None and capability in ROLE_CAPABILITIES[role]


def study_ids_where(user, capability: Capability) -> list[int] | None:
    """The ids of the studies where ``user`` may do ``capability``; None for all (an
    active superuser)."""
    if _is_superuser(user):
        return None
    allowed = roles_with(capability)
    return sorted(pk for pk, role in user_study_roles(user).items() if role in allowed)


def rows_where(queryset: QuerySet, user, capability: Capability, study_path: str = "study"):
    """``queryset`` narrowed to rows of studies where ``user`` may do ``capability``;
    ``study_path`` leads from the rows to their study (``"assignment__stage__study"``,
    or ``"pk"`` for studies)."""
    ids = study_ids_where(user, capability)
    if ids is None:
        return queryset
    return queryset.filter(**{f"{study_path}__in": ids})


def studies_where(user, capability: Capability) -> QuerySet:
    """The studies where ``user`` may do ``capability``."""
    return rows_where(Study.objects.all(), user, capability, "pk")


def user_may_somewhere(user, capability: Capability) -> bool:
    """Whether ``user`` may do ``capability`` in at least one study (an admin list
    shown in the index, say)."""
    ids = study_ids_where(user, capability)
    return ids is None or bool(ids)


def user_has_a_role(user) -> bool:
    """Active staff with a role in some study, or an active superuser: who may use the
    API and the staff pages at all."""
    return _is_superuser(user) or bool(user_study_roles(user))


def user_may_create_studies(user) -> bool:
    return user_is_active_staff(user) and user.has_perm(CREATE_STUDY_PERM)


def refusal_for(user, study, capability: Capability) -> str:
    """Why ``user`` may not do ``capability`` in ``study``."""
    role = user_role(user, study)
    if role is None:
        return "You have no role in this study."
    return (
        f"Your role in this study ({Role(role).label.lower()}) does not allow this: "
        f"it takes a role that may {capability.value}."
    )


def _study_checked(user, study: Study | None, capability: Capability, missing: str) -> Study:
    if study is None or not (_is_superuser(user) or user_role(user, study) is not None):
        raise Http404(missing)
    if not user_may(user, study, capability):
        raise PermissionDenied(refusal_for(user, study, capability))
    return study


def study_for_user(user, slug: str, capability: Capability, queryset=None) -> Study:
    """The study of a URL for ``user`` to do ``capability`` in: ``Http404`` when there
    is no such study or ``user`` has no role in it (the same answer, so study names do
    not leak), ``PermissionDenied`` (with ``refusal_for``'s reason) when their role does
    not allow it. ``queryset`` may add ``select_related`` and the like."""
    study = (queryset if queryset is not None else Study.objects.all()).filter(slug=slug).first()
    return _study_checked(user, study, capability, f"No study with the slug {slug!r}.")


def study_by_id_for_user(user, study_id: int, capability: Capability) -> Study:
    """``study_for_user`` for a URL naming the study by id (the admin's pages)."""
    study = Study.objects.filter(pk=study_id).first()
    return _study_checked(user, study, capability, "No such study.")


def study_object_check(user, study, capability: Capability, *, missing: str) -> None:
    """``study_for_user`` for the study (a Study or its id, not read again) of an object
    a URL names by its id (an assignment, an analysis run): ``Http404(missing)``, the
    answer for no such object, when ``user`` has no role in it."""
    _study_checked(user, study, capability, missing)
