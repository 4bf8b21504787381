"""The diversity tables: Self-BLEU and mean cosine of each stage's synthetic candidates,
over all of them and per source, and of the pool and selection behind a stage filled by
a candidate selection (the report's ``diversity`` block); and the coherent rate spread
from cluster representatives to their members (the report's ``spread`` block)."""

from __future__ import annotations

from ..metrics.diversity import SELF_BLEU_ORDERS
from .model import GROUP, STAGE, Key, Measure, Table, at, build_table

ALL_SOURCES = "all"
SOURCE = Key("Source", ("source",), show=lambda s: "All sources" if s == ALL_SOURCES else s)
SET = Key("Candidates", ("set",), show=lambda s: {"pool": "Pool", "selection": "Selected"}[s])
SETTING = Key(
    "Generation setting",
    ("key", "value"),
    show=lambda key, value: "All candidates" if key == "all" else f"{key} = {value}",
)


def _measures() -> list[Measure]:
    return [
        Measure("n_contexts", "Contexts", "diversity_contexts", at("n_contexts"), "count"),
        Measure("n_pairs", "Pairs", "diversity_pairs", at("n_pairs"), "count"),
        Measure(
            "n_pairs_scored",
            "Pairs scored",
            "diversity_pairs_scored",
            at("n_pairs_scored"),
            "count",
        ),
        *(
            Measure(
                f"self_bleu_{n}", f"Self-BLEU-{n}", "self_bleu", at("self_bleu", str(n)), digits=1
            )
            for n in SELF_BLEU_ORDERS
        ),
        Measure("mean_cosine", "Mean cosine", "mean_cosine", at("mean_cosine"), digits=3),
    ]


def _by_source(cell: dict) -> list[tuple[str, dict]]:
    return [(ALL_SOURCES, cell["all"]), *cell["sources"].items()]


def diversity_table(report: dict) -> Table:
    block = report.get("diversity") or {}
    entries = [
        ((stage, source), entry)
        for stage, cell in (block.get("stages") or {}).items()
        for source, entry in _by_source(cell)
    ]
    return build_table(
        slug="diversity",
        caption="Diversity of the synthetic candidates (Self-BLEU, cosine)",
        keys=[STAGE, SOURCE],
        measures=_measures(),
        entries=entries,
        note="Per context, every ordered pair of its candidates (of one source, or of all): "
        "BLEU-n of one against the other, 0–100, averaged over the pairs; higher means the "
        f"candidates are more alike. At most {block.get('max_pairs', '…')} pairs are scored "
        "per row, a seeded sample. The mean cosine similarity of the candidates' embeddings "
        f"is over all the pairs. A stage with more than {block.get('max_contexts', '…')} "
        "contexts is read on a seeded sample of that many."
        + (
            f" The mean cosine is shown once the worker has embedded the candidates "
            f"({block['embeddings_pending']} texts still to do): run the analysis again then."
            if block.get("embeddings_pending")
            else ""
        ),
        empty="No synthetic candidates in the stages' batches.",
    )


def selection_diversity_table(report: dict) -> Table:
    selections = (report.get("diversity") or {}).get("selections") or {}
    entries = [
        ((stage, part, source), entry)
        for stage, record in selections.items()
        for part in ("pool", "selection")
        if part in record
        for source, entry in _by_source(record[part])
    ]
    return build_table(
        slug="selection-diversity",
        caption="Diversity of the candidate pool and of the selection drawn from it",
        keys=[STAGE, SET, SOURCE],
        measures=_measures(),
        entries=entries,
        note="For each stage filled by a candidate selection: its whole pool (duplicates "
        "included) and the cluster representatives it drew. The pool's Self-BLEU is scored "
        "on a seeded sample of pairs per context.",
        empty="No stage was filled by a candidate selection.",
    )


def spread_table(report: dict) -> Table:
    return build_table(
        slug="spread",
        caption="Coherent rate spread from cluster representatives to their members",
        keys=[STAGE, GROUP, SETTING],
        measures=[
            Measure("n_members", "Members", "spread_members", at("n_members"), "count"),
            Measure(
                "n_members_labelled",
                "Members labelled",
                "spread_members_labelled",
                at("n_members_labelled"),
                "count",
            ),
            Measure(
                "spread_coherent_rate",
                "Coherent (spread)",
                "spread_coherent_rate",
                at("spread_coherent_rate"),
                digits=3,
            ),
            Measure(
                "n_representatives",
                "Representatives",
                "spread_representatives",
                at("n_representatives"),
                "count",
            ),
            Measure(
                "n_representatives_labelled",
                "Representatives labelled",
                "spread_representatives_labelled",
                at("n_representatives_labelled"),
                "count",
            ),
            Measure(
                "representative_coherent_rate",
                "Coherent (representatives)",
                "representative_coherent_rate",
                at("representative_coherent_rate"),
                digits=3,
            ),
        ],
        entries=[
            ((r["stage"], r["group"], r["key"], r["value"]), r) for r in report.get("spread") or []
        ],
        note="Each member of a drawn cluster (removed duplicates included) gets its "
        "representative's majority label in the group; a label needs two raters and no tie.",
        empty="No stage was filled by a candidate selection, or none of its items has a "
        "majority label yet.",
    )
