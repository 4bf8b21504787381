"""Fixed vocabulary of the annotation protocol (BRIEF §2–§4).

Kept apart from the models so importers, exports and analysis share one source.
"""

import random
from collections.abc import Iterable
from dataclasses import dataclass

HUMAN_SOURCE = "Human"
ATTENTION_SOURCE = "Attention check"

TURN_ROLES = ("therapist", "client")

COHERENCE_QUESTION = "Is this response candidate coherent and consistent with the dialogue?"
# The word "empathy" is never shown to annotators (BRIEF §4).
EMPATHY_STATEMENT = (
    "The response candidate gives me the impression that the therapist understands "
    "the client's perceptions, situation, meaning, and feelings."
)
EMPATHY_SCALE = {
    1: "disagree",
    2: "somewhat disagree",
    3: "neither agree nor disagree",
    4: "somewhat agree",
    5: "agree",
}


@dataclass(frozen=True)
class DefaultCategory:
    slug: str
    label: str
    definition: str
    order: int
    bit: int


# Bits follow the column order of the published format (BRIEF §6); ``order`` is the
# order annotators see (BRIEF §4). Bits are storage only and never change for a study.
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

# BRIEF §5: these three merge into "Hallucinatory" for the merged MEE analysis.
HALLUCINATORY_CATEGORIES = ("dialogue_contradicting", "off_topic", "on_topic_but_unverifiable")


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
