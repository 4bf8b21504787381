"""SVG building blocks of the dashboard figures: palette, escaping, a figure canvas.

Built by hand (no plotting dependency). Every piece of user text (stage, group,
source, category and annotator names) goes through :func:`esc`, which escapes it for
XML and drops characters XML cannot hold. Colours are the Okabe–Ito palette, which
stays distinguishable with the common colour-vision deficiencies; markers also differ
in shape. Each figure has a ``<title>`` and ``<desc>`` (``role="img"``,
``aria-labelledby``) and each mark its own ``<title>``, shown on hover. Missing values
(``null``) are drawn as "undefined", never as zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from ..metrics.agreement import LANDIS_KOCH_BANDS

# Okabe & Ito (2008), https://jfly.uni-koeln.de/color/
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}
COHERENT_COLOUR = OKABE_ITO["bluish_green"]
CATEGORY_COLOURS = [
    OKABE_ITO[name]
    for name in ("orange", "sky_blue", "vermillion", "reddish_purple", "yellow", "blue")
]
UNSPECIFIED_COLOUR = OKABE_ITO["black"]
# Text drawn on a segment: white only where black would not contrast enough.
LIGHT_TEXT_ON = {OKABE_ITO["black"], OKABE_ITO["blue"]}

MEASURES = [
    # (report key, label, colour, marker)
    ("fleiss_kappa", "Fleiss κ", OKABE_ITO["blue"], "circle"),
    ("randolph_kappa", "Randolph κ", OKABE_ITO["vermillion"], "square"),
    ("krippendorff_alpha", "Krippendorff α", OKABE_ITO["bluish_green"], "diamond"),
]
# (start, end, name) of each shaded band; the poor band starts at the figure's edge.
_BAND_ENDS = ((0.0, "poor"), *LANDIS_KOCH_BANDS)
LANDIS_KOCH = [
    (_BAND_ENDS[i - 1][0] if i else None, end, name) for i, (end, name) in enumerate(_BAND_ENDS)
]
STAGE_MARKERS = [
    (OKABE_ITO["blue"], "circle"),
    (OKABE_ITO["vermillion"], "square"),
    (OKABE_ITO["bluish_green"], "triangle"),
    (OKABE_ITO["reddish_purple"], "circle"),
]

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif"
INK = "#1f2933"
MUTED = "#52606d"
GRID = "#d9dee3"
WIDTH = 820

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def esc(text: object) -> str:
    """``text`` safe inside an XML element or a double-quoted attribute."""
    text = _NOT_XML.sub("", str(text))
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def text_width(text: str, size: float) -> float:
    """Rough rendered width: good enough to lay out labels and truncate long names."""
    return 0.58 * size * len(text)


def fit(text: str, width: float, size: float) -> str:
    text = str(text)
    if text_width(text, size) <= width:
        return text
    keep = max(1, int(width / (0.58 * size)) - 1)
    return text[:keep] + "…"


def percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def percents_summing_to_100(shares: Iterable[float], *, digits: int = 0) -> list[str]:
    """Shares that sum to 1 as percent labels that sum to exactly 100 (largest
    remainder: round every share down, then give the units left over to the shares
    that lost most). Plain rounding can show 33 % + 33 % + 33 % = 99 %."""
    unit = 10**digits
    scaled = [max(0.0, share) * 100 * unit for share in shares]
    floors = [math.floor(value) for value in scaled]
    left = round(sum(scaled)) - sum(floors)
    by_remainder = sorted(range(len(scaled)), key=lambda i: floors[i] - scaled[i])
    for i in by_remainder[: max(0, left)]:
        floors[i] += 1
    return [f"{value / unit:.{digits}f}%" for value in floors]


class Figure:
    def __init__(self, *, slug: str, title: str, desc: str, width: int = WIDTH):
        self.slug = slug
        self.title = title
        self.desc = desc
        self.width = width
        self.parts: list[str] = []

    def add(self, markup: str) -> None:
        self.parts.append(markup)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        size: float = 12,
        anchor: str = "start",
        weight: str = "normal",
        fill: str = INK,
        tooltip: str | None = None,
        extra: str = "",
    ) -> None:
        tip = f"<title>{esc(tooltip)}</title>" if tooltip else ""
        self.add(
            f'<text x="{num(x)}" y="{num(y)}" font-size="{num(size)}" text-anchor="{anchor}" '
            f'font-weight="{weight}" fill="{fill}"{extra}>{tip}{esc(text)}</text>'
        )

    def line(self, x1, y1, x2, y2, *, stroke: str = GRID, width: float = 1, extra: str = ""):
        self.add(
            f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
            f'stroke="{stroke}" stroke-width="{num(width)}"{extra}/>'
        )

    def rect(self, x, y, w, h, *, fill: str, tooltip: str | None = None, extra: str = ""):
        tip = f"<title>{esc(tooltip)}</title>" if tooltip else ""
        self.add(
            f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0))}" height="{num(h)}" '
            f'fill="{fill}"{extra}>{tip}</rect>'
        )

    def marker(self, shape: str, x: float, y: float, *, fill: str, tooltip: str, r: float = 4.5):
        tip = f"<title>{esc(tooltip)}</title>"
        common = f'fill="{fill}" stroke="#ffffff" stroke-width="1"'
        if shape == "square":
            self.add(
                f'<rect x="{num(x - r)}" y="{num(y - r)}" width="{num(2 * r)}" '
                f'height="{num(2 * r)}" {common}>{tip}</rect>'
            )
        elif shape == "diamond":
            d = r * 1.3
            points = f"{num(x)},{num(y - d)} {num(x + d)},{num(y)} {num(x)},{num(y + d)} {num(x - d)},{num(y)}"
            self.add(f'<polygon points="{points}" {common}>{tip}</polygon>')
        elif shape == "triangle":
            d = r * 1.25
            points = f"{num(x)},{num(y - d)} {num(x + d)},{num(y + d * 0.8)} {num(x - d)},{num(y + d * 0.8)}"
            self.add(f'<polygon points="{points}" {common}>{tip}</polygon>')
        else:
            self.add(f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" {common}>{tip}</circle>')

    def legend(self, y: float, entries: Iterable[tuple[str, str, str]], *, x0: float = 16) -> float:
        """Swatches (kind "box" or a marker shape) with labels, wrapped over lines;
        returns the y below the legend."""
        x, line_height = x0, 20
        for label, colour, kind in entries:
            label = fit(label, 320, 12)
            width = 22 + text_width(label, 12) + 18
            if x + width > self.width - 16 and x > x0:
                x, y = x0, y + line_height
            if kind == "box":
                self.rect(
                    x, y - 10, 14, 14, fill=colour, extra=' stroke="#52606d" stroke-width="0.5"'
                )
            else:
                self.marker(kind, x + 7, y - 3, fill=colour, tooltip=label)
            self.text(x + 20, y + 2, label)
            x += width
        return y + line_height

    def render(self, height: float) -> str:
        title_id, desc_id = f"{self.slug}-title", f"{self.slug}-desc"
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
            f'height="{num(height)}" viewBox="0 0 {self.width} {num(height)}" role="img" '
            f'aria-labelledby="{title_id} {desc_id}" font-family="{esc(FONT)}">'
            f'<title id="{title_id}">{esc(self.title)}</title>'
            f'<desc id="{desc_id}">{esc(self.desc)}</desc>'
            f'<rect width="100%" height="100%" fill="#ffffff"/>' + "".join(self.parts) + "</svg>"
        )


def empty(figure: Figure, message: str) -> str:
    figure.text(16, 28, figure.title, size=15, weight="bold")
    figure.text(16, 56, message, fill=MUTED)
    return figure.render(76)
