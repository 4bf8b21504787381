"""Fixed vocabulary of the annotation protocol.

Kept apart from the models so importers, exports and analysis share one source.
"""

import random
from collections.abc import Iterable
from dataclasses import dataclass

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


# What a stage asks of each response candidate (``Stage.instrument``): the coherence
# protocol above, or ratings on the stage's Likert dimensions.
INSTRUMENT_COHERENCE = "coherence"
INSTRUMENT_LIKERT = "likert"

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
    #: The coherence protocol (what the two settings above shape), or Likert ratings.
    instrument: str = INSTRUMENT_COHERENCE

    @property
    def rates_dimensions(self) -> bool:
        """Each candidate is rated on the stage's Likert dimensions (no Yes/No)."""
        return self.instrument == INSTRUMENT_LIKERT

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
    random.Random(f"{seed}/order/{pseudonym}/{stage_position}/{dialogue}").shuffle(ids)
    return ids


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
