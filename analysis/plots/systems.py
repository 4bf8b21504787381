"""The systems figure: each system's coherent share per group with its 95% interval,
read from the systems table (:func:`analysis.tables.systems_table`), so the figure
shows exactly the table's numbers."""

from __future__ import annotations

from ..tables import finite, format_number, systems_table
from ..tables.walk import group_order, stage_order
from .svg import GRID, MUTED, STAGE_MARKERS, Figure, empty, fit


def systems_svg(report: dict) -> str:
    """A dot plot: one block per system (stage order, then source), one row per group
    in it, a marker at the coherent share and a bar over its 95% bootstrap interval."""
    figure = Figure(
        slug="systems",
        title="Coherent share per system and group with 95% confidence intervals",
        desc="One block per system (a source of reflections in a stage), one row per "
        "annotator group: the marker is the share of the group's judgements that called "
        "the system's reflections coherent, the bar its 95% interval from resampling "
        "items. Markers differ in colour and shape per group. The systems table holds "
        "the same numbers.",
    )
    records = systems_table(report).records()
    if not records:
        return empty(figure, "No judgements analysed yet.")
    groups = [g for g in group_order(report) if any(r.keys["group"] == g for r in records)]
    markers = {group: STAGE_MARKERS[i % len(STAGE_MARKERS)] for i, group in enumerate(groups)}
    position = {stage: i for i, stage in enumerate(stage_order(report))}
    systems = sorted(
        {(r.keys["stage"], r.keys["source"]) for r in records},
        key=lambda key: (position.get(key[0], len(position)), str(key[1])),
    )
    by_system = {(r.keys["stage"], r.keys["source"], r.keys["group"]): r for r in records}

    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = figure.legend(52, ((group, *markers[group]) for group in groups))
    x0, right = 230, 120
    plot_width = figure.width - x0 - right
    row = 16
    top = y + 4
    y = top + 6

    def sx(value: float) -> float:
        return x0 + min(max(value, 0.0), 1.0) * plot_width

    marks = []
    for stage, source in systems:
        heading = f"{source} · {stage}"
        figure.text(16, y + 12, fit(heading, figure.width - 32, 12), weight="bold", tooltip=heading)
        y += 16
        for group in groups:
            record = by_system.get((stage, source, group))
            if record is None:
                continue
            colour, shape = markers[group]
            cy = y + row / 2 + 2
            figure.text(
                x0 - 8, cy + 4, fit(group, x0 - 40, 11), size=11, anchor="end", fill=MUTED,
                tooltip=f"{group}: {heading}",
            )  # fmt: skip
            stat = record.stat("coherent_rate")
            value = finite(stat.value if stat else None)
            n = record.value("n_judgements")
            if value is None:
                figure.text(x0 + 6, cy + 4, "undefined: no judgements", size=10.5, fill=MUTED)
                y += row
                continue
            low, high = (finite(v) for v in (stat.ci or (None, None)))
            tip = f"{group} · {heading}: coherent share {format_number(value)}"
            if low is not None and high is not None:
                marks.append(("line", sx(low), cy, sx(high), colour))
                tip += f" [{format_number(low)}, {format_number(high)}]"
            else:
                tip += " (no interval)"
            marks.append(("marker", shape, sx(value), cy, colour, f"{tip} (n = {n})"))
            figure.text(
                x0 + plot_width + 8, cy + 4, f"{format_number(value, 2)} (n = {n})",
                size=10, fill=MUTED, tooltip=f"{n} judgements",
            )  # fmt: skip
            y += row
        y += 10
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = sx(tick)
        figure.line(x, top, x, y, stroke=GRID, extra=' stroke-dasharray="2 3"')
        figure.text(x, y + 14, format_number(tick, 2), size=11, anchor="middle", fill=MUTED)
    for mark in marks:
        if mark[0] == "line":
            _, x1, cy, x2, colour = mark
            figure.line(x1, cy, x2, cy, stroke=colour, width=2)
            for end in (x1, x2):
                figure.line(end, cy - 4, end, cy + 4, stroke=colour, width=2)
        else:
            _, shape, x, cy, colour, tip = mark
            figure.marker(shape, x, cy, fill=colour, tooltip=tip)
    figure.text(
        x0 + plot_width / 2, y + 34, "Coherent share (95% bootstrap interval)", anchor="middle"
    )
    return figure.render(y + 46)
