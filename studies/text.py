"""What the database can store as text: checks shared by every format and form, so a value is
refused with the same words whichever file brought it."""

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_problem(value: str, max_length: int | None = None) -> str | None:
    """Why PostgreSQL cannot store ``value`` as text (a NUL character, an unpaired
    surrogate such as a lone ``\\uD800`` escape, more than ``max_length`` characters),
    or None if it can."""
    if "\x00" in value:
        return "contains a NUL character"
    if match := _SURROGATE.search(value):
        return f"contains an unpaired surrogate (\\u{ord(match.group()):04x})"
    if max_length is not None and len(value) > max_length:
        return f"longer than {max_length:,} characters"
    return None
