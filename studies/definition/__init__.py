"""A study's definition as one file teams share and review: everything but its
materials, written by ``export_study`` (and the admin's *Export the definition*) and
read by ``import_study`` (and *Import a study definition*) into a new draft study.
:mod:`.spec` says what the file holds and builds its JSON Schema (checked in as
``schema-v1.json``); :mod:`.exporting` writes it; :mod:`.importing` reads it."""

from .exporting import KINDS, definition_text, study_definition
from .importing import (
    SCHEMA_PATH,
    definition_check,
    definition_parse,
    definition_schema_file,
    study_import_definition,
)
from .spec import FORMAT, VERSION, definition_schema

__all__ = [
    "FORMAT",
    "KINDS",
    "SCHEMA_PATH",
    "VERSION",
    "definition_check",
    "definition_parse",
    "definition_schema",
    "definition_schema_file",
    "definition_text",
    "study_definition",
    "study_import_definition",
]
