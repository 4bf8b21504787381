"""Reading the published Likert format (``LIKERT_COLUMNS``): one row per (candidate,
annotator, dimension), recognised by its columns. The rows shared with the coherence
format (dialogue, stage, context, source, reflection, annotator, group) are checked
by the same rules (``_Parser``); a row's own cells:

* ``dimension``: a name as a stage's dimension takes it (lower-case letters, digits
  and underscores, starting with a letter);
* ``scale``: the number of points (2 to 11) or ``slider``, the same on every row of a
  stage's dimension;
* ``cannot_judge``: ``Yes`` or ``No``; ``rating``: empty on Yes, else a whole number
  on the scale (1 … n, or 0 … 100 on a slider; ``4.0`` as pandas writes it is read
  as 4);
* one row per stage, dialogue, reflection, annotator and dimension, and an annotator's
  answer rates every dimension of its stage (as the annotation page asks).
"""

import re
from typing import NamedTuple

from ...models import SLUG_REGEX, LikertDimension
from ...protocol import LIKERT_POINTS_MAX, LIKERT_POINTS_MIN, likert_scale_range
from .columns import (
    CANNOT_JUDGE_COLUMN,
    DIMENSION_COLUMN,
    LIKERT_COLUMNS,
    LIKERT_OPTIONAL_COLUMNS,
    NO,
    RATING_COLUMN,
    SCALE_COLUMN,
    SLIDER_SCALE,
    YES,
)

NAME_MAX_LENGTH = LikertDimension._meta.get_field("name").max_length
RATING = re.compile(r"([0-9]{1,3})(?:\.0*)?")


class LikertRow(NamedTuple):
    number: int
    stage: str
    dialogue: str
    source: str
    text: str
    pseudonym: str
    dimension: str
    value: int | None
    cannot_judge: bool

    @property
    def sources(self) -> tuple[str]:
        return (self.source,)


def scale_points(value: str) -> tuple[bool, int | None]:
    """``(valid, points)`` of a ``scale`` cell: points, or None for a slider."""
    if value == SLIDER_SCALE:
        return True, None
    if value.isdigit() and LIKERT_POINTS_MIN <= int(value) <= LIKERT_POINTS_MAX:
        return True, int(value)
    return False, None


class LikertRowsMixin:
    """The Likert format's row (for ``_Parser``, whose checks it shares)."""

    COLUMNS = (*LIKERT_COLUMNS, *LIKERT_OPTIONAL_COLUMNS)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # (stage, dialogue, reflection, annotator) -> (its first row, dimensions rated)
        self.answers: dict[tuple[str, str, str, str], tuple[int, set[str]]] = {}

    def finish(self) -> None:
        """Every answer rates every dimension of its stage, as the annotation page
        asks."""
        by_stage: dict[str, list[str]] = {}
        for stage, name in self.parsed.dimensions:
            by_stage.setdefault(stage, []).append(name)
        for (stage, _dialogue, _text, pseudonym), (row, names) in self.answers.items():
            missing = [name for name in by_stage.get(stage, ()) if name not in names]
            if missing:
                self.problems.at_row(
                    row,
                    f"{pseudonym} rates this reflection on {', '.join(sorted(names))} but not "
                    f'on {", ".join(missing)}: in stage "{stage}" each candidate is rated on '
                    "every dimension",
                )

    def row(self, n: int, cells: list[str]) -> None:
        read = self.row_cells(n, cells)
        if read is None:
            return
        before = self.problems.total
        (
            dialogue, stage, context, source, text, pseudonym, dimension, scale, rating,
            cannot_judge, group,
        ) = read  # fmt: skip
        dialogue, stage, source, text, pseudonym = self.identity(
            n, dialogue, stage, source, text, pseudonym
        )
        dimension = self.dimension(n, stage, dimension.strip(), scale.strip())
        value, cannot = self.rating(n, stage, dimension, rating.strip(), cannot_judge.strip())
        self.relations(n, dialogue, stage, context, source, text, pseudonym, group, dimension)
        if None not in (dialogue, stage, source, text, pseudonym, dimension):
            _first, names = self.answers.setdefault((stage, dialogue, text, pseudonym), (n, set()))
            names.add(dimension)
        if self.problems.total == before:
            self.parsed.rows.append(
                LikertRow(n, stage, dialogue, source, text, pseudonym, dimension, value, cannot)
            )

    def dimension(self, n: int, stage: str | None, name: str, scale: str) -> str | None:
        if not name:
            self.add(n, DIMENSION_COLUMN, "empty dimension")
            name = None
        elif len(name) > NAME_MAX_LENGTH or not re.fullmatch(SLUG_REGEX, name):
            self.add(
                n,
                DIMENSION_COLUMN,
                f"{name!r} is not a dimension name: lower-case letters, digits and "
                f"underscores, starting with a letter, at most {NAME_MAX_LENGTH} characters",
            )
            name = None
        valid, points = scale_points(scale)
        if not valid:
            self.add(
                n,
                SCALE_COLUMN,
                f"expected the number of points ({LIKERT_POINTS_MIN} to {LIKERT_POINTS_MAX}) "
                f"or {SLIDER_SCALE}, not {scale!r}",
            )
            return None
        if name is None or stage is None:
            return None
        known = self.parsed.dimensions.setdefault((stage, name), (points, n))
        if known[0] != points:
            self.add(
                n,
                SCALE_COLUMN,
                f'the dimension "{name}" of stage "{stage}" has the scale '
                f"{SLIDER_SCALE if known[0] is None else known[0]} in row {known[1]}: a "
                "dimension has one scale",
            )
            return None
        return name

    def rating(
        self, n: int, stage: str | None, dimension: str | None, rating: str, cannot_judge: str
    ) -> tuple[int | None, bool]:
        if cannot_judge not in (YES, NO):
            self.add(n, CANNOT_JUDGE_COLUMN, f"expected {YES} or {NO}, not {cannot_judge!r}")
            return None, False
        if cannot_judge == YES:
            if rating:
                self.add(
                    n, RATING_COLUMN, f"a rating is only given when {CANNOT_JUDGE_COLUMN} is {NO}"
                )
            return None, True
        if dimension is None:
            return None, False
        low, high = likert_scale_range(self.parsed.dimensions[stage, dimension][0])
        match = RATING.fullmatch(rating)
        if match is None or not low <= int(match.group(1)) <= high:
            self.add(
                n, RATING_COLUMN, f"expected a whole number from {low} to {high}, not {rating!r}"
            )
            return None, False
        return int(match.group(1)), False
