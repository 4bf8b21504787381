"""Durations as people write them: "3 days", "2 days 4 hours", "90 minutes", "1h 30m".

The one parser and formatter of the admin's durations (a stage's minimum wait, the
time allowed per batch). Django's own "DD HH:MM:SS" and "HH:MM:SS" are still read,
so values copied from older pages keep working.
"""

import re
from datetime import timedelta

from django import forms
from django.core.exceptions import ValidationError
from django.utils.dateparse import parse_duration

UNITS: dict[str, int] = {
    "week": 7 * 86400,
    "day": 86400,
    "hour": 3600,
    "minute": 60,
    "second": 1,
}
_ALIASES: dict[str, str] = {
    "w": "week", "wk": "week", "wks": "week", "weeks": "week", "week": "week",
    "d": "day", "day": "day", "days": "day",
    "h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
    "m": "minute", "min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute",
    "s": "second", "sec": "second", "secs": "second", "second": "second", "seconds": "second",
}  # fmt: skip
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")
EXAMPLES = '"3 days", "2 days 4 hours", "90 minutes" or "0"'


def duration_parse(text: str) -> timedelta:
    """Read a duration; raise ValueError with a message an admin user can act on."""
    stripped = text.strip()
    cleaned = " ".join(stripped.lower().replace(",", " ").split())
    cleaned = re.sub(r"\band\b", " ", cleaned).strip()
    if re.fullmatch(r"0+(\.0*)?|none|no wait", cleaned):
        return timedelta(0)
    if re.fullmatch(r"\d+(\.\d+)?", cleaned):
        raise ValueError(f'"{stripped}" has no unit: write e.g. "{cleaned} minutes".')
    try:  # "3 00:00:00", "3 days, 0:00:00", "00:30:00"
        parsed = parse_duration(stripped)
    except OverflowError as exc:
        raise ValueError(_too_long(stripped)) from exc
    if parsed is not None:
        return parsed
    total = 0.0
    seen: set[str] = set()
    position = 0
    for match in _PART.finditer(cleaned):
        if cleaned[position : match.start()].strip():
            break
        unit = _ALIASES.get(match.group(2))
        if unit is None:
            raise ValueError(
                f'"{match.group(2)}" is not a unit of time. Use weeks, days, hours, minutes '
                "or seconds."
            )
        if unit in seen:
            raise ValueError(f'"{stripped}" names the {unit}s twice.')
        seen.add(unit)
        total += float(match.group(1)) * UNITS[unit]
        position = match.end()
    if not seen or cleaned[position:].strip():
        raise ValueError(f'"{stripped}" is not a duration. Write it as {EXAMPLES}.')
    try:
        return timedelta(seconds=round(total))
    except OverflowError as exc:
        raise ValueError(_too_long(stripped)) from exc


def _too_long(text: str) -> str:
    return f'"{text}" is too long: the longest duration is {timedelta.max.days} days.'


def duration_format(value: timedelta) -> str:
    """The largest units first, zero parts left out: "2 days 4 hours"; 90 minutes
    reads "1 hour 30 minutes"; no duration at all is "0"."""
    seconds = round(value.total_seconds())
    if seconds == 0:
        return "0"
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    parts = []
    for unit in ("day", "hour", "minute", "second"):
        count, seconds = divmod(seconds, UNITS[unit])
        if count:
            parts.append(f"{count} {unit}{'' if count == 1 else 's'}")
    return sign + " ".join(parts)


class HumanDurationField(forms.DurationField):
    """A form field that reads and shows durations with :func:`duration_parse` and
    :func:`duration_format` (the admin uses it for every DurationField)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("widget", forms.TextInput(attrs={"placeholder": "e.g. 3 days"}))
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, timedelta):
            return duration_format(value)
        return value

    def to_python(self, value):
        if value in self.empty_values:
            return None
        if isinstance(value, timedelta):
            return value
        try:
            return duration_parse(str(value))
        except ValueError as exc:
            raise ValidationError(str(exc), code="invalid") from exc
