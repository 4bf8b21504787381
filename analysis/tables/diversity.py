"""The diversity table: Self-BLEU of each stage's synthetic candidates, over all of them
and per source (the report's ``diversity`` block)."""

from __future__ import annotations

from ..metrics.diversity import SELF_BLEU_ORDERS
from .model import STAGE, Key, Measure, Table, at, build_table

ALL_SOURCES = "all"
SOURCE = Key("Source", ("source",), show=lambda s: "All sources" if s == ALL_SOURCES else s)


def diversity_table(report: dict) -> Table:
    block = report.get("diversity") or {}
    entries = [
        ((stage, source), entry)
        for stage, cell in (block.get("stages") or {}).items()
        for source, entry in [(ALL_SOURCES, cell["all"]), *cell["sources"].items()]
    ]
    return build_table(
        slug="diversity",
        caption="Diversity of the synthetic candidates (Self-BLEU)",
        keys=[STAGE, SOURCE],
        measures=[
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
                    f"self_bleu_{n}",
                    f"Self-BLEU-{n}",
                    "self_bleu",
                    at("self_bleu", str(n)),
                    digits=1,
                )
                for n in SELF_BLEU_ORDERS
            ),
        ],
        entries=entries,
        note="Per context, every ordered pair of its candidates (of one source, or of all): "
        "BLEU-n of one against the other, 0–100, averaged over the pairs; higher means the "
        f"candidates are more alike. At most {block.get('max_pairs', '…')} pairs are scored "
        "per row, a seeded sample.",
        empty="No synthetic candidates in the stages' batches.",
    )
