"""Rows of text as typed files, for publishing a study's data: JSON Lines and Apache
Parquet.

Every export builds its rows as text (the header first), as the CSV writes them. These
files give each column the kind ``studies.columns`` names for it (a caller may name
more: the category columns, the item export's counts) and read every cell as that kind:

- ``boolean``: ``Yes`` is true, ``No`` false, an empty cell null;
- ``integer`` and ``number``: the number written; an empty cell null;
- ``timestamp``: the ISO 8601 time in UTC; an empty cell null. Parquet stores a
  timestamp in microseconds, UTC; JSON has no time type, so JSON Lines keeps the text;
- ``string``: the text exactly as stored (an empty cell stays an empty text).

So nothing is lost: a typed value written back as the CSV writes it gives the CSV's
cell. JSON Lines is streamed, one object per row, keys in column order. Parquet is
written a row group at a time (``ROW_GROUP_ROWS`` rows), so memory stays flat however
many rows there are; its schema holds the kinds even when there are no rows.

https://jsonlines.org/ · https://arrow.apache.org/docs/python/parquet.html
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime

from ..columns import BOOLEAN_COLUMNS, INTEGER_COLUMNS, NO, NUMBER_COLUMNS, TIMESTAMP_COLUMNS, YES

KINDS = ("string", "integer", "number", "boolean", "timestamp")
ROW_GROUP_ROWS = 50_000
JSONL_CHUNK_ROWS = 500
JSONL_CONTENT_TYPE = "application/jsonl"
PARQUET_CONTENT_TYPE = "application/vnd.apache.parquet"


class TypedCellError(ValueError):
    """A cell does not read as its column's kind; the message names the row and column."""


def column_kinds(header: Iterable[str], kinds: Mapping[str, str] | None = None) -> list[str]:
    """The kind of each column of ``header``: ``kinds`` first, then ``studies.columns``,
    else ``string``."""
    named = {
        **{name: "integer" for name in INTEGER_COLUMNS},
        **{name: "number" for name in NUMBER_COLUMNS},
        **{name: "boolean" for name in BOOLEAN_COLUMNS},
        **{name: "timestamp" for name in TIMESTAMP_COLUMNS},
        **(kinds or {}),
    }
    result = [named.get(name, "string") for name in header]
    unknown = sorted(set(result) - set(KINDS))
    if unknown:
        raise ValueError(f"Unknown column kinds: {', '.join(unknown)}.")
    return result


_BOOLEANS = {YES: True, NO: False, "": None}


def _boolean(text: str) -> bool | None:
    return _BOOLEANS[text]


def _integer(text: str) -> int | None:
    return int(text) if text else None


def _number(text: str) -> float | None:
    return float(text) if text else None


def _timestamp(text: str) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _string(text: str) -> str:
    return text


_READERS: dict[str, Callable[[str], object]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": _boolean,
    "timestamp": _timestamp,
}


_WHAT = {
    _string: "a text",
    _integer: "a whole number",
    _number: "a number",
    _boolean: "Yes, No or empty",
    _timestamp: "an ISO 8601 time",
}


def typed_rows(rows: Iterable[list[str]], kinds: Mapping[str, str] | None = None) -> Iterator[list]:
    """The header, then each row's cells read as their columns' kinds (see the module
    docstring). Raises ``TypedCellError`` on a cell that is not of its kind."""
    iterator = iter(rows)
    header = list(next(iterator))
    if len(set(header)) != len(header):
        raise ValueError("A typed file needs distinct column names.")
    yield header
    readers = [_READERS[kind] for kind in column_kinds(header, kinds)]
    for number, cells in enumerate(iterator, start=2):
        try:
            yield [read(cell) for read, cell in zip(readers, cells, strict=True)]
        except (KeyError, ValueError) as exc:
            raise TypedCellError(_where(header, readers, cells, number)) from exc


def _where(header, readers, cells, number) -> str:
    if len(cells) != len(header):
        return f"Row {number} has {len(cells)} cells for {len(header)} columns."
    for name, read, cell in zip(header, readers, cells, strict=True):
        try:
            read(cell)
        except (KeyError, ValueError):
            return f'Row {number}, column {name}: "{cell}" is not {_WHAT[read]}.'
    return f"Row {number} could not be read."


def jsonl_chunks(
    rows: Iterable[list[str]], kinds: Mapping[str, str] | None = None
) -> Iterator[str]:
    """JSON Lines text in chunks of ``JSONL_CHUNK_ROWS`` rows: one object per row
    (UTF-8 as written, ``\\n`` after each); timestamps as their ISO text."""
    iterator = iter(rows)
    header = list(next(iterator))
    kinds_of = column_kinds(header, kinds)
    # JSON has no time type: a timestamp keeps its ISO text (an empty cell: null).
    times = [kind == "timestamp" for kind in kinds_of]
    as_read = {
        name: "string" if time else kind
        for name, kind, time in zip(header, kinds_of, times, strict=True)
    }
    values = typed_rows(itertools.chain([header], iterator), as_read)
    next(values)
    lines: list[str] = []
    for row in values:
        record = {
            name: (value or None) if time else value
            for name, value, time in zip(header, row, times, strict=True)
        }
        lines.append(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
        if len(lines) >= JSONL_CHUNK_ROWS:
            yield "".join(lines)
            lines = []
    if lines:
        yield "".join(lines)


def parquet_write(
    rows: Iterable[list[str]], *, target, kinds: Mapping[str, str] | None = None
) -> int:
    """Write ``rows`` (the header first) as a Parquet file to ``target`` (a path or a
    binary file), a row group of ``ROW_GROUP_ROWS`` at a time; returns the number of
    rows written (the header not counted)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {
        "string": pa.string(),
        "integer": pa.int64(),
        "number": pa.float64(),
        "boolean": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    values = typed_rows(rows, kinds)
    header = next(values)
    kinds_of = column_kinds(header, kinds)
    schema = pa.schema(
        [pa.field(name, types[kind]) for name, kind in zip(header, kinds_of, strict=True)]
    )
    count = 0
    with pq.ParquetWriter(target, schema) as writer:
        block: list[list] = []
        for row in values:
            block.append(row)
            if len(block) >= ROW_GROUP_ROWS:
                count += _write_block(writer, schema, block)
                block = []
        if block or count == 0:
            count += _write_block(writer, schema, block)
    return count


def _write_block(writer, schema, block: list[list]) -> int:
    import pyarrow as pa

    columns = list(zip(*block, strict=True)) if block else [()] * len(schema)
    arrays = [
        pa.array(list(column), type=field.type)
        for column, field in zip(columns, schema, strict=True)
    ]
    writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return len(block)
