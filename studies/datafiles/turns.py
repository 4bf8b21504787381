"""Dialogue turns as the files give them: in the materials (both formats) and in the
published annotations' ``dialogue_context`` cell."""

from ..text import storable_problem
from ..validators import turn_problem
from .strict_json import InvalidJSON, json_loads_strict


def parse_turns(value) -> tuple[list[dict] | None, str | None]:
    """Accept ``[{"role": r, "text": t}]`` or the published ``[{"therapist": t}]`` shape.

    Returns (turns as role/text dicts, None) or (None, error message).
    """
    if not isinstance(value, list) or not value:
        return None, "must be a non-empty JSON list of turns"
    turns = []
    for n, turn in enumerate(value, start=1):
        if isinstance(turn, dict) and set(turn) == {"role", "text"}:
            role, text = turn["role"], turn["text"]
        elif isinstance(turn, dict) and len(turn) == 1:
            ((role, text),) = turn.items()
        else:
            return None, (
                f'turn {n} must be {{"role": ..., "text": ...}} or a one-key object '
                'like {"client": "..."}'
            )
        if problem := turn_problem(role, text):
            return None, f"turn {n} {problem}"
        if problem := storable_problem(text):  # a NUL, an unpaired surrogate
            return None, f"turn {n} {problem}"
        turns.append({"role": role, "text": text})
    return turns, None


def parse_turns_cell(cell: str) -> tuple[list[dict] | None, str | None]:
    """The turns of a CSV cell holding them as JSON, or (None, error message)."""
    try:
        return parse_turns(json_loads_strict(cell))
    except InvalidJSON as exc:
        return None, f"invalid JSON: {exc.message}"
