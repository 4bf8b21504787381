"""Who may read what: one rule for the admin, the API, the exports and the dashboard.

Django's admin shows a model's rows to users holding its *view* or *change*
permission (``ModelAdmin.has_view_permission``). Every other interface asks the same
question here, so a user refused the admin's judgement list is refused judgements
everywhere else too:

* a study and its aggregates (its configuration, progress, analysis reports and
  their tables): *view study* or *change study*;
* judgement rows (the judgements API, the exports, which hold one row per judgement
  with its assignment): *view judgement* or *change judgement*, as the admin's
  judgement list;
* assignment rows (the assignments API): *view assignment* or *change assignment*,
  as the admin's assignment list;
* coding descriptions (the coding page): active staff who may read studies and
  judgements (descriptions are judgement data) and hold *add description coding*;
  growing the codebook there also needs *add code*. The codes download needs what the
  annotation exports need (``user_may_export``: it holds the descriptions). The
  "Coders" group (``CODERS_GROUP``, made by a data migration) holds exactly the
  permissions a coder who grows the codebook needs (``CODERS_GROUP_PERMS``).

Staff pages ask one of these predicates through ``studies.views.common.staff_page``,
API views through ``studies.api_framework.ResearcherPermission`` (the view's ``may``).
"""

from collections.abc import Iterable

STUDY_READ_PERMS = ("studies.view_study", "studies.change_study")
JUDGEMENT_READ_PERMS = ("studies.view_judgement", "studies.change_judgement")
ASSIGNMENT_READ_PERMS = ("studies.view_assignment", "studies.change_assignment")


def user_has_any_perm(user, perms: Iterable[str]) -> bool:
    """Whether ``user`` holds one of ``perms`` (the admin's view-or-change rule)."""
    return any(user.has_perm(perm) for perm in perms)


def user_may_read_judgements(user) -> bool:
    return user_has_any_perm(user, JUDGEMENT_READ_PERMS)


def user_may_read_studies(user) -> bool:
    return user_has_any_perm(user, STUDY_READ_PERMS)


CODING_PERM = "studies.add_descriptioncoding"
CODE_ADD_PERM = "studies.add_code"


#: The group a coder joins: what ``user_may_add_codes`` checks, one permission of each
#: view-or-change pair (the view one), and nothing else. The data migration
#: ``*_coders_group`` froze this list (tests/studies/test_coders_group.py holds the
#: two together).
CODERS_GROUP = "Coders"
CODERS_GROUP_PERMS = (STUDY_READ_PERMS[0], JUDGEMENT_READ_PERMS[0], CODING_PERM, CODE_ADD_PERM)


def user_is_active_staff(user) -> bool:
    """Coders: an active staff account."""
    return bool(user.is_active and user.is_staff)


def user_is_researcher(user) -> bool:
    """Active staff allowed to see studies: the dashboard, the analysis reports and
    every API endpoint."""
    return user_is_active_staff(user) and user_may_read_studies(user)


def user_may_export(user) -> bool:
    """Rows of judgements: the annotation exports, every other download holding
    judgement rows, and the judgements API."""
    return user_is_researcher(user) and user_may_read_judgements(user)


def user_may_read_assignments(user) -> bool:
    """Rows of assignments: the assignments API."""
    return user_is_researcher(user) and user_has_any_perm(user, ASSIGNMENT_READ_PERMS)


def user_may_code_descriptions(user) -> bool:
    return user_may_export(user) and user.has_perm(CODING_PERM)


def user_may_add_codes(user) -> bool:
    """Coders who may also grow the codebook from the coding page."""
    return user_may_code_descriptions(user) and user.has_perm(CODE_ADD_PERM)


#: The permission a researcher refused by a row-level rule is told they lack.
_LACKING = {
    user_may_export: JUDGEMENT_READ_PERMS[0],
    user_may_read_assignments: ASSIGNMENT_READ_PERMS[0],
}


def refusal_message(may) -> str:
    """Why a researcher is refused by ``may`` (one of the predicates above)."""
    lacking = _LACKING.get(may)
    if lacking is None:
        return "Your account lacks the permission for this."
    return f"Your account lacks the permission {lacking}."
