"""What the candidate-selection pages show: the pool's summary, the diversity tables
and the clusters file (the admin pages live in ``analysis.admin_candidates``)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db.models import Count

from studies.models import PoolCandidate, Study

from ..metrics.diversity import SELF_BLEU_ORDERS
from ..models import CandidateSelection, ClusterMember

CLUSTERS_HEADER = [
    "annomi_dialogue_id",
    "cluster",
    "selected",
    "representative",
    "duplicate",
    "pool_candidate_id",
    "reflection_source",
    "generation",
    "tokens",
    "reflection",
]


def pool_summary(*, study: Study) -> dict:
    """``n_candidates``, ``n_contexts`` and ``sources`` (source, candidates, contexts)."""
    pool = PoolCandidate.objects.filter(context__study=study)
    sources = list(
        pool.values("source")
        .annotate(candidates=Count("id"), contexts=Count("context", distinct=True))
        .order_by("source")
    )
    return {
        "n_candidates": sum(s["candidates"] for s in sources),
        "n_contexts": pool.values("context").distinct().count(),
        "sources": sources,
    }


def diversity_rows(diversity: dict) -> list[dict]:
    """The pool's and the selection's diversity as table rows: ``set`` (pool or
    selection), ``scope`` (all, or a source), the Self-BLEU values, the mean cosine and
    the pairs scored of all."""
    rows = []
    for name in ("pool", "selection"):
        part = diversity.get(name)
        if not part:
            continue
        scopes = [("all sources", part["all"]), *sorted(part["sources"].items())]
        for scope, entry in scopes:
            rows.append(
                {
                    "set": name,
                    "scope": scope,
                    "self_bleu": [entry["self_bleu"].get(str(n)) for n in SELF_BLEU_ORDERS],
                    "mean_cosine": entry.get("mean_cosine"),
                    "n_pairs_scored": entry["n_pairs_scored"],
                    "n_pairs": entry["n_pairs"],
                }
            )
    return rows


def clusters_rows(selection: CandidateSelection) -> Iterator[list[str]]:
    """The clusters file: a header, then one row per member (duplicates included),
    by context, cluster and member."""
    yield CLUSTERS_HEADER
    members = (
        ClusterMember.objects.filter(cluster__selection=selection)
        .order_by("cluster__context__external_id", "cluster__number", "duplicate", "candidate_id")
        .values_list(
            "cluster__context__external_id",
            "cluster__number",
            "cluster__selected",
            "cluster__representative_id",
            "duplicate",
            "candidate_id",
            "candidate__source",
            "candidate__generation",
            "candidate__text",
        )
    )
    for (
        dialogue,
        number,
        selected,
        representative,
        duplicate,
        pk,
        source,
        gen,
        text,
    ) in members.iterator(chunk_size=5_000):
        yield [
            dialogue,
            str(number),
            "true" if selected else "false",
            "true" if pk == representative and not duplicate else "false",
            "true" if duplicate else "false",
            str(pk),
            source,
            json.dumps(gen, sort_keys=True, ensure_ascii=False) if gen else "",
            str(len(text.split())),
            text,
        ]
