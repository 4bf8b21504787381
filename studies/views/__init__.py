"""Annotator-facing pages (entry, consent, tutorial, annotation) and staff downloads."""

from .annotate import batch, done, home, item, review, start
from .entry import consent, decline, index, invitation, join, join_without_key, tutorial
from .exports import export_annotations
from .training import training, training_item

__all__ = [
    "batch",
    "consent",
    "decline",
    "done",
    "export_annotations",
    "home",
    "index",
    "invitation",
    "item",
    "join",
    "join_without_key",
    "review",
    "start",
    "training",
    "training_item",
    "tutorial",
]
