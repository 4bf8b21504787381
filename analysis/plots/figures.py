"""The dashboard figures: pure functions, report dict → SVG text (see
:mod:`analysis.plots.svg` for escaping, palette and accessibility). Their numbers come
from the report's tables (:mod:`analysis.tables`), so a figure shows exactly what the
table next to it does."""

from __future__ import annotations

import math
from collections import defaultdict

from ..tables import (
    Record,
    agreement_table,
    annotator_table,
    cells_in_order,
    finite,
    format_number,
    human_vs_synthetic_table,
    label_distribution_table,
    label_segments,
)
from ..tables.walk import KINDS, stage_order
from .shares import Bar, stacked_shares_svg
from .svg import (
    CATEGORY_COLOURS,
    COHERENT_COLOUR,
    GRID,
    LANDIS_KOCH,
    MEASURES,
    MUTED,
    OKABE_ITO,
    STAGE_MARKERS,
    UNSPECIFIED_COLOUR,
    Figure,
    empty,
    fit,
    num,
    text_width,
)

# --------------------------------------------------------------------------- label distribution

KIND_NAMES = {"human": "Human", "synthetic": "Synthetic"}


def _distribution_rows(report: dict, by: str) -> dict[tuple, list[tuple[str, Record, int | None]]]:
    """Per (group, stage), the bars: (label, the label-distribution table's record, n
    judgements): human and synthetic reflections, or each source."""
    counts = {
        (r.keys["group"], r.keys["stage"]): r for r in human_vs_synthetic_table(report).records()
    }
    bars = defaultdict(list)
    for record in label_distribution_table(report).records():
        cell = (record.keys["group"], record.keys["stage"])
        row = record.keys["reflections"]
        if by == "source" and row not in KINDS:
            bars[cell].append((row, record, None))
        elif by != "source" and row in KINDS:
            n = counts[cell].value("n_judgements", row) if cell in counts else None
            bars[cell].append((KIND_NAMES[row], record, n))
    return bars


def label_distribution_svg(report: dict, *, by: str = "kind") -> str:
    """The stacked-bar figure of a study: for each group × stage, the label
    distribution of human and synthetic reflections (``by="source"``: of each source),
    segments coherent, each error category, incoherent without a category."""
    by = "source" if by == "source" else "kind"
    per = "source" if by == "source" else "human vs synthetic"
    figure = Figure(
        slug=f"label-distribution-{by}",
        title=f"Label distribution per group and stage ({per})",
        desc="Stacked horizontal bars, one per reflection kind and per group and stage: the "
        "share of judgements that called the reflection coherent, and of the incoherent "
        "ones, the share of each error category (a judgement with several categories is "
        "split equally among them). The tables on the dashboard hold the same numbers.",
    )
    cells = cells_in_order(report)
    if not cells:
        return empty(figure, "No judgements analysed yet.")
    parts = label_segments(report)
    per_cell = _distribution_rows(report, by)
    blocks = [
        (
            f"{group} · {stage}",
            [
                Bar(label, [finite(record.value("label_share", slug)) for slug, _ in parts], n)
                for label, record, n in per_cell.get((group, stage), [])
            ],
        )
        for group, stage, _ in cells
    ]
    return stacked_shares_svg(
        figure,
        segments=label_colours(parts),
        blocks=blocks,
        axis="Share of judgements",
        nothing="No judgements analysed yet.",
        undefined="undefined: no judgements",
    )


