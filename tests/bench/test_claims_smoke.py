"""bench/claims at tiny size, so it cannot rot: 12 annotators claim at once (own
connection each, threads spread over two processes) in two rounds plus two solo
claimers; no rule is broken."""

from datetime import timedelta

import pytest

from bench.annotator_study import study_build
from bench.claims.run import STAGE_WAIT, T0, format_row, run_rounds, summary
from studies.models import Annotator

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_claims_run_at_tiny_size():
    study = study_build(
        slug="claims",
        n_contexts=12,
        per_group=7,
        k=3,
        m=3,
        stage_wait=STAGE_WAIT,
        consented_at=T0 - timedelta(days=1),
        synthetic=1,
        log=lambda _: None,
    )
    annotators = list(Annotator.objects.select_related("study").order_by("pk"))
    lines = []
    results = run_rounds(
        study,
        claimers=annotators[:12],
        solo=annotators[12:],
        rounds=2,
        processes=2,
        log=lines.append,
    )
    assert len(results) == 2 and len(lines) == 2
    assert [r.claims for r in results] == [14, 14]
    assert all(r.violations and r.n_violations == 0 for r in results), [
        r.violations for r in results
    ]
    assert summary(results)["errors"] == 0, [r.error_samples for r in results]
    assert results[0].outcomes.get("claimed") == 14  # 12 × 3 slots per group: room for all
    assert results[0].p95_ms is not None and results[0].solo_p50_ms is not None
    assert format_row(results[0]).split()[0] == "1"
