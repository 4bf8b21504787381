"""Reading a published annotation CSV: every row checked on its own and against the
rows before it, in one streaming pass (see the package docstring for the rules)."""

import operator

from ...limits import MATERIAL_TEXT_MAX_LENGTH
from ...protocol import DESCRIPTION_MAX_LENGTH, HUMAN_SOURCE
from .. import (
    CsvRecords,
    Problems,
    cell_unescape,
    header_check,
    open_text,
    parse_turns_cell,
    storable_problem,
)
from ..materials import ID_MAX_LENGTH, SOURCE_MAX_LENGTH
from .cells import (
    EMPATHY,
    GROUP_MAX_LENGTH,
    INTEGER_MAX,
    PREFIX_MAX_LENGTH,
    PSEUDONYM_MAX_LENGTH,
    STAGE_MAX_LENGTH,
    most_evident_problem,
    pseudonym_parts,
)
from .columns import (
    ANNOTATOR_COLUMN,
    COHERENT_COLUMN,
    CONTEXT_COLUMN,
    DESCRIPTION_COLUMN,
    DIALOGUE_ID_COLUMN,
    DIMENSION_COLUMN,
    EMPATHY_COLUMN,
    GROUP_COLUMN,
    LIKERT_COLUMNS,
    LIKERT_OPTIONAL_COLUMNS,
    MOST_EVIDENT_COLUMN,
    NO,
    PAIRWISE_COLUMNS,
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    PUBLISHED_OPTIONAL_COLUMNS,
    RANKING_COLUMNS,
    RATING_COLUMN,
    REFLECTION_COLUMN,
    SOURCE_COLUMN,
    STAGE_COLUMN,
    YES,
)
from .comparisons import PairwiseRowsMixin, RankingRowsMixin, comparison_format
from .likert import LikertRowsMixin
from .parsed import Parsed, ParsedContext, Row


