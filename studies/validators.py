"""Validators shared by models (admin forms), importers and the API."""

from django.core.exceptions import ValidationError

from .protocol import TURN_ROLES


def validate_turns(value) -> None:
    """A dialogue context: a non-empty list of ``{"role": ..., "text": ...}`` objects."""
    if not isinstance(value, list) or not value:
        raise ValidationError("Turns must be a non-empty list of {role, text} objects.")
    for index, turn in enumerate(value, start=1):
        if not isinstance(turn, dict) or set(turn) != {"role", "text"}:
            raise ValidationError(
                f"Turn {index} must be an object with exactly the keys 'role' and 'text'."
            )
        if turn["role"] not in TURN_ROLES:
            raise ValidationError(
                f"Turn {index} has unknown role {turn['role']!r}; "
                f"expected one of {', '.join(TURN_ROLES)}."
            )
        if not isinstance(turn["text"], str) or not turn["text"].strip():
            raise ValidationError(f"Turn {index} has empty text.")


def validate_turns_or_empty(value) -> None:
    if value in (None, []):
        return
    validate_turns(value)


def validate_generation_metadata(value) -> None:
    if not isinstance(value, dict):
        raise ValidationError("Generation metadata must be a JSON object.")
