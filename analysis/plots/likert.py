"""The Likert figure: a panel per stage and dimension, a row per group and system (the
stage's source). On points, the row is a stacked bar of the share of each point (a
single-hue ramp, light to dark, so it reads in grey too); on a 0–100 slider, the mean
with its 95% interval and the median on the scale. Means and intervals come from the
Likert table (:func:`analysis.tables.likert_table`), the shares from the report's
cells, so the figure shows the report's numbers."""

from __future__ import annotations

from ..tables.format import finite
from ..tables.likert import likert_table, nothing_counted
from .svg import GRID, MUTED, OKABE_ITO, Figure, empty, fit, percents_summing_to_100

# The ramp's ends: light and dark blue (one hue: order reads without colour).
_LIGHT, _DARK = (0xDE, 0xEB, 0xF7), (0x08, 0x30, 0x6B)


def point_colours(n: int) -> list[str]:
    """``n`` colours from light to dark, one per point."""
    colours = []
    for i in range(n):
        t = i / (n - 1) if n > 1 else 1.0
        rgb = (round(a + (b - a) * t) for a, b in zip(_LIGHT, _DARK, strict=True))
        colours.append("#{:02x}{:02x}{:02x}".format(*rgb))
    return colours


def _panels(report: dict, records) -> list[tuple[str, dict, list]]:
    """(stage, dimension, its rows) in reading order: rows (group, source, record)."""
    likert = report.get("likert") or {}
    by_dimension: dict[tuple[str, str], list] = {}
    for record in records:
        keys = record.keys
        by_dimension.setdefault((keys["stage"], keys["dimension"]), []).append(
            (keys["group"], keys["source"], record)
        )
    panels = []
    for stage, dimensions in (likert.get("dimensions") or {}).items():
        for dimension in dimensions:
            rows = by_dimension.get((stage, dimension["name"]))
            if rows:
                panels.append((stage, dimension, rows))
    return panels


def likert_svg(report: dict) -> str:
    figure = Figure(
        slug="likert",
        title="Likert ratings per dimension, group and system",
        desc="One panel per stage and dimension, one row per group and system. On points: "
        "a stacked bar of the share of each point, light (lowest) to dark (highest). On a "
        "0–100 slider: the mean (dot) with its 95% bootstrap interval (line) and the "
        'median (tick). "Cannot judge" answers are left out. The Likert table holds the '
        "same numbers.",
    )
    records = likert_table(report).records()
    if not records:
        nothing = nothing_counted(report) == "No judgements"  # neither protocol's
        return empty(figure, "No judgements analysed yet." if nothing else "No Likert ratings yet.")
    cells = (report.get("likert") or {}).get("cells") or {}
    figure.text(16, 26, figure.title, size=15, weight="bold")
    x0, label_width = 196, 176
    bar_width = figure.width - x0 - 120
    bar_height, gap = 18, 6
    y = 48.0
    for stage, dimension, rows in _panels(report, records):
        heading = f"{stage} · {dimension['name']}: {dimension['statement']}"
        figure.text(16, y + 12, fit(heading, figure.width - 32, 13), size=13, weight="bold",
                    tooltip=heading)  # fmt: skip
        y += 22
        points = dimension.get("points")
        labels = dimension.get("labels") or []
        if points:
            colours = point_colours(points)
            y = figure.legend(
                y + 10,
                (
                    (f"{p}{' ' + labels[p - 1] if labels[p - 1] else ''}", colours[p - 1], "box")
                    for p in range(1, points + 1)
                ),
            )
        top = y
        for group, source, record in rows:
            name = f"{group} · {source}"
            figure.text(x0 - 8, y + 13, fit(name, label_width, 12), anchor="end", tooltip=name)
            mean = finite(record.value("mean"))
            summary = "undefined" if mean is None else f"mean {mean:.2f}"
            if points:
                system = cells[group][stage][dimension["name"]]["systems"][source]
                shares = [
                    (system.get("shares") or {}).get(str(p), 0.0) for p in range(1, points + 1)
                ]
                shown = percents_summing_to_100(shares)
                x = x0
                for p, share in enumerate(shares, start=1):
                    width = share * bar_width
                    tip = f"{name}: {p} {labels[p - 1]} {shown[p - 1]}".replace("  ", " ")
                    figure.rect(x, y, width, bar_height, fill=colours[p - 1], tooltip=tip)
                    if width >= 30:
                        ink = "#ffffff" if p > points / 2 else "#000000"
                        figure.text(x + width / 2, y + 13, shown[p - 1], size=10.5,
                                    anchor="middle", fill=ink,
                                    extra=' pointer-events="none"')  # fmt: skip
                    x += width
            else:
                stat = record.stat("mean")
                low, high = stat.ci if stat is not None and stat.ci else (None, None)
                low, high = finite(low), finite(high)
                figure.line(x0, y + bar_height / 2, x0 + bar_width, y + bar_height / 2)
                if mean is not None:
                    if low is not None and high is not None:
                        figure.line(x0 + low / 100 * bar_width, y + bar_height / 2,
                                    x0 + high / 100 * bar_width, y + bar_height / 2,
                                    stroke=OKABE_ITO["blue"], width=3)  # fmt: skip
                    median = finite(record.value("median"))
                    if median is not None:
                        mx = x0 + median / 100 * bar_width
                        figure.line(mx, y + 2, mx, y + bar_height - 2, stroke=OKABE_ITO["black"],
                                    width=2)  # fmt: skip
                    figure.marker("circle", x0 + mean / 100 * bar_width, y + bar_height / 2,
                                  fill=OKABE_ITO["blue"], tooltip=f"{name}: {summary}")  # fmt: skip
            figure.text(x0 + bar_width + 10, y + 13, summary, size=11.5, fill=MUTED)
            y += bar_height + gap
        if not points:
            for tick in (0, 25, 50, 75, 100):
                x = x0 + tick / 100 * bar_width
                figure.line(x, top - 4, x, y, stroke=GRID, extra=' stroke-dasharray="2 3"')
                figure.text(x, y + 12, str(tick), size=11, anchor="middle", fill=MUTED)
            ends = f"0 {labels[0]} … 100 {labels[-1]}" if len(labels) == 2 else "0 … 100"
            figure.text(x0 + bar_width / 2, y + 28, ends, size=11.5, anchor="middle")
            y += 30
        y += 14
    return figure.render(y + 8)
