"""The published annotation format (BRIEF §6): constants and cell escaping in
:mod:`.format`, the import in :mod:`.importing`."""

from .format import (
    PUBLISHED_CATEGORY_COLUMNS,
    PUBLISHED_COLUMNS,
    PUBLISHED_OPTIONAL_COLUMNS,
    cell_escape,
    cell_unescape,
)
from .importing import (
    MAX_REPORTED_ISSUES,
    AnnotationsImportError,
    AnnotationsImportSummary,
    annotations_import,
)

__all__ = [
    "MAX_REPORTED_ISSUES",
    "PUBLISHED_CATEGORY_COLUMNS",
    "PUBLISHED_COLUMNS",
    "PUBLISHED_OPTIONAL_COLUMNS",
    "AnnotationsImportError",
    "AnnotationsImportSummary",
    "annotations_import",
    "cell_escape",
    "cell_unescape",
]
