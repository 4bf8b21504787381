"""Annotator-facing pages (entry, consent, tutorial, annotation) and staff downloads."""

from .annotate import batch, done, home, item, review, start
from .entry import consent, decline, index, invitation, join, tutorial
from .exports import export_annotations

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
    "review",
    "start",
    "tutorial",
]
