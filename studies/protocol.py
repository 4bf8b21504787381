"""Fixed vocabulary of the annotation protocol.

Kept apart from the models so importers, exports and analysis share one source.
"""

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

HUMAN_SOURCE = "Human"
ATTENTION_SOURCE = "Attention check"

TURN_ROLES = ("therapist", "client")

COHERENCE_QUESTION = "Is this response candidate coherent and consistent with the dialogue?"
# The word "empathy" is never shown to annotators.
EMPATHY_STATEMENT = (
    "The response candidate gives me the impression that the therapist understands "
    "the client's perceptions, situation, meaning, and feelings."
)


def default_empathy_labels() -> list[str]:
    """The five labels of the agreement scale, 1 to 5 (a study's default)."""
    return [EMPATHY_SCALE[value] for value in sorted(EMPATHY_SCALE)]


EMPATHY_SCALE = {
    1: "disagree",
    2: "somewhat disagree",
    3: "neither agree nor disagree",
    4: "somewhat agree",
    5: "agree",
}


# A typed description of what is wrong (a "No" in a stage that asks for one): at least
# this many characters after trimming when typed; imported data only needs some text.
DESCRIPTION_MIN_LENGTH = 10
DESCRIPTION_MAX_LENGTH = 2_000

# How a stage has "No" answered (``Stage.no_answer``).
NO_ANSWER_CATEGORIES = "categories"
NO_ANSWER_FREE_TEXT = "free_text"
NO_ANSWER_BOTH = "both"


# What a stage asks of its response candidates (``Stage.instrument``): the coherence
# protocol above, ratings on the stage's Likert dimensions, a preference within pairs
# of candidates, or a ranking of a context's candidates.
INSTRUMENT_COHERENCE = "coherence"
INSTRUMENT_LIKERT = "likert"
INSTRUMENT_PAIRWISE = "pairwise"
INSTRUMENT_RANKING = "ranking"
INSTRUMENTS = (INSTRUMENT_COHERENCE, INSTRUMENT_LIKERT, INSTRUMENT_PAIRWISE, INSTRUMENT_RANKING)

# What a pairwise or ranking stage asks unless it words its question itself.
INSTRUMENT_QUESTIONS = {
    INSTRUMENT_PAIRWISE: "Which of the two responses is better?",
    INSTRUMENT_RANKING: "Put the responses in order, the best first.",
}

# A pairwise answer, as the annotator saw the pair: the candidate shown on the left
# (A), the one on the right (B), or neither (a tie, where the stage allows ties).
CHOICE_A, CHOICE_B, CHOICE_TIE = "A", "B", "Tie"
PAIR_CHOICES = (CHOICE_A, CHOICE_B, CHOICE_TIE)

# A Likert dimension rates on 2 to 11 points (1 … n), or on a slider from 0 to 100.
LIKERT_POINTS_MIN, LIKERT_POINTS_MAX = 2, 11
SLIDER_MIN, SLIDER_MAX = 0, 100
# The attention check's passing ratings when the researcher names none: the lowest
# point, or 0–20 on a slider (the check's candidate comes from another dialogue).
SLIDER_ATTENTION_PASS = (0, 20)
# An answer's rating on a dimension is ``rating_<name>``: the annotation form's field,
# and the key of the save's refusal of it.
RATING_FIELD_PREFIX = "rating_"


@dataclass(frozen=True)
class AnswerSettings:
    """What a stage asks after Yes and after No: the one place the item panel, the
    keyboard flow, the review page and ``answer_encode`` read it from
    (``Stage.answer_settings``). A quiz or a preview builds one the same way."""

    no_answer: str = NO_ANSWER_CATEGORIES
    empathy_after_yes: bool = True
    #: The coherence protocol (what the two settings above shape), Likert ratings, a
    #: preference within pairs or a ranking.
    instrument: str = INSTRUMENT_COHERENCE
    #: Pairwise and ranking: two candidates may be equally good (a tie, a shared rank).
    allows_ties: bool = True
    #: Pairwise: a box for an optional reason for the choice.
    asks_reason: bool = False

    @property
    def rates_dimensions(self) -> bool:
        """Each candidate is rated on the stage's Likert dimensions (no Yes/No)."""
        return self.instrument == INSTRUMENT_LIKERT

    @property
    def compares_pairs(self) -> bool:
        """Each item is a pair of candidates: A, B (or a tie)."""
        return self.instrument == INSTRUMENT_PAIRWISE

    @property
    def ranks_candidates(self) -> bool:
        """The batch is one item: its candidates put in order, best first."""
        return self.instrument == INSTRUMENT_RANKING

    def item_count(self, order: list) -> int:
        """How many items an assignment of this stage has (its ``order``'s entries; a
        ranking is one)."""
        return 1 if self.ranks_candidates else len(order)

    @property
    def asks_categories(self) -> bool:
        """After No: the error categories (and the most evident error among them)."""
        return self.no_answer in (NO_ANSWER_CATEGORIES, NO_ANSWER_BOTH)

    @property
    def asks_description(self) -> bool:
        """After No: a description in the annotator's own words."""
        return self.no_answer in (NO_ANSWER_FREE_TEXT, NO_ANSWER_BOTH)

    @property
    def description_required(self) -> bool:
        """The description is the whole answer to No (no categories are shown)."""
        return self.no_answer == NO_ANSWER_FREE_TEXT


