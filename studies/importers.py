"""The materials import, by the name callers have long imported it under; it lives in
:mod:`studies.datafiles.materials`, built on the data-file reader."""

from .datafiles.materials import (
    ImportSummary,
    MaterialsImportError,
    materials_format_for,
    materials_import,
)

__all__ = ["ImportSummary", "MaterialsImportError", "materials_format_for", "materials_import"]
