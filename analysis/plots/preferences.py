"""The pairwise figures: a win-rate matrix per group and stage (how often the row's
system was preferred to the column's, ties left out), and the systems' Bradley–Terry
strengths with their 95% intervals. Both read the pairwise tables
(:mod:`analysis.tables.preferences`), so they show the report's numbers; a ranking
stage's panels are its implied wins."""

from __future__ import annotations

from ..tables.format import finite
from ..tables.likert import nothing_counted
from ..tables.preferences import pairwise_strengths_table, pairwise_table
from .svg import GRID, MUTED, OKABE_ITO, Figure, empty, fit, percent

# A share of wins from 0 to 1: orange (loses) through white (even) to blue (wins).
_LOW, _MID, _HIGH = (0xE6, 0x9F, 0x00), (0xFF, 0xFF, 0xFF), (0x00, 0x72, 0xB2)


def win_colour(share: float) -> str:
    """The cell's colour: orange below an even split, blue above, white at 0.5."""
    end, t = (_HIGH, (share - 0.5) * 2) if share >= 0.5 else (_LOW, (0.5 - share) * 2)
    rgb = (round(m + (e - m) * t) for m, e in zip(_MID, end, strict=True))
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _panels(records) -> dict[tuple, list]:
    """(group, stage, derived) → its records, in reading order."""
    panels: dict[tuple, list] = {}
    for record in records:
        keys = record.keys
        panels.setdefault((keys["group"], keys["stage"], keys["derived"]), []).append(record)
    return panels


def _nothing(figure: Figure, report: dict) -> str:
    """The figure of a report without pairwise answers: none of any instrument's yet, or
    none of a pairwise or ranking stage."""
    nothing = nothing_counted(report) == "No judgements"  # no instrument's at all
    return empty(figure, "No judgements analysed yet." if nothing else "No pairwise answers yet.")


def _heading(group, stage, derived) -> str:
    return f"{group} · {stage}" + (" (implied by rankings)" if derived else "")


def pairwise_wins_svg(report: dict) -> str:
    figure = Figure(
        slug="pairwise-wins",
        title="Pairwise preference: how often each system was preferred",
        desc="One matrix per group and stage: the cell in a system's row and another's "
        "column is the share of their pairs in which the row's system was preferred, ties "
        "left out (blue above an even split, orange below), with the number of decisive "
        "answers. The pairwise table holds the same numbers.",
    )
    records = pairwise_table(report).records()
    if not records:
        return _nothing(figure, report)
    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = 48.0
    cell, label_width = 64, 150
    for (group, stage, derived), rows in _panels(records).items():
        heading = _heading(group, stage, derived)
        figure.text(16, y + 12, fit(heading, figure.width - 32, 13), size=13, weight="bold",
                    tooltip=heading)  # fmt: skip
        y += 26
        wins: dict[tuple[str, str], tuple[float | None, int]] = {}
        systems: list[str] = []
        for record in rows:
            a, b = record.keys["a"], record.keys["b"]
            for system in (a, b):
                if system not in systems:
                    systems.append(system)
            rate = finite(record.value("win_rate"))
            decisive = int(
                (finite(record.value("wins")) or 0) + (finite(record.value("losses")) or 0)
            )
            wins[a, b] = (rate, decisive)
            wins[b, a] = (None if rate is None else 1 - rate, decisive)
        systems.sort(key=str)
        x0 = 16 + label_width
        for j, column in enumerate(systems):
            figure.text(x0 + j * cell + cell / 2, y + 10, fit(column, cell - 4, 11), size=11,
                        anchor="middle", tooltip=column)  # fmt: skip
        y += 16
        for i, row in enumerate(systems):
            figure.text(x0 - 8, y + i * cell + cell / 2 + 4, fit(row, label_width - 8, 12),
                        anchor="end", tooltip=row)  # fmt: skip
            for j, column in enumerate(systems):
                x, top = x0 + j * cell, y + i * cell
                if row == column:
                    figure.rect(x, top, cell - 2, cell - 2, fill=GRID)
                    continue
                rate, decisive = wins.get((row, column), (None, 0))
                if rate is None:
                    figure.rect(x, top, cell - 2, cell - 2, fill="#ffffff",
                                extra=f' stroke="{GRID}"',
                                tooltip=f"{row} vs {column}: undefined")  # fmt: skip
                    figure.text(x + cell / 2, top + cell / 2 + 4, "–", anchor="middle",
                                fill=MUTED)  # fmt: skip
                    continue
                tip = f"{row} preferred to {column} in {percent(rate)} of {decisive}"
                figure.rect(x, top, cell - 2, cell - 2, fill=win_colour(rate), tooltip=tip)
                ink = "#ffffff" if abs(rate - 0.5) > 0.3 else "#000000"
                figure.text(x + cell / 2 - 1, top + cell / 2, percent(rate), size=12,
                            anchor="middle", fill=ink, extra=' pointer-events="none"')  # fmt: skip
                figure.text(x + cell / 2 - 1, top + cell / 2 + 14, f"n = {decisive}", size=10,
                            anchor="middle", fill=ink, extra=' pointer-events="none"')  # fmt: skip
        y += len(systems) * cell + 18
    return figure.render(y + 8)


