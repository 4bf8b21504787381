"""What one cell of a published annotation CSV may hold: the caps the database sets,
and the checks of a pseudonym and a most evident error."""

import re

from ...models import PREFIX_REGEX, Annotator, AnnotatorGroup, Stage
from .columns import COHERENT_COLUMN, NO, PUBLISHED_CATEGORY_COLUMNS, YES

STAGE_MAX_LENGTH = Stage._meta.get_field("name").max_length
GROUP_MAX_LENGTH = AnnotatorGroup._meta.get_field("name").max_length
PREFIX_MAX_LENGTH = AnnotatorGroup._meta.get_field("pseudonym_prefix").max_length
PSEUDONYM_MAX_LENGTH = Annotator._meta.get_field("pseudonym").max_length
INTEGER_MAX = 2**31 - 1  # annotator numbers

PSEUDONYM = re.compile(r"(.+) ([1-9][0-9]*)")
EMPATHY = re.compile(r"([1-5])(?:\.0*)?")


def pseudonym_parts(value: str) -> tuple[str, int] | None:
    match = PSEUDONYM.fullmatch(value)
    if match is None or not re.fullmatch(PREFIX_REGEX, match.group(1)):
        return None
    number = int(match.group(2)) if len(match.group(2)) <= 10 else INTEGER_MAX + 1
    return match.group(1), number


def most_evident_problem(value: str, answer: str, selected: set[str]) -> str | None:
    if answer == YES:
        return f"a most evident error is only given when {COHERENT_COLUMN} is {NO}"
    if value not in PUBLISHED_CATEGORY_COLUMNS:
        return (
            f"unknown category {value!r} (expected one of {', '.join(PUBLISHED_CATEGORY_COLUMNS)})"
        )
    if value not in selected:
        return f"{value!r} is not among the categories selected on this row"
    return None
