"""Reading the published pairwise and ranking formats (``PAIRWISE_COLUMNS``,
``RANKING_COLUMNS``), each recognised by its columns. The cells shared with the
coherence format (dialogue, stage, context, reflections and their sources, annotator,
group) are checked by the same rules (``_Parser``); a row's own cells:

* pairwise, one row per (pair, annotator): ``source_a``/``reflection_a`` the
  candidate shown on the left, ``source_b``/``reflection_b`` the one on the right, of
  two different systems; ``choice`` ``A``, ``B`` or ``Tie``; ``reason`` optional (at
  most 2,000 characters, stored trimmed); one row per pair (either way round) and
  annotator;
* ranking, one row per (candidate, annotator): ``rank`` a whole number from 1 (the
  best; ``2.0`` as pandas writes it is read as 2), kept as given (a ranking whose
  off-topic candidate was left out of the export may skip a rank); one row per
  candidate and annotator.
"""

import re
from typing import NamedTuple

from ...protocol import DESCRIPTION_MAX_LENGTH, HUMAN_SOURCE, PAIR_CHOICES
from ..materials import SOURCE_MAX_LENGTH
from .columns import (
    ANNOTATOR_COLUMN,
    CHOICE_COLUMN,
    GROUP_COLUMN,
    PAIRWISE_COLUMNS,
    RANK_COLUMN,
    RANKING_COLUMNS,
    REASON_COLUMN,
    REFLECTION_A_COLUMN,
    REFLECTION_B_COLUMN,
    REFLECTION_COLUMN,
    SOURCE_B_COLUMN,
)

RANK = re.compile(r"([0-9]{1,5})(?:\.0*)?")
RANK_MAX = 32767  # a PositiveSmallIntegerField


class PairRow(NamedTuple):
    number: int
    stage: str
    dialogue: str
    source_a: str
    text_a: str
    source_b: str
    text_b: str
    pseudonym: str
    choice: str
    reason: str

    @property
    def sources(self) -> tuple[str, str]:
        return (self.source_a, self.source_b)


class RankRow(NamedTuple):
    number: int
    stage: str
    dialogue: str
    source: str
    text: str
    pseudonym: str
    rank: int

    @property
    def sources(self) -> tuple[str]:
        return (self.source,)


class PairwiseRowsMixin:
    """The pairwise format's row (for ``_Parser``, whose checks it shares)."""

    COLUMNS = (*PAIRWISE_COLUMNS, GROUP_COLUMN)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # (stage, dialogue, the pair's texts, annotator) -> its first row
        self.pairs: dict[tuple, int] = {}

    def row(self, n: int, cells: list[str]) -> None:
        read = self.row_cells(n, cells)
        if read is None:
            return
        before = self.problems.total
        (
            dialogue, stage, context, pseudonym, source_a, text_a, source_b, text_b, choice,
            reason, group,
        ) = read  # fmt: skip
        dialogue, stage, source_a, text_a, pseudonym = self.identity(
            n, dialogue, stage, source_a, text_a, pseudonym
        )
        source_b = self.required(n, SOURCE_B_COLUMN, source_b, "source", SOURCE_MAX_LENGTH)
        text_b = self.reflection(n, text_b)
        choice = choice.strip()
        if choice not in PAIR_CHOICES:
            self.add(
                n, CHOICE_COLUMN, f"expected {', '.join(PAIR_CHOICES[:-1])} or Tie, not {choice!r}"
            )
        reason = reason.strip()
        if len(reason) > DESCRIPTION_MAX_LENGTH:
            self.add(
                n,
                REASON_COLUMN,
                f"{len(reason):,} characters; at most {DESCRIPTION_MAX_LENGTH:,} are allowed",
            )
        if None not in (text_a, text_b) and text_a == text_b:
            self.add(n, REFLECTION_B_COLUMN, "the same reflection as reflection_a: a pair has two")
        elif None not in (source_a, source_b) and source_a == source_b:
            self.add(
                n,
                SOURCE_B_COLUMN,
                f'both candidates are from "{source_a}": a pair compares two systems (the '
                f'human reflection, "{HUMAN_SOURCE}", counts as one)',
            )
        self.relations(n, dialogue, stage, context, source_a, text_a, None, group)
        self.relations(n, dialogue, stage, context, source_b, text_b, pseudonym, group)
        if None not in (dialogue, stage, text_a, text_b, pseudonym):
            key = (stage, dialogue, frozenset((text_a, text_b)), pseudonym)
            first_row = self.pairs.setdefault(key, n)
            if first_row != n:
                self.problems.at_row(
                    n,
                    f"duplicate of row {first_row}: the same stage, dialogue, pair (either "
                    "way round) and annotator",
                )
        if self.problems.total == before:
            self.parsed.rows.append(
                PairRow(
                    n,
                    stage,
                    dialogue,
                    source_a,
                    text_a,
                    source_b,
                    text_b,
                    pseudonym,
                    choice,
                    reason,
                )
            )

    def item(self, n, stage, dialogue, source, text, pseudonym, dimension=None) -> None:
        """A pair's candidate agrees on its source with the rows before; the pair, not
        the candidate, is answered once (checked in ``row``)."""
        super().item(n, stage, dialogue, source, text, None)


