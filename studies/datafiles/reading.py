"""The one reader of data files: bytes to text, text to CSV records, and the header.

A source is a path (``pathlib.Path``), bytes, text (``str``), or an open file in
binary or text mode (an upload). Text must be UTF-8; a byte-order mark is dropped. A
file that is not UTF-8 is refused with the offset of the first bad byte, found on the
error path only, so reading stays one streaming pass.

CSV records are numbered as users count them: the first record (the header) is row
1, a blank record still counts, and a quoted cell with line breaks is one row, as in
a spreadsheet. Blank records are skipped. The header check refuses missing columns
and any name given twice (a second ``reflection`` column would otherwise silently
win) and names the columns it ignores. It is the one header rule of every CSV import.
"""

import csv
import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .problems import Problems

BOM = "\ufeff"

# The csv module refuses a cell over 131,072 characters by default. A file is read
# whole anyway, so a cell can be as long as the file; the texts are stored whole.
# (The limit is the csv module's one setting for the whole process.)
CSV_FIELD_SIZE_LIMIT = 2**31 - 1
csv.field_size_limit(CSV_FIELD_SIZE_LIMIT)


def _not_utf8(where: str) -> str:
    return f"not UTF-8 text ({where}): save it as UTF-8"


def read_text(source, problems: Problems) -> str | None:
    """The whole text of ``source``, or None with a problem if it is not UTF-8."""
    if isinstance(source, os.PathLike):
        with open(source, "rb") as handle:
            source = handle.read()
    elif hasattr(source, "read"):
        source = source.read()
    if isinstance(source, str):
        return source.removeprefix(BOM)
    try:
        return source.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.add("file", _not_utf8(f"byte {exc.start}"))
        return None


@contextmanager
def open_text(source) -> Iterator[tuple[io.TextIOBase, Callable[[], io.BufferedIOBase] | None]]:
    """A text stream over ``source`` (newlines left to the csv module) and a way to
    re-read its bytes to locate a decoding error (None for a source that is text)."""
    if isinstance(source, os.PathLike):
        path = source
        with open(path, encoding="utf-8-sig", newline="") as stream:
            # first_bad_byte closes what it opens (``with reopen() as binary``).
            yield stream, lambda: open(path, "rb")  # noqa: SIM115
        return
    data = source.read() if hasattr(source, "read") else source
    if isinstance(data, str):
        yield io.StringIO(data.removeprefix(BOM), newline=""), None
        return
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    yield stream, lambda: io.BytesIO(data)


def first_bad_byte(reopen: Callable[[], io.BufferedIOBase]) -> int | None:
    """Offset of the first byte that is not UTF-8 (the error path only)."""
    with reopen() as binary:
        offset, pending = 0, b""
        while chunk := binary.read(1 << 20):
            data = pending + chunk
            try:
                data.decode("utf-8")
                offset, pending = offset + len(data), b""
            except UnicodeDecodeError as exc:
                if exc.end == len(data) and exc.reason == "unexpected end of data":
                    offset, pending = offset + exc.start, data[exc.start :]
                else:
                    return offset + exc.start
        return offset if pending else None


def is_blank(cells: list[str]) -> bool:
    return not any(cell.strip() for cell in cells)


class CsvRecords:
    """(row number, cells) of every non-blank record of a text stream. Input that is
    not UTF-8 or not CSV ends the iteration with a problem, and sets ``stopped``."""

    def __init__(self, stream, problems: Problems, reopen=None):
        self.reader = csv.reader(stream)
        self.problems = problems
        self.reopen = reopen
        self.stopped = False

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        number = 0
        try:
            for number, cells in enumerate(self.reader, start=1):
                if not is_blank(cells):
                    yield number, cells
        except UnicodeDecodeError:
            offset = first_bad_byte(self.reopen) if self.reopen else None
            where = f"byte {offset}" if offset is not None else f"after row {number}"
            self.problems.add("file", _not_utf8(where))
            self.stopped = True
        except csv.Error as exc:
            self.problems.at_row(number + 1, f"unreadable CSV: {exc}")
            self.stopped = True


@dataclass(frozen=True)
class Header:
    row: int
    width: int
    positions: dict[str, int]  # known column -> its index
    ignored: tuple[str, ...]  # the other columns, as the summary names them

    def cells(self, row: int, cells: list[str], problems: Problems) -> dict[str, str] | None:
        """The known columns' cells of one record (absent trailing cells are empty),
        or None with a problem when the record is wider than the header."""
        if len(cells) > self.width:
            problems.at_row(row, f"{len(cells)} cells but the header has {self.width} columns")
            return None
        return {
            name: cells[index] if index < len(cells) else ""
            for name, index in self.positions.items()
        }


def header_check(
    row: int,
    cells: list[str],
    problems: Problems,
    *,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
) -> Header | None:
    """The header of a CSV file (names trimmed), or None with a problem for each
    missing column and each name given more than once (a known column twice would
    leave one of its cells unread; an ignored one twice is as likely a mistake).
    Other columns are ignored (a pandas index, notes), and named so the summary can
    say so; unnamed ones (empty header cells) may repeat."""
    names = [cell.strip() for cell in cells]
    known = (*required, *optional)
    where = f"row {row} (header)"
    before = problems.total
    missing = [name for name in required if name not in names]
    if missing:
        problems.add(where, f"missing column(s): {', '.join(missing)}", row=row)
    for name in dict.fromkeys(n for n in names if n):
        if (count := names.count(name)) > 1:
            problems.add(where, f"column '{name}' appears {count} times", row=row)
    if problems.total > before:
        return None
    return Header(
        row=row,
        width=len(names),
        positions={name: index for index, name in enumerate(names) if name in known},
        ignored=tuple(
            f"'{name}'" if name else f"(unnamed column {index})"
            for index, name in enumerate(names, start=1)
            if name not in known
        ),
    )