def label_colours(parts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(label, colour) of the label distribution's parts (``label_segments``): coherent,
    each error category, incoherent without a category."""
    colours = [
        COHERENT_COLOUR,
        *(CATEGORY_COLOURS[i % len(CATEGORY_COLOURS)] for i in range(len(parts) - 2)),
        UNSPECIFIED_COLOUR,
    ]
    return [(label, colour) for (_, label), colour in zip(parts, colours, strict=True)]


# --------------------------------------------------------------------------- agreement


def _agreement_range(records: list[Record]) -> float:
    low = -0.2
    for record in records:
        for key, *_ in MEASURES:
            stat = record.stat(key)
            for value in (stat.value, *(stat.ci or ())) if stat else ():
                value = finite(value)
                if value is not None:
                    low = min(low, value)
    return max(-1.0, math.floor(round(low * 10, 6)) / 10)


def agreement_svg(report: dict) -> str:
    """Fleiss' and Randolph's kappa and Krippendorff's alpha on coherent/incoherent
    per group × stage, as points with their 95% bootstrap intervals, over the Landis &
    Koch bands."""
    figure = Figure(
        slug="agreement",
        title="Agreement on coherent / incoherent with 95% confidence intervals",
        desc="For each group and stage, Fleiss' kappa (circle), Randolph's kappa (square) "
        "and Krippendorff's alpha (diamond) with their 95% bootstrap intervals as "
        "horizontal bars, over shaded Landis & Koch bands from poor to almost perfect. "
        "Undefined values are marked as such.",
    )
    records = agreement_table(report).records()
    if not records:
        return empty(figure, "No judgements analysed yet.")
    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = figure.legend(52, ((label, colour, marker) for _, label, colour, marker in MEASURES))
    x0 = 200
    plot_width = figure.width - x0 - 24
    low, high = _agreement_range(records), 1.0

    def sx(value: float) -> float:
        return x0 + (min(max(value, low), high) - low) / (high - low) * plot_width

    band_top = y + 4
    row_height = 16
    block = len(MEASURES) * row_height + 14
    bottom = band_top + 30 + len(records) * block
    for i, (start, end, name) in enumerate(LANDIS_KOCH):
        start = low if start is None else start
        if end <= low:
            continue
        start = max(start, low)
        figure.rect(
            sx(start),
            band_top,
            sx(end) - sx(start),
            bottom - band_top,
            fill="#f4f5f7" if i % 2 == 0 else "#e7eaee",
            tooltip=f"Landis & Koch: {name} ({num(start)} to {num(end)})",
        )
        centre = (sx(start) + sx(end)) / 2
        words = name.split() if text_width(name, 10) > sx(end) - sx(start) - 4 else [name]
        for j, word in enumerate(words):
            figure.text(centre, band_top + 12 + 11 * j, word, size=10, anchor="middle", fill=MUTED)
    y = band_top + 30
    for record in records:
        group, stage = record.keys["group"], record.keys["stage"]
        heading = f"{group} · {stage}"
        figure.text(16, y + row_height + 4, fit(group, x0 - 30, 12), weight="bold", tooltip=heading)
        figure.text(16, y + 2 * row_height + 4, fit(stage, x0 - 30, 12), tooltip=heading)
        for j, (key, label, colour, marker) in enumerate(MEASURES):
            cy = y + 8 + j * row_height
            stat = record.stat(key)
            value = finite(stat.value if stat else None)
            lo, hi = (finite(v) for v in (stat.ci if stat and stat.ci else (None, None)))
            if value is None:
                figure.text(
                    x0 + 6,
                    cy + 4,
                    f"{label}: undefined",
                    size=10.5,
                    fill=MUTED,
                    tooltip=f"{heading}: {label} undefined",
                )
                continue
            if lo is not None and hi is not None:
                figure.line(sx(lo), cy, sx(hi), cy, stroke=colour, width=2)
                for end in (lo, hi):
                    figure.line(sx(end), cy - 4, sx(end), cy + 4, stroke=colour, width=2)
                interval = f" [{format_number(lo)}, {format_number(hi)}]"
            else:
                interval = " (no interval)"
            figure.marker(
                marker,
                sx(value),
                cy,
                fill=colour,
                tooltip=f"{heading}: {label} = {format_number(value)}{interval}",
            )
        y += block
        figure.line(x0, y - 6, x0 + plot_width, y - 6, stroke="#ffffff", width=1)
    # Axis.
    tick = round(low, 1)
    while tick <= high + 1e-9:
        x = sx(tick)
        figure.line(x, bottom, x, bottom + 4, stroke=MUTED)
        figure.text(x, bottom + 16, format_number(tick, 1), size=11, anchor="middle", fill=MUTED)
        tick = round(tick + 0.2, 1)
    figure.line(sx(0), band_top + 26, sx(0), bottom, stroke=MUTED, extra=' stroke-dasharray="3 3"')
    figure.text(
        x0 + plot_width / 2, bottom + 36, "Agreement (95% bootstrap interval)", anchor="middle"
    )
    return figure.render(bottom + 48)


# --------------------------------------------------------------------------- annotators


def annotator_consistency_svg(report: dict) -> str:
    """A dot plot per annotator: how often they answered a recurring human reflection
    the same in both stages, and the coherent share of the human reflections they met
    in one stage only (one marker per stage)."""
    figure = Figure(
        slug="annotators",
        title="Per-annotator consistency on human reflections",
        desc="One row per annotator, grouped by annotator group. A black diamond is the "
        "share of recurring human reflections the annotator answered the same in every "
        "stage; the other markers are, per stage, the share of non-recurring human "
        "reflections they called coherent. Missing markers are undefined values.",
    )
    groups: dict[str, list[Record]] = {}
    for record in annotator_table(report).records():
        groups.setdefault(record.keys["group"], []).append(record)
    if not groups:
        return empty(figure, "No judgements of human reflections analysed yet.")
    stages = stage_order(report)
    stage_markers = {stage: STAGE_MARKERS[i % len(STAGE_MARKERS)] for i, stage in enumerate(stages)}
    figure.text(16, 26, figure.title, size=15, weight="bold")
    entries = [("Same answer when recurring", OKABE_ITO["black"], "diamond")]
    entries += [
        (f"Coherent share, {stage} only", colour, marker)
        for stage, (colour, marker) in stage_markers.items()
    ]
    y = figure.legend(52, entries)
    x0, right = 200, 130
    plot_width = figure.width - x0 - right
    top = y + 6
    y = top + 8
    row = 18

    def sx(value: float) -> float:
        return x0 + min(max(value, 0.0), 1.0) * plot_width

    for group, records in groups.items():
        figure.text(
            16,
            y + 10,
            fit(group, figure.width - 32, 12.5),
            size=12.5,
            weight="bold",
            tooltip=group,
        )
        y += 18
        for record in records:
            name = record.keys["annotator"]
            cy = y + row / 2
            figure.line(x0, cy, x0 + plot_width, cy, stroke="#eef0f2")
            figure.text(
                x0 - 8,
                cy + 4,
                fit(name, x0 - 24, 11.5),
                size=11.5,
                anchor="end",
                tooltip=f"{group}: {name}",
            )
            for stage, (colour, marker) in stage_markers.items():
                value = finite(record.value("nonrecurring_human_coherent_rate", stage))
                n = record.value("n_nonrecurring", stage)
                if value is not None:
                    figure.marker(
                        marker,
                        sx(value),
                        cy,
                        fill=colour,
                        r=4,
                        tooltip=f"{name}: coherent share, {stage} only = "
                        f"{format_number(value, 2)} (n = {0 if n is None else n})",
                    )
            same = finite(record.value("recurring_identical_rate"))
            n_recurring = record.value("n_recurring") or 0
            if same is not None:
                figure.marker(
                    "diamond",
                    sx(same),
                    cy,
                    fill=OKABE_ITO["black"],
                    r=4,
                    tooltip=f"{name}: same answer on {format_number(same, 2)} of "
                    f"{n_recurring} recurring human reflections",
                )
                summary = f"same {format_number(same, 2)} (n={n_recurring})"
            else:
                summary = "same –"
            figure.text(
                x0 + plot_width + 8,
                cy + 4,
                summary,
                size=10,
                fill=MUTED,
                tooltip="undefined: no recurring human reflection"
                if same is None
                else f"{n_recurring} recurring human reflections",
            )
            y += row
        y += 8
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = sx(tick)
        figure.line(x, top, x, y, stroke=GRID, extra=' stroke-dasharray="2 3"')
        figure.text(x, y + 14, format_number(tick, 2), size=11, anchor="middle", fill=MUTED)
    figure.text(x0 + plot_width / 2, y + 34, "Share", anchor="middle")
    return figure.render(y + 46)


PLOTS = {
    "label-distribution": label_distribution_svg,
    "agreement": agreement_svg,
    "annotators": annotator_consistency_svg,
}