class _Parser:
    """One pass over the records: checks each row, and across rows what must agree
    (a dialogue's context and human reflection, an annotator's group, a group's
    prefix, an item's source, one judgement per item and annotator)."""

    # The cells a row is read into, in this order (an absent optional column reads "").
    COLUMNS = (*PUBLISHED_COLUMNS, *PUBLISHED_OPTIONAL_COLUMNS)

    def __init__(
        self, positions: dict[str, int], width: int, problems: Problems, spreadsheet_safe: bool
    ):
        self.unescape = cell_unescape if spreadsheet_safe else None
        self.positions = positions
        self.width = width
        # Rows are padded to width + 1 cells: the last one stands for absent columns.
        self.cells = operator.itemgetter(*(positions.get(c, width) for c in self.COLUMNS))
        self.problems = problems
        self.parsed = Parsed((), [], {}, {}, {}, {}, {})
        self.annotator_rows: dict[str, int] = {}
        self.group_rows: dict[str, int] = {}
        self.prefix_groups: dict[str, tuple[str, int]] = {}  # prefix -> (group, row)
        self.item_rows: dict[tuple[str, str, str], int] = {}
        self.judged: dict[tuple[str, str, str, str, str | None], int] = {}
        self.category_sets: dict[frozenset, frozenset] = {}

    def add(self, n: int, column: str, message: str) -> None:
        self.problems.at_cell(n, column, message)

    def row_cells(self, n: int, cells: list[str]) -> tuple | None:
        """A row's cells in ``COLUMNS`` order (unescaped from a spreadsheet-safe file;
        an absent optional column reads ""), or None for a row wider than the header
        (said as a problem)."""
        if self.unescape is not None:
            cells = [self.unescape(c) for c in cells]
        if len(cells) > self.width:
            self.problems.at_row(n, f"{len(cells)} cells but the header has {self.width} columns")
            return None
        return self.cells(cells + [""] * (self.width + 1 - len(cells)))

    def required(self, n: int, column: str, value: str, what: str, max_length: int):
        value = value.strip()
        problem = f"empty {what}" if not value else storable_problem(value, max_length)
        if problem:
            self.add(n, column, problem)
            return None
        return value

    def row(self, n: int, cells: list[str]) -> None:
        read = self.row_cells(n, cells)
        if read is None:
            return
        before = self.problems.total
        (
            dialogue,
            stage,
            context,
            source,
            text,
            pseudonym,
            answer,
            *categories,
            group,
            most_evident,
            empathy,
            description,
        ) = read
        dialogue, stage, source, text, pseudonym = self.identity(
            n, dialogue, stage, source, text, pseudonym
        )
        coherent, categories, most_evident, empathy = self.answer(
            n, answer.strip(), categories, most_evident.strip() or None, empathy.strip()
        )
        description = self.description(n, answer.strip(), description.strip())
        self.relations(n, dialogue, stage, context, source, text, pseudonym, group)
        if self.problems.total == before:
            self.parsed.rows.append(
                Row(
                    n,
                    stage,
                    dialogue,
                    source,
                    text,
                    pseudonym,
                    coherent,
                    categories,
                    most_evident,
                    empathy,
                    description,
                )
            )

    def identity(self, n: int, dialogue, stage, source, text, pseudonym) -> tuple:
        """The cells that name a row's item and annotator, checked (None: refused)."""
        dialogue = self.required(n, DIALOGUE_ID_COLUMN, dialogue, "dialogue id", ID_MAX_LENGTH)
        stage = self.required(n, STAGE_COLUMN, stage, "stage", STAGE_MAX_LENGTH)
        source = self.required(n, SOURCE_COLUMN, source, "source", SOURCE_MAX_LENGTH)
        pseudonym = self.required(n, ANNOTATOR_COLUMN, pseudonym, "annotator", PSEUDONYM_MAX_LENGTH)
        return dialogue, stage, source, self.reflection(n, text), pseudonym

    def relations(
        self, n, dialogue, stage, context, source, text, pseudonym, group, dimension=None
    ) -> None:
        """What a row must agree on with the rows before it: its dialogue's context and
        human reflection, its annotator's group, its item's source, one answer (one
        rating of a ``dimension``) per item and annotator."""
        if dialogue is not None:
            self.context(n, dialogue, context.strip())
            if text is not None:
                self.human_if_so(n, dialogue, source, text)
        if pseudonym is not None:
            self.annotator(n, pseudonym, group.strip())
        if stage is not None:
            self.parsed.stages.setdefault(stage)
        if None not in (dialogue, stage, source, text):
            self.item(n, stage, dialogue, source, text, pseudonym, dimension)

    def finish(self) -> None:
        """Checks over the whole file, after its last row (none here)."""

    def reflection(self, n: int, text: str) -> str | None:
        """The reflection, kept exactly (None: refused)."""
        problem = (
            "empty reflection"
            if not text.strip()
            else storable_problem(text, MATERIAL_TEXT_MAX_LENGTH)
        )
        if problem:
            self.add(n, REFLECTION_COLUMN, problem)
            return None
        return text

    def human_if_so(self, n: int, dialogue: str, source: str | None, text: str) -> None:
        if source == HUMAN_SOURCE:
            self.human(n, dialogue, text)

    def description(self, n: int, answer: str, description: str) -> str:
        """Any non-empty description up to the cap, on a No (the typing minimum is for
        the annotation page)."""
        if description and answer == YES:
            self.add(
                n, DESCRIPTION_COLUMN, f"a description is only given when {COHERENT_COLUMN} is {NO}"
            )
        elif len(description) > DESCRIPTION_MAX_LENGTH:
            self.add(
                n,
                DESCRIPTION_COLUMN,
                f"{len(description):,} characters; at most {DESCRIPTION_MAX_LENGTH:,} are allowed",
            )
        return description

    def answer(
        self, n: int, answer: str, cells: list[str], most_evident: str | None, empathy: str
    ) -> tuple[bool, frozenset[str], str | None, int | None]:
        if answer not in (YES, NO):
            self.add(n, COHERENT_COLUMN, f"expected {YES} or {NO}, not {answer!r}")
        selected = set()
        for column, value in zip(PUBLISHED_CATEGORY_COLUMNS, cells, strict=True):
            value = value.strip()
            if value == YES:
                selected.add(column)
                if answer == YES:
                    self.add(
                        n, column, f"a category can only be {YES} when {COHERENT_COLUMN} is {NO}"
                    )
            elif value:
                self.add(n, column, f"expected {YES} or empty, not {value!r}")
        if most_evident is not None and (
            problem := most_evident_problem(most_evident, answer, selected)
        ):
            self.add(n, MOST_EVIDENT_COLUMN, problem)
        rating = None
        if empathy:
            match = EMPATHY.fullmatch(empathy)
            if match is None:
                self.add(n, EMPATHY_COLUMN, f"expected a whole number from 1 to 5, not {empathy!r}")
            elif answer == NO:
                self.add(
                    n,
                    EMPATHY_COLUMN,
                    f"the 1-5 rating is only given when {COHERENT_COLUMN} is {YES}",
                )
            else:
                rating = int(match.group(1))
        categories = frozenset(selected)
        return (
            answer == YES,
            self.category_sets.setdefault(categories, categories),
            most_evident,
            rating,
        )

    def context(self, n: int, dialogue: str, raw: str) -> None:
        context = self.parsed.contexts.get(dialogue)
        if context is None:
            context = self.parsed.contexts[dialogue] = ParsedContext(first_row=n)
        if not raw or raw == context.raw:  # most rows repeat the cell: parse it once
            return
        turns, error = parse_turns_cell(raw)
        if error:
            context.invalid = True
            self.add(n, CONTEXT_COLUMN, error)
        elif context.turns is None:
            context.raw, context.turns, context.turns_row = raw, turns, n
        elif turns != context.turns:
            self.add(
                n,
                CONTEXT_COLUMN,
                f'differs from the dialogue_context of dialogue "{dialogue}" in row '
                f"{context.turns_row}: a study stores one context per dialogue id",
            )

    def human(self, n: int, dialogue: str, text: str) -> None:
        context = self.parsed.contexts[dialogue]
        if context.human is None:
            context.human = (text, n)
        elif context.human[0] != text:
            self.add(
                n,
                REFLECTION_COLUMN,
                f'a second, different human reflection for dialogue "{dialogue}" '
                f"(row {context.human[1]} has another); a dialogue has one",
            )

    def annotator(self, n: int, pseudonym: str, group: str) -> None:
        known = self.parsed.annotators.get(pseudonym)
        if known is not None:
            group = group or known[2]
            if known[0] != group:
                self.add(
                    n,
                    GROUP_COLUMN,
                    f'annotator "{pseudonym}" is in group "{group}" here but in group '
                    f'"{known[0]}" in row {self.annotator_rows[pseudonym]}; an annotator '
                    "belongs to one group",
                )
            return
        parts = pseudonym_parts(pseudonym)
        has_group = GROUP_COLUMN in self.positions
        if parts is None:
            self.add(
                n,
                ANNOTATOR_COLUMN,
                f'{pseudonym!r} is not "<name> <number>" like "Expert 4" (a number from 1 '
                "without leading zeros, after one space); "
                + (
                    "pseudonyms keep this shape when annotator_group names the group"
                    if has_group
                    else "the group is the name without the number"
                ),
            )
            return
        prefix, number = parts
        if number > INTEGER_MAX:
            self.add(n, ANNOTATOR_COLUMN, f"annotator number too large: {pseudonym!r}")
            return
        if len(prefix) > PREFIX_MAX_LENGTH:
            self.add(
                n,
                ANNOTATOR_COLUMN,
                f"the name before the number is longer than {PREFIX_MAX_LENGTH} characters",
            )
            return
        if group and (problem := storable_problem(group, GROUP_MAX_LENGTH)):
            self.add(n, GROUP_COLUMN, problem)
            return
        group = group or prefix
        group_prefix = self.parsed.groups.get(group)
        owner = self.prefix_groups.get(prefix)
        if group_prefix is not None and group_prefix != prefix:
            self.add(
                n,
                ANNOTATOR_COLUMN,
                f'group "{group}" names its annotators "{group_prefix} <number>" '
                f'(row {self.group_rows[group]}), not "{prefix} <number>": a group\'s '
                "pseudonyms share one prefix",
            )
        elif owner is not None and owner[0] != group:
            self.add(
                n,
                ANNOTATOR_COLUMN,
                f'the prefix "{prefix}" already names annotators of group '
                f'"{owner[0]}" (row {owner[1]}); two groups cannot share a prefix',
            )
        else:
            self.parsed.annotators[pseudonym] = (group, number, prefix)
            self.annotator_rows[pseudonym] = n
            if group not in self.parsed.groups:
                self.parsed.groups[group] = prefix
                self.group_rows[group] = n
                self.prefix_groups[prefix] = (group, n)

    def item(
        self,
        n: int,
        stage: str,
        dialogue: str,
        source: str,
        text: str,
        pseudonym: str | None,
        dimension: str | None = None,
    ) -> None:
        """An item's source agrees with its first row, and an annotator answers it once
        (in the Likert format: rates each ``dimension`` of it once)."""
        known_source = self.parsed.batches.setdefault((stage, dialogue), {}).setdefault(
            text, source
        )
        key = (stage, dialogue, text)
        first_row = self.item_rows.setdefault(key, n)
        if known_source != source:
            self.add(
                n,
                SOURCE_COLUMN,
                f'the same reflection has the source "{known_source}" in row {first_row}: '
                "within a stage and dialogue a reflection is identified by its text",
            )
        elif pseudonym is not None:
            first_row = self.judged.setdefault((*key, pseudonym, dimension), n)
            if first_row != n:
                self.problems.at_row(
                    n,
                    f"duplicate of row {first_row}: the same stage, dialogue, reflection "
                    + ("and annotator" if dimension is None else "annotator and dimension"),
                )


