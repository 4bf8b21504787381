"""Agreement over time: per group and stage, Fleiss' and Randolph's kappa on the
judgements submitted up to each day, as lines over the Landis & Koch bands. The numbers
are those of the table *Agreement over time* (:func:`analysis.tables.agreement_over_time_table`)."""

from __future__ import annotations

import itertools

from ..tables import agreement_over_time_table, finite, format_number
from ..tables.agreement import holds_in_cells
from .settings import NO_JUDGEMENTS
from .svg import GRID, LANDIS_KOCH, MEASURES, MUTED, Figure, empty, fit, num

#: The kappas drawn (alpha has no daily value).
KAPPAS = [measure for measure in MEASURES if measure[0] in ("fleiss_kappa", "randolph_kappa")]
LOW = -0.2
PANEL_HEIGHT = 150


def agreement_over_time_svg(report: dict) -> str:
    figure = Figure(
        slug="agreement-over-time",
        title="Agreement over time",
        desc="For each group and stage, Fleiss' kappa (circles) and Randolph's kappa "
        "(squares) on coherent / incoherent over the judgements submitted up to each day, "
        "joined by lines, over shaded Landis & Koch bands. Days where a kappa is "
        "undefined have no mark.",
    )
    records = agreement_over_time_table(report).records()
    if not records:
        if not report.get("n_judgements"):
            return empty(figure, NO_JUDGEMENTS)
        if not holds_in_cells(report, "agreement_over_time"):
            return empty(figure, "This report is older than agreement over time: re-run it.")
        return empty(figure, "No submission times: the study was imported from a file.")
    panels: dict[tuple[str, str], list] = {}
    for record in records:
        panels.setdefault((record.keys["group"], record.keys["stage"]), []).append(record)
    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = figure.legend(52, ((label, colour, marker) for _, label, colour, marker in KAPPAS))
    x0, x1 = 90, figure.width - 24
    for (group, stage), days in panels.items():
        heading = f"{group} · {stage}"
        figure.text(16, y + 14, fit(heading, figure.width - 32, 12.5), weight="bold")
        top, bottom = y + 24, y + 24 + PANEL_HEIGHT

        def sy(value: float, top=top, bottom=bottom) -> float:
            return bottom - (min(max(value, LOW), 1.0) - LOW) / (1.0 - LOW) * (bottom - top)

        for i, (start, end, name) in enumerate(LANDIS_KOCH):
            start = LOW if start is None else max(start, LOW)
            figure.rect(
                x0,
                sy(end),
                x1 - x0,
                sy(start) - sy(end),
                fill="#f4f5f7" if i % 2 == 0 else "#e7eaee",
                tooltip=f"Landis & Koch: {name}",
            )
            figure.text(x0 - 6, (sy(start) + sy(end)) / 2 + 4, name, size=9.5, anchor="end",
                        fill=MUTED)  # fmt: skip
        figure.line(x0, sy(0), x1, sy(0), stroke=MUTED, extra=' stroke-dasharray="3 3"')
        step = (x1 - x0 - 40) / max(len(days) - 1, 1)

        def sx(index: int, step=step) -> float:
            return x0 + 20 + index * step

        for key, label, colour, marker in KAPPAS:
            points = []
            for index, record in enumerate(days):
                stat = record.stat(key)
                value = finite(stat.value if stat else None)
                if value is None:
                    points.append(None)
                    continue
                points.append((sx(index), sy(value)))
                n = record.stat("n_items")
                figure.marker(
                    marker,
                    sx(index),
                    sy(value),
                    fill=colour,
                    tooltip=f"{heading}, {record.keys['day']}: {label} = "
                    f"{format_number(value)} over {format_number(n.value if n else None, 0)} "
                    "items",
                )
            for a, b in itertools.pairwise(points):
                if a is not None and b is not None:
                    figure.line(*a, *b, stroke=colour, width=1.5)
        labelled = {0, len(days) - 1, *range(0, len(days), max(len(days) // 6, 1))}
        for index in sorted(labelled):
            figure.line(sx(index), bottom, sx(index), bottom + 4, stroke=GRID)
            figure.text(sx(index), bottom + 16, days[index].keys["day"], size=10,
                        anchor="middle", fill=MUTED)  # fmt: skip
        y = bottom + 30
    figure.text(figure.width / 2, y + 4, f"Days with submissions (UTC); kappa shown from {num(LOW)}", size=11,
                anchor="middle", fill=MUTED)  # fmt: skip
    return figure.render(y + 16)
