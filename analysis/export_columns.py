"""The full export's annotator-quality columns: the dashboard's quality panel
(:func:`analysis.report.quality.quality_block`) per annotator, registered with
:mod:`studies.exports.annotator_columns` when the app starts (``analysis.apps``).

The numbers describe the annotator over the whole study, as the quality panel
computes them from the judgements that count (expired batches too when the export
includes them) with the default thresholds, whatever stages, groups or sources the
export keeps."""

from __future__ import annotations

from studies.columns import ANNOTATOR_QUALITY_COLUMNS, ANNOTATOR_QUALITY_KEYS
from studies.exports import ExportOptions
from studies.exports.annotator_columns import AnnotatorColumns
from studies.models import Study

from .parameters import DEFAULT_PARAMETERS
from .report.build import judgements_with_categories, no_judgements_frame
from .report.quality import quality_block
from .selectors.judgements import assignments_frame, judgements_frame

#: The report's per-annotator keys, in column order (``annotator_`` + key): their
#: names are export columns, which category slugs may not take (``studies.columns``).
QUALITY_KEYS = ANNOTATOR_QUALITY_KEYS


#: What the quality reads of each judgement (through ``judgements_with_categories``):
#: an export holds these few columns of the study's counted judgements, not all.
QUALITY_INPUT = (
    "group",
    "annotator",
    "stage",
    "reflection_id",
    "kind",
    "coherent",
    "error_flags",
    "most_evident_bit",
    "seconds_spent",
    "assignment_id",
)


def study_annotator_quality(*, study: Study, include_expired: bool = False) -> dict:
    """``{group: {annotator: {...}}}``: the quality panel's numbers for ``study``
    now, with the default parameters of a run."""
    frame = judgements_frame(
        study_id=study.pk, include_expired=include_expired, columns=QUALITY_INPUT
    )
    judgements = no_judgements_frame() if frame.empty else judgements_with_categories(frame, ())
    return quality_block(
        judgements=judgements,
        assignments=assignments_frame(study_id=study.pk),
        parameters={**DEFAULT_PARAMETERS, "include_expired": include_expired},
    )


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ";".join(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def quality_cells(study: Study, options: ExportOptions) -> dict[str, list[str]]:
    quality = study_annotator_quality(study=study, include_expired=options.include_expired)
    return {
        annotator: [_cell(row[key]) for key in QUALITY_KEYS]
        for annotators in quality.values()
        for annotator, row in annotators.items()
    }


QUALITY_COLUMNS = AnnotatorColumns(names=ANNOTATOR_QUALITY_COLUMNS, cells=quality_cells)
