import pytest
from collections import Counter
from django.db.models import Count
from tests.studies.test_study_simulation import enrol, annotate_and_submit, T0, PER_GROUP, sim_study  # noqa
from studies.models import Assignment, Study
from studies.services import assignment_claim, NoWorkAvailable, StageLocked

@pytest.mark.parametrize("seed", range(30))
def test_rr(sim_study, seed):
    Study.objects.filter(pk=sim_study.pk).update(seed=seed)
    annotators = enrol(sim_study, PER_GROUP)
    now = T0
    outcomes = Counter()
    for rnd in range(6):
        for a in annotators:
            try:
                asg = assignment_claim(annotator=a, now=now)
            except (NoWorkAvailable, StageLocked) as e:
                outcomes[type(e).__name__] += 1
                continue
            if asg.stage.position != 1:
                outcomes["stage2"] += 1
                continue
            now = annotate_and_submit(asg, start=now)
    per_batch = Counter(Assignment.objects.filter(status="submitted", stage__position=1).values("batch","group").annotate(n=Count("id")).values_list("n", flat=True))
    per_ann = Counter(Assignment.objects.filter(status="submitted", stage__position=1).values("annotator").annotate(n=Count("id")).values_list("n", flat=True))
    print("\nRESULT", seed, dict(per_batch), dict(per_ann), dict(outcomes))
