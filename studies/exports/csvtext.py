"""Rows of cells to CSV text in chunks (RFC 4180, ``\\r\\n``), for streaming responses
and files: the one writer of every CSV export."""

import csv
from collections.abc import Iterable, Iterator

ROWS_PER_WRITE = 500


class _Line:
    """A write-only file for csv.writer that hands back what was written."""

    def write(self, value: str) -> str:
        return value


def csv_chunks(rows: Iterable[list[str]]) -> Iterator[str]:
    """The CSV text of ``rows`` in chunks of a few hundred rows."""
    writer = csv.writer(_Line(), lineterminator="\r\n")
    buffer: list[str] = []
    for cells in rows:
        buffer.append(writer.writerow(cells))
        if len(buffer) >= ROWS_PER_WRITE:
            yield "".join(buffer)
            buffer.clear()
    if buffer:
        yield "".join(buffer)
