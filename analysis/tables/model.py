"""The table model every rendering of the report shares (HTML, CSV, text, figures).

A table is built from *keys* (the identifying columns: group, stage, annotator…) and
*measures* (the statistic columns). A :class:`Measure` is the one place where a
statistic's column heading, explanation, raw value, interval, band, count and number
format are defined; it makes the column and, for every row, a cell that carries both
the formatted text (with hover explanations) and the raw numbers (:class:`Stat`).
The HTML and text renderings show the text, the CSV writes the raw numbers, the
figures read them back with :meth:`Table.records`.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..explanations import explain, explain_undefined
from ..metrics.agreement import DISPLAY_DIGITS, landis_koch_band
from .format import DASH, ci_pair, finite, format_ci, format_count, format_value

Getter = Callable[[Any], Any]


def at(*path: str) -> Getter:
    """A getter of ``data[path[0]][path[1]]…``: None where any step is missing."""

    def get(data: Any) -> Any:
        for step in path:
            if not isinstance(data, dict):
                return None
            data = data.get(step)
        return data

    return get


# --------------------------------------------------------------------------- cells


@dataclass(frozen=True)
class Part:
    """One piece of text in a cell, with its hover explanation."""

    text: str
    title: str = ""
    css: str = ""
    href: str = ""  # the HTML rendering makes it a link


@dataclass(frozen=True)
class Stat:
    """One number of a cell as the report holds it (None: undefined). ``facet`` is
    (dimension, value) when the column is one value of a dimension (a label, a
    stage, human or synthetic reflections)."""

    name: str
    value: Any
    ci: tuple[Any, Any] | None = None
    band: str | None = None
    facet: tuple[str, str] | None = None


@dataclass(frozen=True)
class Cell:
    parts: tuple[Part, ...]
    header: bool = False  # a row header (<th scope="row">)
    numeric: bool = True
    keys: tuple[Any, ...] = ()  # an identifying cell: its raw values
    stats: tuple[Stat, ...] = ()  # a statistic cell: its raw numbers

    @property
    def text(self) -> str:
        return " ".join(part.text for part in self.parts)


@dataclass(frozen=True)
class Column:
    label: str
    title: str = ""
    numeric: bool = True
    keys: tuple[str, ...] = ()  # an identifying column: the names of its raw values
    stats: tuple[str, ...] = ()  # a statistic column: the names of its numbers
    facet: str = ""  # the dimension its numbers are one value of


@dataclass(frozen=True)
class Record:
    """One table row as raw values: its keys by name, its numbers by (name, facet)."""

    keys: dict[str, Any]
    stats: dict[tuple[str, str | None], Stat]

    def value(self, name: str, facet: str | None = None) -> Any:
        stat = self.stats.get((name, facet))
        return None if stat is None else stat.value

    def stat(self, name: str, facet: str | None = None) -> Stat | None:
        return self.stats.get((name, facet))


@dataclass(frozen=True)
class Table:
    slug: str
    caption: str
    columns: list[Column]
    rows: list[list[Cell]]
    note: str = ""
    empty: str = "Nothing to show."
    extra: dict = field(default_factory=dict)

    @property
    def key_names(self) -> list[str]:
        return [name for column in self.columns for name in column.keys]

    @property
    def facets(self) -> list[str]:
        return list(dict.fromkeys(c.facet for c in self.columns if c.facet))

    def records(self) -> list[Record]:
        names = self.key_names
        result = []
        for row in self.rows:
            keys = [value for cell in row for value in cell.keys]
            stats = {
                (stat.name, stat.facet[1] if stat.facet else None): stat
                for cell in row
                for stat in cell.stats
            }
            result.append(Record(dict(zip(names, keys, strict=True)), stats))
        return result


# --------------------------------------------------------------------------- columns


def stat_part(value: Any, key: str, kind: str = "number", digits: int = DISPLAY_DIGITS) -> Part:
    """``value`` written and explained by ``key``; a dash explained as undefined."""
    text = format_value(value, kind, digits)
    if text == DASH:
        return Part(DASH, explain_undefined(key), "undefined")
    return Part(text, explain(key))


@dataclass(frozen=True)
class Key:
    """An identifying column: ``names`` are its raw values' names (CSV columns),
    ``show`` writes them as the cell's text (default: the single value)."""

    label: str
    names: tuple[str, ...]
    show: Callable[..., str] | None = None
    header: bool = True
    title: Callable[..., str] | None = None

    def column(self) -> Column:
        return Column(self.label, numeric=False, keys=self.names)

    def cell(self, values: tuple) -> Cell:
        text = self.show(*values) if self.show else " ".join(str(v) for v in values)
        title = self.title(*values) if self.title else ""
        return Cell((Part(text, title),), header=self.header, numeric=False, keys=values)


class Pair(Enum):
    """How a cell shows two numbers of one statistic. ``SHIFT``: a change from the
    first to the second (stages in time order), "0.722 → 0.867", the two named in the
    row's keys. ``VERSUS``: two sides compared at once (groups), each named,
    "laypeople 0.722 vs experts 0.867"; an arrow would read as a change over time."""

    SHIFT = "shift"
    VERSUS = "versus"


