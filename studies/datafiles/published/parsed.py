"""What reading a published annotation CSV yields: its rows, and what they say about
the study's stages, contexts, annotators, groups and batches."""

from dataclasses import dataclass, field
from typing import NamedTuple


class Row(NamedTuple):
    number: int
    stage: str
    dialogue: str
    source: str
    text: str
    pseudonym: str
    coherent: bool
    categories: frozenset[str]
    most_evident: str | None
    empathy: int | None
    description: str = ""

    @property
    def sources(self) -> tuple[str]:
        """The sources of the candidates the row answers (every format's rows have it)."""
        return (self.source,)


@dataclass
class ParsedContext:
    first_row: int
    raw: str | None = None  # the first dialogue_context cell that parsed, verbatim
    turns: list | None = None
    turns_row: int = 0
    invalid: bool = False
    human: tuple[str, int] | None = None  # (text, row)


@dataclass
class Parsed:
    ignored_columns: tuple[str, ...]
    rows: list  # Row, or the other formats' LikertRow, PairRow, RankRow
    stages: dict[str, None]  # in order of first appearance
    contexts: dict[str, ParsedContext]
    annotators: dict[str, tuple[str, int, str]]  # pseudonym -> (group, number, prefix)
    groups: dict[str, str]  # group -> pseudonym prefix
    batches: dict[tuple[str, str], dict[str, str]]  # (stage, dialogue) -> {text: source}
    #: The file's instrument: "coherence", or "likert", "pairwise", "ranking" (their
    #: formats' rows).
    instrument: str = "coherence"
    #: (stage, dimension name) -> (points, None for a slider; its first row), in order
    dimensions: dict[tuple[str, str], tuple[int | None, int]] = field(default_factory=dict)

    @property
    def likert(self) -> bool:
        """The Likert format: its rows are ``LikertRow`` s, one per rating."""
        return self.instrument == "likert"
