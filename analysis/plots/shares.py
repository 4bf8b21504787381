"""Stacked share bars, the drawing several figures share: per block (a group and
stage, say), one horizontal bar per row whose segments are shares summing to 1."""

from __future__ import annotations

from dataclasses import dataclass

from .svg import GRID, LIGHT_TEXT_ON, MUTED, Figure, empty, fit, percents_summing_to_100


@dataclass(frozen=True)
class Bar:
    """One bar: its label, each segment's share (in the segments' order; None counts as
    0), and the count it rests on (shown beside it; None: not shown)."""

    label: str
    shares: list[float | None]
    n: int | None = None
    n_label: str = "judgements"


def stacked_shares_svg(
    figure: Figure,
    *,
    segments: list[tuple[str, str]],
    blocks: list[tuple[str, list[Bar]]],
    axis: str,
    nothing: str,
    undefined: str = "undefined: nothing counted",
) -> str:
    """Draw ``blocks`` (heading, bars) under ``figure``'s title, with a legend of
    ``segments`` ((label, colour)) and ``axis`` under the scale; ``nothing`` when no
    block has a bar, ``undefined`` in a block without any."""
    if not any(bars for _, bars in blocks):
        return empty(figure, nothing)
    figure.text(16, 26, figure.title, size=15, weight="bold")
    y = figure.legend(52, ((label, colour, "box") for label, colour in segments))
    label_width, x0 = 170, 186
    bar_width = figure.width - x0 - 70
    bar_height, gap = 20, 6
    y += 6
    top = y
    grid_at = len(figure.parts)  # gridlines go under the bars, drawn once y is known
    for heading, bars in blocks:
        figure.text(
            16, y + 12, fit(heading, figure.width - 32, 12.5), size=12.5, weight="bold",
            tooltip=heading,
        )  # fmt: skip
        y += 20
        if not bars:
            figure.text(x0, y + 13, undefined, fill=MUTED)
            y += bar_height + gap
        for bar in bars:
            figure.text(
                x0 - 8, y + 14, fit(bar.label, label_width, 12), anchor="end", tooltip=bar.label
            )
            shares = [share or 0.0 for share in bar.shares]
            shown = percents_summing_to_100(shares)
            precise = percents_summing_to_100(shares, digits=1)
            x = x0
            for i, (seg_label, colour) in enumerate(segments):
                if shares[i] <= 0:
                    continue
                width = shares[i] * bar_width
                tip = f"{heading} · {bar.label}: {seg_label} {precise[i]}"
                figure.rect(x, y, width, bar_height, fill=colour, tooltip=tip)
                if width >= 34:
                    ink = "#ffffff" if colour in LIGHT_TEXT_ON else "#000000"
                    figure.text(
                        x + width / 2, y + 14, shown[i], size=10.5, anchor="middle", fill=ink,
                        extra=' pointer-events="none"',
                    )  # fmt: skip
                x += width
            if bar.n is not None:
                figure.text(
                    x0 + bar_width + 6, y + 14, f"n = {bar.n}", size=10.5, fill=MUTED,
                    tooltip=f"{bar.n} {bar.n_label}",
                )  # fmt: skip
            y += bar_height + gap
        y += 8
    drawn = figure.parts[grid_at:]
    del figure.parts[grid_at:]
    for tick in (0, 0.25, 0.5, 0.75, 1):
        x = x0 + tick * bar_width
        figure.line(x, top - 4, x, y, stroke=GRID, extra=' stroke-dasharray="2 3"')
        figure.text(x, y + 14, f"{tick:.0%}", size=11, anchor="middle", fill=MUTED)
    figure.parts.extend(drawn)
    figure.text(x0 + bar_width / 2, y + 34, axis, size=12, anchor="middle")
    return figure.render(y + 46)
