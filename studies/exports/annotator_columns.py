"""Columns of the full export about each annotator that a layer above this one
computes: the analysis registers its annotator-quality columns at start-up
(``analysis.apps``), so this package never imports the analysis (the layers of
``pyproject.toml``) and the numbers have one home there.

A provider names its columns and, given the study and the export's options, returns
the cells per annotator pseudonym; an annotator it does not name gets empty cells.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..models import Study
    from .options import ExportOptions


@dataclass(frozen=True)
class AnnotatorColumns:
    names: tuple[str, ...]
    cells: Callable[[Study, ExportOptions], Mapping[str, Sequence[str]]]


_providers: dict[tuple[str, ...], AnnotatorColumns] = {}


def annotator_columns_register(provider: AnnotatorColumns) -> None:
    """Add ``provider``'s columns to the full export (once, however often called)."""
    _providers[provider.names] = provider


def annotator_columns() -> list[AnnotatorColumns]:
    return list(_providers.values())


def annotator_cells(*, study: Study, options: ExportOptions) -> Callable[[str], list[str]]:
    """The cells of every registered column for one annotator, by pseudonym (each
    provider computed once per export)."""
    computed = [
        (provider.cells(study, options), len(provider.names)) for provider in annotator_columns()
    ]

    def cells(pseudonym: str) -> list[str]:
        row: list[str] = []
        for by_annotator, width in computed:
            row.extend(by_annotator.get(pseudonym, [""] * width))
        return row

    return cells