def pairwise_strengths_svg(report: dict) -> str:
    figure = Figure(
        slug="pairwise-strengths",
        title="Pairwise preference: Bradley–Terry strengths",
        desc="One panel per group and stage, one row per system: its strength (dot, log "
        "scale, mean 0) with the 95% bootstrap interval (line) resampling contexts. The "
        "higher, the more often the system is preferred. The strengths table holds the same "
        "numbers.",
    )
    records = pairwise_strengths_table(report).records()
    if not records:
        return _nothing(figure, report)
    values = []
    for record in records:
        stat = record.stat("strength")
        values.append(finite(record.value("strength")))
        if stat is not None and stat.ci:
            values.extend(finite(v) for v in stat.ci)
    values = [v for v in values if v is not None] or [0.0]
    low, high = min(-0.5, *values), max(0.5, *values)
    span = high - low
    x0, width = 196, figure.width - 196 - 160

    def x(value: float) -> float:
        return x0 + (value - low) / span * width

    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = 48.0
    for (group, stage, derived), rows in _panels(records).items():
        heading = _heading(group, stage, derived)
        figure.text(16, y + 12, fit(heading, figure.width - 32, 13), size=13, weight="bold",
                    tooltip=heading)  # fmt: skip
        y += 24
        top = y
        rows = sorted(rows, key=lambda r: -(finite(r.value("strength")) or 0))
        for record in rows:
            system = record.keys["source"]
            strength = finite(record.value("strength"))
            stat = record.stat("strength")
            ci = [finite(v) for v in (stat.ci or ())] if stat is not None else []
            figure.text(x0 - 8, y + 13, fit(system, 176, 12), anchor="end", tooltip=system)
            figure.line(x0, y + 9, x0 + width, y + 9)
            summary = "undefined"
            if strength is not None:
                if len(ci) == 2 and None not in ci:
                    figure.line(x(ci[0]), y + 9, x(ci[1]), y + 9, stroke=OKABE_ITO["blue"],
                                width=3)  # fmt: skip
                    summary = f"{strength:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"
                else:
                    summary = f"{strength:.2f}"
                figure.marker("circle", x(strength), y + 9, fill=OKABE_ITO["blue"],
                              tooltip=f"{system}: {summary}")  # fmt: skip
            figure.text(x0 + width + 10, y + 13, summary, size=11, fill=MUTED)
            y += 24
        zero = x(0.0)
        figure.line(zero, top - 4, zero, y, stroke=MUTED, extra=' stroke-dasharray="3 3"')
        figure.text(zero, y + 12, "0 (the mean)", size=11, anchor="middle", fill=MUTED)
        y += 28
    return figure.render(y + 8)
