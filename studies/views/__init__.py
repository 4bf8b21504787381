"""Annotator-facing pages (entry, consent, tutorial, annotation) and staff downloads."""

from .annotate import batch, done, home, item, review, start
from .coding import coding, coding_code_add, coding_export
from .drafts import item_draft
from .entry import consent, decline, index, invitation, join, join_without_key, tutorial
from .exports import export_annotations, export_questionnaires
from .questionnaires import questionnaire
from .training import training, training_item

__all__ = [
    "batch",
    "coding",
    "coding_code_add",
    "coding_export",
    "consent",
    "decline",
    "done",
    "export_annotations",
    "export_questionnaires",
    "home",
    "index",
    "invitation",
    "item",
    "item_draft",
    "join",
    "join_without_key",
    "questionnaire",
    "review",
    "start",
    "training",
    "training_item",
    "tutorial",
]
