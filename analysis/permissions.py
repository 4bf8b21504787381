"""Who may change what in the analysis: the predicates its pages and its admin ask
(reading follows ``studies.permissions``, which these build on)."""

from studies.permissions import user_is_researcher

#: Who may start an analysis run.
RUN_PERM = "analysis.add_analysisrun"
#: Who may write a study's automatic scores: import them, or compute them here.
SCORES_WRITE_PERMS = (
    "studies.change_study",
    "analysis.add_automaticscore",
    "analysis.change_automaticscore",
)


def user_may_run_analysis(user) -> bool:
    return user_is_researcher(user) and user.has_perm(RUN_PERM)


def user_may_write_scores(user) -> bool:
    return user_is_researcher(user) and user.has_perms(SCORES_WRITE_PERMS)