DEFAULT_ANSWER_SETTINGS = AnswerSettings()


def likert_scale_range(points: int | None) -> tuple[int, int]:
    """The lowest and highest rating of a dimension: 1 … ``points``, or the slider's
    0 … 100 (``points`` None)."""
    return (SLIDER_MIN, SLIDER_MAX) if points is None else (1, points)


def likert_attention_pass_default(points: int | None) -> tuple[int, int]:
    """The ratings that pass the attention check by default (inclusive)."""
    return SLIDER_ATTENTION_PASS if points is None else (1, 1)


@dataclass(frozen=True)
class DefaultCategory:
    slug: str
    label: str
    definition: str
    order: int
    bit: int
    # A No with this category passes the attention check (the check's candidate is
    # taken from another dialogue).
    catches_attention_check: bool = False


# Bits follow the column order of the published format; ``order`` is the
# order annotators see. Bits are storage only and never change for a study.
DEFAULT_ERROR_CATEGORIES: tuple[DefaultCategory, ...] = (
    DefaultCategory(
        "malformed",
        "Malformed",
        "Unclear references, bad grammar, and/or confusing logic: the sentences may be "
        "fine alone but are confusing together.",
        order=1,
        bit=1,
    ),
    DefaultCategory(
        "dialogue_contradicting",
        "Dialogue-contradicting",
        "Contradicts the dialogue, partly or fully.",
        order=2,
        bit=0,
    ),
    DefaultCategory(
        "parroting",
        "Parroting",
        "Repeats part of the dialogue in an unnatural way. Natural repetition that affirms "
        "the client is good practice, not parroting.",
        order=3,
        bit=4,
    ),
    DefaultCategory(
        "off_topic",
        "Off-topic",
        "Has little or no relevance to the dialogue.",
        order=4,
        bit=2,
        catches_attention_check=True,
    ),
    DefaultCategory(
        "on_topic_but_unverifiable",
        "On-topic but unverifiable",
        "Relevant to the dialogue, but contains content that cannot be verified from the "
        "dialogue alone.",
        order=5,
        bit=3,
    ),
)

# These three merge into "Hallucinatory" for the merged MEE analysis (a study's
# default ``Study.mee_merge``: merged label -> the slugs it merges).
HALLUCINATORY_CATEGORIES = ("dialogue_contradicting", "off_topic", "on_topic_but_unverifiable")


def default_mee_merge() -> dict[str, list[str]]:
    return {"hallucinatory": list(HALLUCINATORY_CATEGORIES)}


def category_selected(flags, bit: int):
    """Whether the category stored at ``bit`` is among the chosen ones of ``flags``
    (``Judgement.error_flags``). Works on an int and, element-wise, on a numpy array:
    the one place the bit set's meaning is written down."""
    return (flags >> bit) & 1 != 0


def selected_categories(flags: int, categories: Iterable[tuple[int, str]]) -> list[str]:
    """The chosen categories of ``flags``: the second element of each ``(bit, name)``
    pair in ``categories`` whose bit is set, in the order given (names may be slugs or
    labels)."""
    return [name for bit, name in categories if category_selected(flags, bit)]


def shuffled_order(
    reflection_ids: Iterable[int], *, seed: int, pseudonym: str, stage_position: int, dialogue: str
) -> list[int]:
    """An annotator's order of a batch's reflections (given in batch order): reproducible
    from the study seed. Keyed by stable names (pseudonym, stage position, dialogue id),
    not database ids, so a copy of the study, or an audit, replays it."""
    ids = list(reflection_ids)
    random.Random(order_shuffle_key(seed, pseudonym, stage_position, dialogue)).shuffle(ids)
    return ids


