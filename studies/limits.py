"""Length caps of the free texts staff write (rejection and exemption reasons, study
texts, error categories, the materials' reflections and turns). One constant per kind
of text; a capped field names its cap
as ``max_length`` (the admin's forms and the API's serializers read it from there) and
gets a check constraint built from the same constant by :func:`text_cap`, so raw writes
obey it too (a TextField's ``max_length`` alone is enforced by forms only)."""

from django.db import models
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual

#: A reason recorded with an action (rejecting work, exempting from a wait).
REASON_MAX_LENGTH = 2_000
#: A short text shown next to a control (an error category's definition and examples).
SHORT_TEXT_MAX_LENGTH = 2_000
#: A page of text (the information sheet, the consent statement, the tutorial's texts,
#: a study's description).
PAGE_TEXT_MAX_LENGTH = 20_000

#: A reflection or a dialogue turn (materials, the tutorial's example). Far above any
#: real one; stored whole up to here (the unique rule on reflections hashes the text).
MATERIAL_TEXT_MAX_LENGTH = 50_000

#: A reflection's generation metadata (model, decoding, p...), as compact JSON. Real
#: metadata is a few short values; the full export repeats it on every answer's row.
#: Checked by ``studies.validators.generation_problem`` (the admin, the materials import
#: and the API, which uses the import).
GENERATION_MAX_LENGTH = 10_000

#: constraint name -> message, for studies.models.CHECK_MESSAGES
CAP_MESSAGES: dict[str, str] = {}


def cap_message(max_length: int, length: int | None = None) -> str:
    """What a text over its cap is told (with its ``length`` when known)."""
    told = f"Ensure this value has at most {max_length:,} characters"
    return f"{told} (it has {length:,})." if length is not None else f"{told}."


def text_cap(table: str, field: str, max_length: int) -> models.CheckConstraint:
    """The check constraint capping ``field`` at ``max_length`` characters."""
    name = f"{table}_{field}_max_length"
    CAP_MESSAGES[name] = cap_message(max_length)
    return models.CheckConstraint(condition=LessThanOrEqual(Length(field), max_length), name=name)
