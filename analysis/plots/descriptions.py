"""The codes figure: per group × stage, one stacked bar per source of the shares of
its coded descriptions carrying each code, read from the codes-per-source table
(:func:`analysis.tables.description_codes_table`), so the figure shows exactly the
table's numbers."""

from __future__ import annotations

import math
from collections import defaultdict

from ..tables import description_codes_table
from ..tables.descriptions import codebook_labels
from ..tables.format import finite
from .svg import (
    CATEGORY_COLOURS,
    GRID,
    LIGHT_TEXT_ON,
    MUTED,
    OKABE_ITO,
    Figure,
    empty,
    fit,
    percent,
)

# The label distribution's category colours first, then the rest of the palette.
CODE_COLOURS = [*CATEGORY_COLOURS, OKABE_ITO["bluish_green"], OKABE_ITO["black"]]


def description_codes_svg(report: dict) -> str:
    """Stacked horizontal bars, one per source in each group × stage: a segment per
    code as long as its share. A description may carry several codes, so a bar may
    pass 100%; the axis then extends to the longest bar."""
    figure = Figure(
        slug="description-codes",
        title="Codes of the descriptions per group, stage and source",
        desc="Stacked horizontal bars, one per source of reflections in each group and "
        "stage: each segment is the share of the source's informatively coded "
        "descriptions (primary coder) that carry the code. A description may carry "
        "several codes, so a bar can pass 100%. The codes-per-source table holds the same "
        "numbers.",
    )
    codes = codebook_labels(report)
    records = description_codes_table(report).records()
    if not records:
        return empty(figure, "No judgements analysed yet.")
    if not codes:
        return empty(figure, "The study has no codebook yet: code the descriptions first.")
    colours = {slug: CODE_COLOURS[i % len(CODE_COLOURS)] for i, (slug, _) in enumerate(codes)}
    bars = defaultdict(list)
    longest = 1.0
    for record in records:
        shares = [finite(record.value("code_share", slug)) for slug, _ in codes]
        bars[(record.keys["group"], record.keys["stage"])].append((record.keys["source"], shares))
        longest = max(longest, sum(share or 0.0 for share in shares))
    top_tick = math.ceil(longest * 4) / 4

    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = figure.legend(52, ((label, colours[slug], "box") for slug, label in codes))
    label_width, x0 = 170, 186
    bar_width = figure.width - x0 - 40
    bar_height, gap = 20, 6
    y += 6
    top = y
    grid_at = len(figure.parts)  # gridlines go under the bars, drawn once y is known
    for (group, stage), rows in bars.items():
        heading = f"{group} · {stage}"
        figure.text(16, y + 12, fit(heading, figure.width - 32, 12.5), size=12.5,
                    weight="bold", tooltip=heading)  # fmt: skip
        y += 20
        for source, shares in rows:
            figure.text(x0 - 8, y + 14, fit(source, label_width, 12), anchor="end", tooltip=source)
            if all(share is None for share in shares):
                figure.text(x0, y + 14, "undefined: no coded description", size=11, fill=MUTED)
                y += bar_height + gap
                continue
            x = x0
            for (slug, label), share in zip(codes, shares, strict=True):
                if not share:
                    continue
                width = share / top_tick * bar_width
                colour = colours[slug]
                tip = f"{heading} · {source}: {label} {percent(share)}"
                figure.rect(x, y, width, bar_height, fill=colour, tooltip=tip)
                if width >= 34:
                    ink = "#ffffff" if colour in LIGHT_TEXT_ON else "#000000"
                    figure.text(x + width / 2, y + 14, f"{100 * share:.0f}%", size=10.5,
                                anchor="middle", fill=ink, extra=' pointer-events="none"')  # fmt: skip
                x += width
            y += bar_height + gap
        y += 8
    marks = figure.parts[grid_at:]
    del figure.parts[grid_at:]
    ticks = [i / 4 for i in range(round(top_tick * 4) + 1)]
    for tick in ticks:
        x = x0 + tick / top_tick * bar_width
        stroke = MUTED if tick == 1 and top_tick > 1 else GRID
        figure.line(x, top - 4, x, y, stroke=stroke, extra=' stroke-dasharray="2 3"')
        figure.text(x, y + 14, f"{tick:.0%}", size=11, anchor="middle", fill=MUTED)
    figure.parts.extend(marks)
    figure.text(x0 + bar_width / 2, y + 34, "Share of coded descriptions carrying the code",
                size=12, anchor="middle")  # fmt: skip
    return figure.render(y + 46)