def order_shuffle_key(seed: int, pseudonym: str, stage_position: int, dialogue: str) -> str:
    """The seed of an annotator's own order of a batch (``shuffled_order``,
    ``pairwise_order``)."""
    return f"{seed}/order/{pseudonym}/{stage_position}/{dialogue}"


def stage_finished(
    *, open_: int, submitted: int, m: int, batch_possible: bool, left: bool = False
) -> bool:
    """The one rule of "this stage is finished for the annotator" (its inputs counted
    by the caller: for one annotator in ``studies.selectors.stages``, for everyone
    at once in ``studies.selectors.progress``): nothing of theirs is open in it, and they
    submitted ``m`` batches, or no batch of it can ever be theirs (``batch_possible``:
    a batch they never had still lacks k submitted annotators of their group), or they
    ``left`` it (for a later stage, or a crowd worker's part ended early:
    ``CrowdEntry.Outcome.PARTIAL``)."""
    return not open_ and (left or submitted >= m or not batch_possible)


def group_takes_part(chosen: Collection[int], group_id: int) -> bool:
    """The one rule of "this group works in the stage": the stage's chosen groups
    (``Stage.groups``) include it, or none are chosen (every group takes part)."""
    return not chosen or group_id in chosen


def stage_wait(min_wait: timedelta, group_waits: Mapping[int, timedelta], group_id: int):
    """A stage's minimum wait for a group: the group's own (``StageGroupWait``, by
    group id), else the stage's."""
    return group_waits.get(group_id, min_wait)


# --- Gated stages ---------------------------------------------------------------------

GATE_MAJORITY_COHERENT = "majority_coherent"
GATE_MAJORITY_INCOHERENT = "majority_incoherent"
GATE_MAJORITY_CATEGORY = "majority_category"
GATE_SCORE_AT_LEAST = "score_at_least"
GATE_NOT_UNANIMOUS = "not_unanimous"
GATE_MAJORITIES_DIFFER = "majorities_differ"
GATE_LIKERT_MEAN_AT_LEAST = "likert_mean_at_least"
GATE_RULES = (
    GATE_MAJORITY_COHERENT,
    GATE_MAJORITY_INCOHERENT,
    GATE_MAJORITY_CATEGORY,
    GATE_SCORE_AT_LEAST,
    GATE_NOT_UNANIMOUS,
    GATE_MAJORITIES_DIFFER,
    GATE_LIKERT_MEAN_AT_LEAST,
)


def majority_holds(*, votes, raters, min_raters: int):
    """The majority rule: more than half of an item's ``raters`` gave the vote
    (``votes`` of them did), with at least ``min_raters`` raters. Numbers, or numpy
    arrays of equal length (then an array of booleans)."""
    return (raters >= min_raters) & (2 * votes > raters)


def majority_side(*, yes: int, raters: int) -> str | None:
    """A group's majority on an item: "coherent", "incoherent", or None (a tie, or
    no rater); a lone rater's answer is the group's."""
    if majority_holds(votes=yes, raters=raters, min_raters=1):
        return "coherent"
    if majority_holds(votes=raters - yes, raters=raters, min_raters=1):
        return "incoherent"
    return None


@dataclass(frozen=True)
class GateVotes:
    """What a gate rule reads of one group's ratings of one item: ``raters`` who
    answered, ``yes`` (coherent), ``flagged`` (chose the rule's category), ``mean``
    (the rule's Likert dimension, "cannot judge" left out; None without a rating)."""

    raters: int
    yes: int = 0
    flagged: int = 0
    mean: float | None = None


def gate_passes(
    rule: str,
    votes: GateVotes,
    *,
    other: GateVotes | None = None,
    min_votes: int | None = None,
    threshold: float | None = None,
) -> bool:
    """The one rule of "this item passed the gate", from the deciding group's
    ``votes`` (and the second group's, ``other``, for the rule comparing groups).
    A majority rule (coherent, incoherent, a category) needs more than half of the
    raters, and at least ``min_votes`` of them when set; the coherence score rule at
    least ``threshold`` Yes; the Likert rule an item mean of at least ``threshold``."""
    if rule in (GATE_MAJORITY_COHERENT, GATE_MAJORITY_INCOHERENT, GATE_MAJORITY_CATEGORY):
        given = {
            GATE_MAJORITY_COHERENT: votes.yes,
            GATE_MAJORITY_INCOHERENT: votes.raters - votes.yes,
            GATE_MAJORITY_CATEGORY: votes.flagged,
        }[rule]
        return bool(majority_holds(votes=given, raters=votes.raters, min_raters=1)) and (
            min_votes is None or given >= min_votes
        )
    if rule == GATE_SCORE_AT_LEAST:
        return votes.yes >= threshold
    if rule == GATE_NOT_UNANIMOUS:
        return 0 < votes.yes < votes.raters
    if rule == GATE_MAJORITIES_DIFFER:
        return majority_side(yes=votes.yes, raters=votes.raters) != majority_side(
            yes=other.yes, raters=other.raters
        )
    if rule == GATE_LIKERT_MEAN_AT_LEAST:
        return votes.mean is not None and votes.mean >= threshold
    raise ValueError(f"No such gate rule: {rule!r}.")


