"""The figures of the generation settings and of order effects, read from their
tables (:mod:`analysis.tables.generation`, :func:`analysis.tables.order_tables`) and
drawn as stacked share bars (:mod:`.shares`)."""

from __future__ import annotations

from ..tables import (
    category_labels,
    cells_in_order,
    finite,
    generation_crossed_table,
    generation_mee_table,
    label_segments,
    order_tables,
)
from ..tables.generation import NOT_SET, setting_shown
from .figures import label_colours
from .shares import Bar, stacked_shares_svg
from .svg import CATEGORY_COLOURS, COHERENT_COLOUR, OKABE_ITO, UNSPECIFIED_COLOUR, Figure, empty

INCOHERENT_COLOUR = OKABE_ITO["vermillion"]


NO_JUDGEMENTS = "No judgements analysed yet."


def _blocks(records, heading_keys, bar) -> list[tuple[str, list[Bar]]]:
    """Records in table order, grouped into blocks by ``heading_keys``."""
    blocks: list[tuple[str, list[Bar]]] = []
    for record in records:
        heading = " · ".join(str(record.keys[k]) for k in heading_keys)
        if not blocks or blocks[-1][0] != heading:
            blocks.append((heading, []))
        blocks[-1][1].append(bar(record))
    return blocks


def generation_mee_svg(report: dict) -> str:
    """Per group, stage and setting, one bar per value: the shares of its
    incoherent-majority items by majority most evident error, "no majority" its own."""
    figure = Figure(
        slug="generation-mee",
        title="Majority most evident error per generation setting",
        desc="One bar per value of each generation setting, per group and stage: of the "
        "items whose majority said incoherent, the share whose majority named each error "
        "most evident, and the share with no majority. The table above holds the same "
        "numbers.",
    )
    if not cells_in_order(report):
        return empty(figure, NO_JUDGEMENTS)
    parts = [*category_labels(report), ("no_majority", "No majority")]
    colours = [
        *(CATEGORY_COLOURS[i % len(CATEGORY_COLOURS)] for i in range(len(parts) - 1)),
        UNSPECIFIED_COLOUR,
    ]
    blocks = _blocks(
        generation_mee_table(report).records(),
        ("group", "stage", "setting"),
        lambda r: Bar(
            setting_shown(r.keys["setting_value"]),
            [finite(r.value("majority_mee_share", slug)) for slug, _ in parts],
        ),
    )
    return stacked_shares_svg(
        figure,
        segments=[(label, colour) for (_, label), colour in zip(parts, colours, strict=True)],
        blocks=blocks,
        axis=f"Share of the value's incoherent-majority items (“{NOT_SET}”: no value)",
        nothing="No generation setting has an incoherent majority yet.",
    )


def generation_crossed_svg(report: dict) -> str:
    """Per group and stage, one bar per combination of the crossed settings: its label
    distribution."""
    figure = Figure(
        slug="generation-crossed",
        title="Label distribution per combination of generation settings",
        desc="One bar per combination of the settings the run crossed, per group and stage: "
        "the share of judgements that called its reflections coherent, and of each error "
        "category. The table above holds the same numbers.",
    )
    if not cells_in_order(report):
        return empty(figure, NO_JUDGEMENTS)
    if not (report.get("parameters") or {}).get("crossed_settings"):
        return empty(figure, "The run crossed no settings.")
    parts = label_segments(report)
    blocks = _blocks(
        generation_crossed_table(report).records(),
        ("group", "stage"),
        lambda r: Bar(
            r.keys["settings"],
            [finite(r.value("label_share", slug)) for slug, _ in parts],
            r.value("n_judgements"),
        ),
    )
    return stacked_shares_svg(
        figure,
        segments=label_colours(parts),
        blocks=blocks,
        axis="Share of judgements",
        nothing="No combination has enough items.",
    )


def order_positions_svg(report: dict) -> str:
    """Per group and stage, one bar per position in the shuffled batch: coherent and
    incoherent shares of the judgements of items seen there."""
    figure = Figure(
        slug="order-positions",
        title="Coherent share by the position an item was seen at",
        desc="One bar per position in each annotator's shuffled batch (1 first), per group "
        "and stage: the share of judgements of the items seen there that said coherent, "
        "and incoherent. The table above holds the same numbers.",
    )
    if not cells_in_order(report):
        return empty(figure, NO_JUDGEMENTS)
    tables = order_tables(report)
    records = tables[0].records() if tables else []

    def bar(record) -> Bar:
        rate = finite(record.value("coherent_rate"))
        return Bar(
            f"Position {record.keys['position']}",
            [rate, None if rate is None else 1 - rate],
            record.value("n_judgements"),
        )

    return stacked_shares_svg(
        figure,
        segments=[("Coherent", COHERENT_COLOUR), ("Incoherent", INCOHERENT_COLOUR)],
        blocks=_blocks(records, ("group", "stage"), bar),
        axis="Share of judgements",
        nothing="No recorded order yet.",
    )
