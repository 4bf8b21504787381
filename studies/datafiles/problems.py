"""What a refused data file reports: its problems, collected in one place.

Every import is all-or-nothing: the whole file is read and checked, every problem is
collected with where it is (``row 5, column 'stage'``, ``contexts[0] (id "x"), field
'turns'``, ``file``), and only a clean file is written. The collector keeps the first
``MAX_REPORTED_PROBLEMS`` in row order (file-wide problems first, then by row; one
row's problems in the order found) and counts the rest, so a file with a million bad
rows neither floods the page nor holds a million messages. :class:`DataFileError`
carries them to the interfaces, which all show them the same way: one
``where: message`` line per problem, then ``... and N more``.
"""

import heapq
import itertools
from dataclasses import dataclass, field

MAX_REPORTED_PROBLEMS = 50


@dataclass(frozen=True)
class Problem:
    where: str
    message: str
    # The row (as users count them: the header is row 1) that orders the report;
    # None for a file-wide problem or a format without rows.
    row: int | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class DataFileError(Exception):
    """A data file was refused and nothing was written: ``problems`` are the first
    ``MAX_REPORTED_PROBLEMS`` in row order, ``total`` how many there were in all."""

    def __init__(self, problems: list[Problem], total: int | None = None):
        self.problems = list(problems)
        self.total = len(self.problems) if total is None else total
        super().__init__("\n".join(self.lines()))

    @property
    def not_shown(self) -> int:
        return self.total - len(self.problems)

    def lines(self) -> list[str]:
        """One ``where: message`` line per problem, then how many were left out."""
        lines = [str(p) for p in self.problems]
        if self.not_shown:
            lines.append(f"... and {self.not_shown} more")
        return lines

    def report(self, name: str) -> str:
        """The command line's report on the file called ``name``."""
        return f"Nothing was imported: {self.total} problem(s) in {name}:\n" + "\n".join(
            f"  {line}" for line in self.lines()
        )


class Problems:
    """The problem collector of one import: ``add`` each problem as it is found, then
    ``raise_if_any`` (or ``error``) to refuse the file with all of them."""

    def __init__(self, error_class: type[DataFileError] = DataFileError):
        self.error_class = error_class
        self.total = 0
        self._kept: list[tuple[int, int, Problem]] = []  # a max-heap of (-row, -seq)
        self._seq = itertools.count()

    def add(self, where: str, message: str, *, row: int | None = None) -> None:
        self.total += 1
        entry = (-(row or 0), -next(self._seq), Problem(where, message, row))
        if len(self._kept) < MAX_REPORTED_PROBLEMS:
            heapq.heappush(self._kept, entry)
        elif entry > self._kept[0]:  # earlier in row order than the last one kept
            heapq.heapreplace(self._kept, entry)

    def at_row(self, row: int, message: str) -> None:
        self.add(f"row {row}", message, row=row)

    def at_cell(self, row: int, column: str, message: str) -> None:
        self.add(f"row {row}, column '{column}'", message, row=row)

    def __bool__(self) -> bool:
        return self.total > 0

    def __len__(self) -> int:
        return self.total

    def shown(self) -> list[Problem]:
        """The problems kept, in row order."""
        return [problem for _, _, problem in sorted(self._kept, reverse=True)]

    def error(self) -> DataFileError:
        return self.error_class(self.shown(), self.total)

    def raise_if_any(self) -> None:
        if self.total:
            raise self.error()