# --- Pairwise preference and ranking --------------------------------------------------


def order_key(entry) -> tuple[int, int | None]:
    """The answer one entry of an assignment's ``order`` asks for, as ``Judgement``
    keys it: ``(reflection, opponent)``. An entry is a reflection id, or in a pairwise
    stage ``[first, second, swapped]`` (``pairwise_order``)."""
    if isinstance(entry, list | tuple):
        return (entry[0], entry[1])
    return (entry, None)


def order_keys(order) -> list[tuple[int, int | None]]:
    """Every answer an assignment's ``order`` asks for (a ranking: one per candidate,
    though the ranking is one item), in order."""
    return [order_key(entry) for entry in order]


def context_pairs(
    candidates: Sequence[tuple[int, str]],
    *,
    attention_id: int | None,
    per_context: int | None,
    seed: str,
) -> list[tuple[int, int]]:
    """The pairs of one context's batch in a pairwise stage, as ``(first, second)``
    reflection ids: reproducible from ``seed`` (the study's seed, the stage and the
    dialogue), so every annotator of the batch compares the same pairs and an audit
    can recompute them.

    ``candidates``: the batch's ``(id, source)``, attention check excluded, in batch
    order; the human reflection counts as a system (its source). Every pair of
    candidates from different sources, the earlier in batch order first; or, with
    ``per_context``, that many of them, taken from each pair of sources in turn (in a
    seeded order) so every pair of sources comes up before any repeats. Then the
    attention pair: the off-topic candidate (first, so that analysis leaves it out as
    it leaves out the check's own answers) against a seeded pick of the others."""
    rng = random.Random(seed)
    by_sources: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for i, (first, first_source) in enumerate(candidates):
        for second, second_source in candidates[i + 1 :]:
            if first_source != second_source:
                key = tuple(sorted((first_source, second_source)))
                by_sources.setdefault(key, []).append((first, second))
    pairs = [pair for key in sorted(by_sources) for pair in by_sources[key]]
    if per_context is not None and per_context < len(pairs):
        queues = [list(by_sources[key]) for key in sorted(by_sources)]
        rng.shuffle(queues)
        for queue in queues:
            rng.shuffle(queue)
        pairs = []
        while len(pairs) < per_context:
            for queue in queues:
                if queue and len(pairs) < per_context:
                    pairs.append(queue.pop())
    if attention_id is not None and candidates:
        pairs.append((attention_id, rng.choice([c for c, _ in candidates])))
    return pairs


def pairwise_order(
    pairs: Sequence[tuple[int, int]], *, seed: str, group_slot: int, shuffle_key: str
) -> list[list[int]]:
    """An annotator's order of a batch's pairs, each ``[first, second, swapped]``:
    ``swapped`` 1 when the second candidate is shown on the left (as A). Each pair's
    side alternates across the group's slots from a seeded start (``seed``: the
    batch's), so the k annotators of a group see each pair's sides as evenly as k
    allows and no system is always on one side; the order of the pairs is the
    annotator's own (``shuffle_key``, as ``shuffled_order``)."""
    start = random.Random(f"{seed}/sides")
    entries = [[first, second, (start.randrange(2) + group_slot) % 2] for first, second in pairs]
    random.Random(shuffle_key).shuffle(entries)
    return entries


def pair_winner(choice: str, swapped) -> int | None:
    """Which candidate of a pair a choice prefers: 0 the first, 1 the second, None a
    tie. ``swapped``: the second was shown on the left (A)."""
    if choice == CHOICE_TIE:
        return None
    return int((choice == CHOICE_A) == bool(swapped))


def competition_ranks(values: Sequence[int]) -> list[int]:
    """Standard competition ranks of ordering numbers (lower is better): 1 for the
    best, and tied values share the lowest rank of their tie, so a ranking with a tie
    reads 1, 2, 2, 4 (what a ranking stores and the published format gives)."""
    return [1 + sum(other < value for other in values) for value in values]
