"""What a study definition file holds, built from the models' metadata: which fields
of which models, how each value is written (durations as ISO 8601, amounts as decimal
text, a reference to another part of the study by its name or slug), and the JSON
Schema of the file, generated from the same table so the two cannot drift apart.

Lists keep their order; a stage's, dimension's, question's, choice's and quiz item's
``position`` is its place in its list (from 1) and is not written. Left out: what is
not definition (status, times, who created it), personal data (the contact e-mail),
secrets (a stage's crowd join key, made anew) and, unless asked for, the crowd
completion codes. Materials (contexts and reflections) have their own files; a quiz
item shown on one of the study's contexts carries that context's turns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum
from typing import Any

from django.db import models
from django.utils.dateparse import parse_duration
from django.utils.duration import duration_iso_string

from ..models import (
    AnnotatorGroup,
    Choice,
    Code,
    ErrorCategory,
    LikertDimension,
    Question,
    Questionnaire,
    Stage,
    StageGate,
    StageGroupWait,
    StagePay,
    Study,
    TrainingItem,
    TrainingQuiz,
)
from ..services.gates import RULE_FIELDS

FORMAT = "reflection-study-definition"
VERSION = 1

#: How another part of the study is named in the file.
NATURAL_KEYS: dict[type[models.Model], str] = {
    AnnotatorGroup: "name",
    Stage: "name",
    ErrorCategory: "slug",
    LikertDimension: "name",
}

#: A stage's crowd codes: in the file only when asked for.
CODE_FIELDS = ("completion_code", "screened_out_code", "partial_completion_code")


@dataclass(frozen=True)
class Part:
    """One kind of object in the file: its model, the fields written (in order), the
    parts nested in it (file key → part; one object when ``single``) and whether its
    place in its list is its ``position``."""

    model: type[models.Model]
    fields: tuple[str, ...]
    children: dict[str, Part] = field(default_factory=dict)
    positioned: bool = False
    single: bool = False


STUDY = Part(
    Study,
    (
        "slug", "title", "description", "information_sheet", "consent_text",
        "tutorial_intro", "tutorial_example_turns", "tutorial_example_notes",
        "tutorial_empathy_explanation", "coherence_question", "description_prompt",
        "empathy_statement", "empathy_labels", "mee_merge", "overlap_k",
        "batches_per_stage", "batch_time_limit", "avoid_recurrence",
        "attention_failure_policy", "crowd_group", "mturk_frame", "coding_reveals_sources",
        "seed", "data_description", "data_license", "data_languages",
    ),
)  # fmt: skip
GROUPS = Part(AnnotatorGroup, ("name", "pseudonym_prefix"))
CATEGORIES = Part(
    ErrorCategory,
    ("slug", "label", "definition", "order", "bit", "example_reflection",
     "example_explanation", "catches_attention_check"),
)  # fmt: skip
CODES = Part(Code, ("slug", "label", "definition", "example"))
STAGES = Part(
    Stage,
    (
        "name",
        "min_wait",
        "overlap_k",
        "batches_per_stage",
        "instrument",
        "allows_ties",
        "asks_reason",
        "pairs_per_context",
        "no_answer",
        "empathy_after_yes",
        "coherence_question",
        "description_prompt",
        "tutorial_intro",
        "tutorial_example_turns",
        "tutorial_example_notes",
        "tutorial_empathy_explanation",
        "platform_task_ids",
        "categories_from_coding",
        "groups",
        "categories",
        *CODE_FIELDS,
    ),
    children={
        "waits": Part(StageGroupWait, ("group", "min_wait")),
        "pay": Part(StagePay, ("group", "unit", "amount", "currency", "minimum_hourly_rate")),
        "dimensions": Part(
            LikertDimension,
            (
                "name",
                "statement",
                "points",
                "labels",
                "offers_cannot_judge",
                "checks_attention",
                "attention_pass_min",
                "attention_pass_max",
            ),
            positioned=True,
        ),
        "gate": Part(StageGate, RULE_FIELDS, single=True),  # (a gate is its rule)
    },
    positioned=True,
)
QUESTIONNAIRES = Part(
    Questionnaire,
    ("name", "placement", "stage", "introduction"),
    children={
        "questions": Part(
            Question,
            ("text", "kind", "required", "scale_low", "scale_high"),
            children={"choices": Part(Choice, ("text", "ends_participation"), positioned=True)},
            positioned=True,
        )
    },
)
QUIZ = Part(TrainingQuiz, ("pass_mark", "attempts", "items_per_attempt"), single=True)
QUIZ_ITEMS = Part(
    TrainingItem,
    ("turns", "text", "expected_coherent", "explanation", "required_categories",
     "wrong_categories"),
    positioned=True,
)  # fmt: skip

#: The file's sections after ``format`` and ``version``, in order.
SECTIONS: dict[str, Part] = {
    "study": Part(Study, STUDY.fields, single=True),
    "groups": GROUPS,
    "categories": CATEGORIES,
    "codes": CODES,
    "stages": STAGES,
    "questionnaires": QUESTIONNAIRES,
    "quiz": QUIZ,
    "quiz_items": QUIZ_ITEMS,
}

# --------------------------------------------------------------------------- values

POSITIVE_INTEGERS = (
    models.PositiveIntegerField,
    models.PositiveSmallIntegerField,
    models.PositiveBigIntegerField,
)
# ISO 8601 as Django's parse_duration reads it: P3D, PT12H, P1DT2H30M, P3DT00H00M00S…
DURATION_PATTERN = (
    r"^-?P(?!$)(\d+(\.\d+)?D)?(T(?=\d)(\d+(\.\d+)?H)?(\d+(\.\d+)?M)?(\d+(\.\d+)?S)?)?$"
)
DECIMAL_PATTERN = r"^-?\d+(\.\d+)?$"


def value_out(instance: models.Model, name: str) -> Any:
    """The value of field ``name`` of ``instance`` as the file writes it."""
    model_field = instance._meta.get_field(name)
    if model_field.many_to_many:
        key = NATURAL_KEYS[model_field.related_model]
        return sorted(getattr(instance, name).values_list(key, flat=True))
    if model_field.is_relation:
        related = getattr(instance, name)
        return None if related is None else getattr(related, NATURAL_KEYS[type(related)])
    value = getattr(instance, name)
    if value is None:
        return None
    if isinstance(model_field, models.DurationField):
        return duration_iso_string(value)
    if isinstance(model_field, models.DecimalField):
        return str(value)
    if isinstance(value, Enum):  # a choice not read back from the database yet
        return value.value
    return value


def value_in(model_field: models.Field, raw: Any) -> Any:
    """A plain value (no reference) read from the file, as the model holds it."""
    if raw is None:
        return None
    if isinstance(model_field, models.DurationField):
        return parse_duration(raw)
    if isinstance(model_field, models.DecimalField):
        return Decimal(raw)
    return raw


# --------------------------------------------------------------------------- schema


def _field_schema(model_field: models.Field) -> dict:
    if model_field.many_to_many:
        noun = NATURAL_KEYS[model_field.related_model]
        schema: dict = {
            "type": "array",
            "items": {"type": "string"},
            "uniqueItems": True,
            "description": f"The {noun}s of {model_field.related_model._meta.verbose_name_plural}.",
        }
        return schema
    if model_field.is_relation:
        noun = NATURAL_KEYS[model_field.related_model]
        schema = {
            "type": "string",
            "description": f"The {noun} of a {model_field.related_model._meta.verbose_name}.",
        }
    elif isinstance(model_field, models.DurationField):
        schema = {"type": "string", "pattern": DURATION_PATTERN,
                  "description": "A duration in ISO 8601: P3D or P3DT00H00M00S for 3 days, "
                  "PT12H for 12 hours."}  # fmt: skip
    elif isinstance(model_field, models.DecimalField):
        schema = {"type": "string", "pattern": DECIMAL_PATTERN,
                  "description": "A decimal number written as text, e.g. \"12.50\"."}  # fmt: skip
    elif isinstance(model_field, models.BooleanField):
        schema = {"type": "boolean"}
    elif isinstance(model_field, models.FloatField):
        schema = {"type": "number"}
    elif isinstance(model_field, models.IntegerField):
        schema = {"type": "integer"}
        if isinstance(model_field, POSITIVE_INTEGERS):
            schema["minimum"] = 0
    elif isinstance(model_field, models.JSONField):
        schema = {}
    else:
        schema = {"type": "string"}
        if model_field.max_length:
            schema["maxLength"] = model_field.max_length
    if model_field.choices and not model_field.is_relation:
        schema["enum"] = [value for value, _ in model_field.flatchoices]
    if model_field.null and "type" in schema:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"].append(None)
    if model_field.help_text and "description" not in schema:
        schema["description"] = str(model_field.help_text)
    return schema


def _required(model_field: models.Field) -> bool:
    """Whether a hand-written file must give the field: it has no default and may
    not be left empty."""
    return (
        not (model_field.has_default() or model_field.null or model_field.blank)
        or model_field.name in NATURAL_KEYS.values()
    )


def part_schema(part: Part, *, root: bool = False) -> dict:
    model = part.model
    properties = {}
    required = []
    for name in part.fields:
        model_field = model._meta.get_field(name)
        properties[name] = _field_schema(model_field)
        if _required(model_field) and name not in CODE_FIELDS:
            required.append(name)
    for key, child in part.children.items():
        child_schema = part_schema(child)
        properties[key] = (
            _or_null(child_schema) if child.single else {"type": "array", "items": child_schema}
        )
    return {
        "type": "object",
        "description": str(model._meta.verbose_name).capitalize()
        + (" (its place in the list is its position, from 1)." if part.positioned else "."),
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _or_null(schema: dict) -> dict:
    """An object or null (written so that a mistake inside the object is reported at
    its field, which ``oneOf`` would hide)."""
    return {**schema, "type": ["object", "null"]}


def definition_schema() -> dict:
    """The JSON Schema of a study definition file of this :data:`VERSION`."""
    sections = {}
    for key, part in SECTIONS.items():
        schema = part_schema(part)
        if key == "study":
            sections[key] = schema
        elif part.single:
            sections[key] = _or_null(schema)
        else:
            sections[key] = {"type": "array", "items": schema}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{FORMAT}-v{VERSION}.json",
        "title": "A study of the reflection-coherence platform, as a file",
        "description": "Everything that defines a study but its materials: groups, error "
        "categories, codebook, stages (k, m, waits, instrument and wording, tutorial, crowd "
        "settings, pay, Likert dimensions, gate), questionnaires and the training quiz. "
        "Written by export_study, read by import_study.",
        "type": "object",
        "properties": {
            "format": {"const": FORMAT},
            "version": {"const": VERSION},
            **sections,
        },
        "required": ["format", "version", "study"],
        "additionalProperties": False,
    }
