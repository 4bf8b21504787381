"""The assignment rules checked over the whole assignments table, shared by
the concurrency tests and the claims benchmark (bench/claims).

``assignment_rule_violations`` returns, per rule, the offending rows (empty lists when
everything holds), so tests can assert and benchmarks can count.
"""

from itertools import pairwise

from django.db.models import Count, Max, Q

from studies.models import Assignment, WaitExemption

ACTIVE = Assignment.ACTIVE
OPEN = Assignment.OPEN


def assignment_rule_violations(study, *, k: int, m: int) -> dict[str, list]:
    """Rows breaking a rule in ``study`` with overlap ``k`` and ``m`` batches per stage:

    * ``over_k``: a batch with more than k active assignments of one group;
    * ``over_m``: an annotator with more than m active assignments in one stage;
    * ``two_open``: an annotator with more than one open assignment;
    * ``context_twice``: an annotator with two assignments for one context in one
      stage (so never twice in one batch);
    * ``bad_slots``: an active assignment with a slot number beyond k or m;
    * ``stage_order``: an assignment of a later stage claimed before the annotator
      submitted work in the previous stage, or before the stage's minimum wait had
      passed since their last (still valid) submission there, without an exemption.
    """
    assignments = Assignment.objects.filter(stage__study=study)
    active = assignments.filter(status__in=ACTIVE)
    violations: dict[str, list] = {
        "over_k": list(active.values("batch", "group").annotate(n=Count("pk")).filter(n__gt=k)),
        "over_m": list(active.values("annotator", "stage").annotate(n=Count("pk")).filter(n__gt=m)),
        "two_open": list(
            assignments.filter(status__in=OPEN)
            .values("annotator")
            .annotate(n=Count("pk"))
            .filter(n__gt=1)
        ),
        "context_twice": list(
            assignments.values("annotator", "stage", "batch__context")
            .annotate(n=Count("pk"))
            .filter(n__gt=1)
        ),
        "bad_slots": list(
            active.filter(Q(group_slot__gt=k) | Q(annotator_slot__gt=m)).values_list(
                "pk", flat=True
            )
        ),
        "stage_order": [],
    }
    stages = list(study.stages.order_by("position"))
    exempt = set(
        WaitExemption.objects.filter(annotator__study=study).values_list("annotator", "stage")
    )
    for previous, stage in pairwise(stages):
        last_submitted = dict(
            assignments.filter(stage=previous, status=Assignment.Status.SUBMITTED)
            .values("annotator")
            .annotate(last=Max("submitted_at"))
            .values_list("annotator", "last")
        )
        for pk, annotator_id, assigned_at in assignments.filter(stage=stage).values_list(
            "pk", "annotator", "assigned_at"
        ):
            last = last_submitted.get(annotator_id)
            if last is None or (
                (annotator_id, stage.pk) not in exempt and assigned_at < last + stage.min_wait
            ):
                violations["stage_order"].append(pk)
    return violations
