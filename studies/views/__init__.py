"""Annotator-facing pages (entry, consent, tutorial, annotation)."""

from .annotate import batch, done, home, item, review, start
from .entry import consent, decline, index, invitation, join, tutorial

__all__ = [
    "batch",
    "consent",
    "decline",
    "done",
    "home",
    "index",
    "invitation",
    "item",
    "join",
    "review",
    "start",
    "tutorial",
]
