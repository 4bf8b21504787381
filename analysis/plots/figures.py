"""The dashboard figures: pure functions, report dict → SVG text (see
:mod:`analysis.plots.svg` for escaping, palette and accessibility)."""

from __future__ import annotations

import math

from ..tables import annotators_in_order, category_labels, cells_in_order, finite, format_number
from .svg import (
    CATEGORY_COLOURS,
    COHERENT_COLOUR,
    GRID,
    LANDIS_KOCH,
    LIGHT_TEXT_ON,
    MEASURES,
    MUTED,
    OKABE_ITO,
    STAGE_MARKERS,
    UNSPECIFIED_COLOUR,
    Figure,
    empty,
    fit,
    num,
    percent,
    text_width,
)

# --------------------------------------------------------------------------- label distribution


def _distribution_rows(cell: dict, by: str) -> list[tuple[str, dict, int | None]]:
    """(row label, shares, n judgements) of one group × stage: human and synthetic, or
    each source (the human source first)."""
    shares = cell.get("label_distribution") or {}
    counts = (cell.get("human_vs_synthetic") or {}).get("n_judgements") or {}
    if by == "source":
        sources = [key for key in shares if key not in ("human", "synthetic")]
        sources.sort(key=lambda s: (s != "Human", str(s).casefold()))
        return [(source, shares[source], None) for source in sources]
    return [
        (label, shares[key], counts.get(key))
        for key, label in (("human", "Human"), ("synthetic", "Synthetic"))
        if key in shares
    ]


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
    segments = [("coherent", "Coherent", COHERENT_COLOUR)]
    for i, (slug, label) in enumerate(category_labels(report)):
        segments.append((slug, label, CATEGORY_COLOURS[i % len(CATEGORY_COLOURS)]))
    segments.append(("incoherent_unspecified", "Incoherent, no category", UNSPECIFIED_COLOUR))

    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = figure.legend(52, ((label, colour, "box") for _, label, colour in segments))
    label_width, x0 = 170, 186
    bar_width = figure.width - x0 - 70
    bar_height, gap = 20, 6
    y += 6
    top = y
    grid_at = len(figure.parts)  # gridlines go under the bars, drawn once y is known
    for group, stage, cell in cells:
        heading = f"{group} · {stage}"
        figure.text(
            16,
            y + 12,
            fit(heading, figure.width - 32, 12.5),
            size=12.5,
            weight="bold",
            tooltip=heading,
        )
        y += 20
        rows = _distribution_rows(cell, by)
        if not rows:
            figure.text(x0, y + 13, "undefined: no judgements", fill=MUTED)
            y += bar_height + gap
        for label, shares, n in rows:
            figure.text(x0 - 8, y + 14, fit(label, label_width, 12), anchor="end", tooltip=label)
            x = x0
            for slug, seg_label, colour in segments:
                share = finite((shares or {}).get(slug)) or 0.0
                if share <= 0:
                    continue
                width = share * bar_width
                tip = f"{heading} · {label}: {seg_label} {percent(share)}"
                figure.rect(x, y, width, bar_height, fill=colour, tooltip=tip)
                if width >= 34:
                    ink = "#ffffff" if colour in LIGHT_TEXT_ON else "#000000"
                    figure.text(
                        x + width / 2,
                        y + 14,
                        f"{100 * share:.0f}%",
                        size=10.5,
                        anchor="middle",
                        fill=ink,
                        extra=' pointer-events="none"',
                    )
                x += width
            if n is not None:
                figure.text(
                    x0 + bar_width + 6,
                    y + 14,
                    f"n = {n}",
                    size=10.5,
                    fill=MUTED,
                    tooltip=f"{n} judgements",
                )
            y += bar_height + gap
        y += 8
    bars = figure.parts[grid_at:]
    del figure.parts[grid_at:]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = x0 + tick * bar_width
        figure.line(x, top - 4, x, y, stroke=GRID, extra=' stroke-dasharray="2 3"')
        figure.text(x, y + 14, f"{tick:.0%}", size=11, anchor="middle", fill=MUTED)
    figure.parts.extend(bars)
    figure.text(x0 + bar_width / 2, y + 34, "Share of judgements", size=12, anchor="middle")
    return figure.render(y + 46)


# --------------------------------------------------------------------------- agreement


def _agreement_range(cells) -> float:
    low = -0.2
    for _, _, cell in cells:
        coherence = cell.get("coherence") or {}
        for key, *_ in MEASURES:
            values = [coherence.get(key), *((coherence.get(f"{key}_ci") or [None, None])[:2])]
            for value in values:
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
    cells = cells_in_order(report)
    if not cells:
        return empty(figure, "No judgements analysed yet.")
    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = figure.legend(52, ((label, colour, marker) for _, label, colour, marker in MEASURES))
    x0 = 200
    plot_width = figure.width - x0 - 24
    low, high = _agreement_range(cells), 1.0

    def sx(value: float) -> float:
        return x0 + (min(max(value, low), high) - low) / (high - low) * plot_width

    band_top = y + 4
    row_height = 16
    block = len(MEASURES) * row_height + 14
    bottom = band_top + 30 + len(cells) * block
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
    for group, stage, cell in cells:
        heading = f"{group} · {stage}"
        coherence = cell.get("coherence") or {}
        figure.text(16, y + row_height + 4, fit(group, x0 - 30, 12), weight="bold", tooltip=heading)
        figure.text(16, y + 2 * row_height + 4, fit(stage, x0 - 30, 12), tooltip=heading)
        for j, (key, label, colour, marker) in enumerate(MEASURES):
            cy = y + 8 + j * row_height
            value = finite(coherence.get(key))
            ci = coherence.get(f"{key}_ci") or [None, None]
            lo, hi = (finite(v) for v in [*ci, None, None][:2])
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
    groups = [
        (group, ((report.get("groups") or {}).get(group) or {}).get("annotators") or {})
        for group in report.get("group_order") or []
    ]
    groups = [(group, annotators) for group, annotators in groups if annotators]
    if not groups:
        return empty(figure, "No judgements of human reflections analysed yet.")
    stages = list(report.get("stage_order") or [])
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

    for group, annotators in groups:
        figure.text(
            16,
            y + 10,
            fit(group, figure.width - 32, 12.5),
            size=12.5,
            weight="bold",
            tooltip=group,
        )
        y += 18
        for name in annotators_in_order(annotators):
            entry = annotators[name] or {}
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
            rates = entry.get("nonrecurring_human_coherent_rate") or {}
            counts = entry.get("n_nonrecurring") or {}
            for stage, (colour, marker) in stage_markers.items():
                value = finite(rates.get(stage))
                if value is not None:
                    figure.marker(
                        marker,
                        sx(value),
                        cy,
                        fill=colour,
                        r=4,
                        tooltip=f"{name}: coherent share, {stage} only = "
                        f"{format_number(value, 2)} (n = {counts.get(stage, 0)})",
                    )
            same = finite(entry.get("recurring_identical_rate"))
            n_recurring = entry.get("n_recurring") or 0
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
