"""Reads on studies (HackSoft style): querysets and plain data for views and admin."""

from django.db.models import Count, Q, QuerySet

from .models import Annotator, Assignment, Study


def annotator_by_token(*, token: str) -> Annotator | None:
    """The active annotator whose invitation link carries ``token``, else None."""
    if not token or len(token) > 64:
        return None
    return (
        Annotator.objects.select_related("study", "group")
        .filter(access_token=token, is_active=True)
        .first()
    )


def study_overview(*, study: Study) -> dict:
    """Counts a researcher looks at first: materials and work done, per stage and group."""
    stages = list(
        study.stages.annotate(n_batches=Count("batches", distinct=True)).order_by("position")
    )
    groups = list(study.groups.annotate(n_annotators=Count("annotators")).order_by("name"))
    submitted = (
        Assignment.objects.filter(batch__stage__study=study, status=Assignment.Status.SUBMITTED)
        .values("batch__stage_id", "annotator__group_id")
        .annotate(n=Count("id"))
    )
    done = {(r["batch__stage_id"], r["annotator__group_id"]): r["n"] for r in submitted}
    return {
        "n_contexts": study.contexts.count(),
        "stages": stages,
        "groups": groups,
        "rows": [
            {
                "stage": stage,
                "group": group,
                "submitted": done.get((stage.pk, group.pk), 0),
                "needed": stage.n_batches * study.overlap_k,
            }
            for stage in stages
            for group in groups
        ],
    }


def studies_open() -> QuerySet[Study]:
    return Study.objects.filter(status=Study.Status.OPEN).annotate(
        n_contexts=Count("contexts", filter=Q(contexts__isnull=False), distinct=True)
    )