class _LikertParser(LikertRowsMixin, _Parser):
    """The published Likert format (``studies.datafiles.published.likert``)."""


class _PairwiseParser(PairwiseRowsMixin, _Parser):
    """The published pairwise format (``studies.datafiles.published.comparisons``)."""


class _RankingParser(RankingRowsMixin, _Parser):
    """The published ranking format (``studies.datafiles.published.comparisons``)."""


#: Each format's parser and columns (required, optional), by instrument.
_FORMATS = {
    "coherence": (_Parser, PUBLISHED_COLUMNS, PUBLISHED_OPTIONAL_COLUMNS),
    "likert": (_LikertParser, LIKERT_COLUMNS, LIKERT_OPTIONAL_COLUMNS),
    "pairwise": (_PairwiseParser, PAIRWISE_COLUMNS, (GROUP_COLUMN,)),
    "ranking": (_RankingParser, RANKING_COLUMNS, (GROUP_COLUMN,)),
}


def is_likert_header(cells: list[str]) -> bool:
    """Whether a header is the published Likert format's: it has the columns of a
    rating and no Yes/No column."""
    names = {cell.strip() for cell in cells}
    return {DIMENSION_COLUMN, RATING_COLUMN} <= names and COHERENT_COLUMN not in names


def published_parse(source, problems: Problems, spreadsheet_safe: bool) -> Parsed | None:
    """Read a published CSV (a path, bytes, text or an open file): the coherence
    format, or the Likert, pairwise or ranking format (each recognised by its columns:
    ``is_likert_header``, ``comparison_format``); None when the file has no usable
    header. Problems go to ``problems``."""
    with open_text(source) as (stream, reopen):
        records = CsvRecords(stream, problems, reopen)
        rows = iter(records)
        first = next(rows, None)
        if first is None:
            if not problems:
                problems.add("file", "is empty: expected a header row and one row per judgement")
            return None
        instrument = comparison_format(first[1]) or (
            "likert" if is_likert_header(first[1]) else "coherence"
        )
        parser_class, required, optional = _FORMATS[instrument]
        header = header_check(first[0], first[1], problems, required=required, optional=optional)
        if header is None:
            return None
        parser = parser_class(header.positions, header.width, problems, spreadsheet_safe)
        parser.parsed.instrument = instrument
        parser.parsed.ignored_columns = header.ignored
        for n, cells in rows:
            parser.row(n, cells)
    parsed = parser.parsed
    if records.stopped:
        return parsed
    parser.finish()
    for dialogue, context in parsed.contexts.items():
        if context.turns is None and not context.invalid:
            problems.add(
                f'dialogue "{dialogue}" (first in row {context.first_row})',
                f"no row gives its {CONTEXT_COLUMN}",
                row=context.first_row,
            )
    if not parsed.contexts and not problems:
        problems.add("file", "has a header but no rows")
    return parsed