class RankingRowsMixin:
    """The ranking format's row (for ``_Parser``, whose checks it shares)."""

    COLUMNS = (*RANKING_COLUMNS, GROUP_COLUMN)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # (stage, dialogue, annotator) -> (its first row, {text: (rank, row)})
        self.rankings: dict[tuple[str, str, str], tuple[int, dict]] = {}

    def finish(self) -> None:
        """Each ranking ranks every candidate of its dialogue's batch in the file, each
        at most one place below them all (a published ranking leaves its off-topic
        candidate out, whose place may be among the others')."""
        for (stage, dialogue, pseudonym), (first_row, ranked) in self.rankings.items():
            candidates = self.parsed.batches.get((stage, dialogue), {})
            missing = sorted(text for text in candidates if text not in ranked)
            if missing:
                self.problems.at_row(
                    first_row,
                    f"{pseudonym} ranks {len(ranked)} of the {len(candidates)} candidates of "
                    f'dialogue "{dialogue}" in stage "{stage}": a ranking ranks every '
                    f"candidate (missing: {', '.join(repr(t) for t in missing)})",
                )
                continue
            highest = len(candidates) + 1
            for rank, row in ranked.values():
                if rank > highest:
                    self.add(
                        row,
                        RANK_COLUMN,
                        f"rank {rank} among {len(candidates)} candidates: at most {highest} "
                        "(one place more for an off-topic candidate the file leaves out)",
                    )

    def row(self, n: int, cells: list[str]) -> None:
        read = self.row_cells(n, cells)
        if read is None:
            return
        before = self.problems.total
        dialogue, stage, context, source, text, pseudonym, rank, group = read
        dialogue, stage, source, text, pseudonym = self.identity(
            n, dialogue, stage, source, text, pseudonym
        )
        rank = rank.strip()
        match = RANK.fullmatch(rank)
        value = int(match.group(1)) if match is not None else None
        if value is None or not 1 <= value <= RANK_MAX:
            self.add(n, RANK_COLUMN, f"expected a whole number from 1 (the best), not {rank!r}")
        self.relations(n, dialogue, stage, context, source, text, pseudonym, group)
        if self.problems.total == before:
            self.parsed.rows.append(RankRow(n, stage, dialogue, source, text, pseudonym, value))
            _, ranked = self.rankings.setdefault((stage, dialogue, pseudonym), (n, {}))
            ranked[text] = (value, n)


def comparison_format(cells: list[str]) -> str | None:
    """Which comparison format a header is: "pairwise" (it has the pair's columns),
    "ranking" (a rank column, no Yes/No column), or None."""
    names = {cell.strip() for cell in cells}
    if {REFLECTION_A_COLUMN, REFLECTION_B_COLUMN, CHOICE_COLUMN} <= names:
        return "pairwise"
    if RANK_COLUMN in names and REFLECTION_COLUMN in names and ANNOTATOR_COLUMN in names:
        return "ranking"
    return None
