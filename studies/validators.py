"""Validators shared by models (admin forms), importers and the API."""

import json

from django.core.exceptions import ValidationError

from .limits import GENERATION_MAX_LENGTH, MATERIAL_TEXT_MAX_LENGTH
from .protocol import TURN_ROLES


def turn_problem(role, text) -> str | None:
    """What is wrong with one dialogue turn, whichever format gave it (the stored
    ``{"role", "text"}`` shape, the files' shapes: ``datafiles.turns``), or None."""
    if role not in TURN_ROLES:
        return f"has unknown role {role!r} (expected {' or '.join(TURN_ROLES)})"
    if not isinstance(text, str) or not text.strip():
        return "has empty text"
    if len(text) > MATERIAL_TEXT_MAX_LENGTH:
        return f"is longer than {MATERIAL_TEXT_MAX_LENGTH:,} characters"
    return None


def validate_turns(value) -> None:
    """A dialogue context: a non-empty list of ``{"role": ..., "text": ...}`` objects."""
    if not isinstance(value, list) or not value:
        raise ValidationError("Turns must be a non-empty list of {role, text} objects.")
    for index, turn in enumerate(value, start=1):
        if not isinstance(turn, dict) or set(turn) != {"role", "text"}:
            raise ValidationError(
                f"Turn {index} must be an object with exactly the keys 'role' and 'text'."
            )
        if problem := turn_problem(turn["role"], turn["text"]):
            raise ValidationError(f"Turn {index} {problem}.")


def validate_turns_or_empty(value) -> None:
    if value in (None, []):
        return
    validate_turns(value)


def generation_problem(value) -> str | None:
    """What is wrong with a reflection's generation metadata, or None: not a JSON
    object, or longer than ``GENERATION_MAX_LENGTH`` characters as compact JSON."""
    if not isinstance(value, dict):
        return "must be a JSON object"
    length = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if length > GENERATION_MAX_LENGTH:
        return (
            f"is {length:,} characters as JSON, more than the {GENERATION_MAX_LENGTH:,} "
            "allowed: give the model, decoding, p, prompt type and complexity, not the "
            "generation's inputs or outputs (the full export repeats it on every row)"
        )
    return None


def validate_generation_metadata(value) -> None:
    if problem := generation_problem(value):
        raise ValidationError(f"Generation metadata {problem}.", code="generation")


def validate_empathy_labels(value) -> None:
    """The rating's labels: a list of five non-empty texts (1 to 5)."""
    if (
        not isinstance(value, list)
        or len(value) != 5
        or not all(isinstance(label, str) and label.strip() for label in value)
    ):
        raise ValidationError(
            'Give the five labels of the rating, from 1 to 5, e.g. ["disagree", '
            '"somewhat disagree", "neither agree nor disagree", "somewhat agree", "agree"].',
            code="empathy_labels",
        )


def validate_mee_merge(value) -> None:
    """The most-evident-error merge: {"merged label": ["category slug", ...]}, each
    label non-empty with at least one slug, no slug in two merged labels."""
    message = (
        'Give the merge as {"merged label": ["category slug", ...]}, e.g. '
        '{"hallucinatory": ["dialogue_contradicting", "off_topic", '
        '"on_topic_but_unverifiable"]}; a category can be merged into one label only.'
    )
    if not isinstance(value, dict):
        raise ValidationError(message, code="mee_merge")
    seen: set[str] = set()
    for label, slugs in value.items():
        if (
            not label.strip()
            or not isinstance(slugs, list)
            or not slugs
            or not all(isinstance(s, str) and s for s in slugs)
            or seen & set(slugs)
            or len(set(slugs)) != len(slugs)
        ):
            raise ValidationError(message, code="mee_merge")
        seen |= set(slugs)


def validate_likert_labels(labels, points: int | None) -> None:
    """A dimension's labels: one text per point, from 1 to ``points``, the two ends
    not empty (the points between may be); on a slider (``points`` None) the two end
    labels."""
    n = 2 if points is None else points
    if (
        not isinstance(labels, list)
        or len(labels) != n
        or not all(isinstance(label, str) for label in labels)
        or not labels[0].strip()
        or not labels[-1].strip()
    ):
        what = (
            "the two end labels of the slider (0 and 100)"
            if points is None
            else f"{n} labels, one per point from 1 to {n} (the two ends not empty, "
            'the others may be "")'
        )
        example = json.dumps(["poor", *[""] * (n - 2), "excellent"])
        raise ValidationError(f"Give {what} as a list, e.g. {example}.", code="likert_labels")