@dataclass(frozen=True)
class Measure:
    """A statistic column. ``value`` (and ``ci``, ``count``'s getter) read the row's
    data; ``key`` names its explanation; ``kind`` and ``digits`` its format.
    ``banded`` adds the value's Landis & Koch band (:func:`landis_koch_band` of the
    value as shown, ``digits`` decimals). ``count`` = (key, getter) adds "(n = …)"
    explained by that key; ``facet`` = (dimension, value) when the column is one value
    of a dimension. With ``pair``, ``value`` returns ((facet value, number), (facet
    value, number)) (the dimension is ``facet[0]``), shown as :class:`Pair` says.
    ``flag`` = (name, key, test) marks the cell "✱", explained by ``key``, where
    ``test(data)`` holds, and adds the test's outcome as the number ``name``
    (true/false in the CSV)."""

    name: str
    label: str
    key: str
    value: Getter
    kind: str = "number"
    digits: int = DISPLAY_DIGITS
    ci: Getter | None = None
    banded: bool = False
    count: tuple[str, Getter] | None = None
    facet: tuple[str, str] | None = None
    pair: Pair | None = None
    flag: tuple[str, str, Callable[[Any], bool]] | None = None

    def column(self) -> Column:
        names = (self.name, self.count[0]) if self.count else (self.name,)
        if self.flag:
            names = (*names, self.flag[0])
        facet = self.facet[0] if self.facet else ""
        return Column(self.label, explain(self.key), stats=names, facet=facet)

    def cell(self, data: Any) -> Cell:
        if self.pair is not None:
            return self._pair(data)
        value = self.value(data)
        parts = [stat_part(value, self.key, self.kind, self.digits)]
        band = landis_koch_band(finite(value), digits=self.digits) if self.banded else None
        ci = ci_pair(self.ci(data)) if self.ci else None
        if finite(value) is not None:
            if band:
                parts.append(Part(band, explain("band"), "band"))
            if ci is not None and format_ci(ci, self.digits) != DASH:
                parts.append(Part(format_ci(ci, self.digits), explain("ci"), "ci"))
        stats = [Stat(self.name, value, ci, band, self.facet)]
        if self.count:
            key, getter = self.count
            n = getter(data)
            if finite(n) is not None:
                parts.append(Part(f"(n = {format_count(n)})", explain(key), "n"))
            stats.append(Stat(key, n, facet=self.facet))
        if self.flag:
            name, key, test = self.flag
            flagged = bool(test(data)) if finite(value) is not None else None
            if flagged:
                parts.append(Part("✱", explain(key), "flag"))
            stats.append(Stat(name, flagged, facet=self.facet))
        return Cell(tuple(parts), stats=tuple(stats))

    def not_offered_cell(self) -> Cell:
        """The cell of an error category the row's stage did not offer: no numbers,
        and a text that says so rather than a dash (nothing was left undefined)."""
        return Cell(
            (Part(NOT_OFFERED, explain("not_offered"), "undefined"),),
            stats=tuple(Stat(name, None, facet=self.facet) for name in self.column().stats),
        )

    def _pair(self, data: Any) -> Cell:
        (first, a), (second, b) = self.value(data)
        dimension = self.facet[0] if self.facet else ""
        shown_a = stat_part(a, self.key, self.kind, self.digits)
        shown_b = stat_part(b, self.key, self.kind, self.digits)
        if self.pair is Pair.SHIFT:
            parts = (shown_a, Part("→", "", "arrow"), shown_b)
        else:
            parts = (
                Part(str(first), "", "pair-name"),
                shown_a,
                Part("vs", "", "versus"),
                Part(str(second), "", "pair-name"),
                shown_b,
            )
        return Cell(
            parts,
            stats=(
                Stat(self.name, a, facet=(dimension, first)),
                Stat(self.name, b, facet=(dimension, second)),
            ),
        )


#: How a table shows the statistic of a category the row's stage did not offer.
NOT_OFFERED = "not offered"

GROUP = Key("Group", ("group",))
STAGE = Key("Stage", ("stage",))


def build_table(
    *,
    slug: str,
    caption: str,
    keys: Sequence[Key],
    measures: Sequence[Measure],
    entries: Iterable[tuple[tuple, Any]],
    note: str = "",
    empty: str = "Nothing to show.",
    not_offered: Callable[[tuple], Collection[str]] | None = None,
) -> Table:
    """A table of one row per entry: (identifying values, laid out in ``keys``'
    order, and the data the ``measures`` read). ``not_offered`` gives, from a row's
    identifying values, the slugs of the error categories its stage did not offer: a
    measure whose facet is one of them shows :data:`NOT_OFFERED`."""
    widths = [len(key.names) for key in keys]
    rows = []
    for values, data in entries:
        cells, start = [], 0
        for key, width in zip(keys, widths, strict=True):
            cells.append(key.cell(tuple(values[start : start + width])))
            start += width
        missing = not_offered(tuple(values)) if not_offered else ()
        cells.extend(
            measure.not_offered_cell()
            if measure.facet and measure.facet[1] in missing
            else measure.cell(data)
            for measure in measures
        )
        rows.append(cells)
    columns = [key.column() for key in keys] + [measure.column() for measure in measures]
    return Table(slug=slug, caption=caption, columns=columns, rows=rows, note=note, empty=empty)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while the tables are built.

    Building a large report's tables allocates hundreds of thousands of small objects
    (cells, parts, texts) that all stay alive until the tables are rendered. Each time
    the surviving objects grow by a quarter, the collector walks every object of the
    process again, the report itself among them: at 1,000,000 judgements that was two
    thirds of the text summary's time, to find nothing (the tables hold no reference
    cycles). The results are the same either way; the collector resumes afterwards
    (unless it was already off).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
