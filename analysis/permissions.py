"""Who may write automatic scores in the analysis admin (``analysis.admin``): a
predicate before roles, built on ``studies.permissions``' global-permission block and
gone with it once the admin asks the roles (``Capability.ANALYSE`` of the study, as the
dashboard's "Compute scores" does)."""

from studies.permissions import user_is_researcher

#: Who may write a study's automatic scores: import them, or compute them here.
SCORES_WRITE_PERMS = (
    "studies.change_study",
    "analysis.add_automaticscore",
    "analysis.change_automaticscore",
)


def user_may_write_scores(user) -> bool:
    return user_is_researcher(user) and user.has_perms(SCORES_WRITE_PERMS)
