"""The training file (``format=training``): one row per answer to a practice item, with
its attempt, the attempt's score and the annotator's outcome. Streamed from one query
(plus one for the outcomes); annotators appear by pseudonym only."""

from __future__ import annotations

from collections.abc import Iterator

from ..datafiles.published.columns import NO, YES
from ..datafiles.spreadsheet import cell_escape, cell_exact
from ..models import ErrorCategory, Study, TrainingAnswer, TrainingItem
from ..protocol import selected_categories
from ..selectors.training import training_outcomes
from .options import ExportOptions

CHUNK_SIZE = 5000

TRAINING_COLUMNS = (
    "study",
    "annotator",
    "annotator_group",
    "training_outcome",
    "attempt",
    "attempt_status",
    "attempt_right",
    "attempt_items",
    "attempt_score",
    "attempt_started_at",
    "attempt_finished_at",
    "practice_item",
    "expected_coherent",
    "required_categories",
    "wrong_categories",
    "coherent_and_context_consistent",
    "error_categories",
    "most_evident_error",
    "empathy",
    "error_description",
    "seconds_spent",
    "is_right",
    "answered_at",
)

_FIELDS = (
    "attempt__annotator_id",
    "attempt__annotator__pseudonym",
    "attempt__annotator__group__name",
    "attempt__number",
    "attempt__status",
    "attempt__n_right",
    "attempt__n_items",
    "attempt__started_at",
    "attempt__finished_at",
    "item_id",
    "item__position",
    "item__expected_coherent",
    "coherent",
    "error_flags",
    "most_evident_bit",
    "empathy",
    "error_description",
    "seconds_spent",
    "is_right",
    "answered_at",
)


def _iso(value) -> str:
    return value.isoformat().replace("+00:00", "Z") if value is not None else ""


def _marks(field, study: Study) -> dict[int, list[str]]:
    """Practice item id → the slugs of its categories marked by ``field`` (one query)."""
    marks: dict[int, list[str]] = {}
    through = field.through.objects.filter(trainingitem__study=study)
    for item_id, slug in through.values_list("trainingitem_id", "errorcategory__slug"):
        marks.setdefault(item_id, []).append(slug)
    return marks


def training_answers(*, study: Study, options: ExportOptions):
    """The practice answers the training file has a row for."""
    answers = TrainingAnswer.objects.filter(attempt__annotator__study=study)
    if options.groups:
        answers = answers.filter(attempt__annotator__group__name__in=options.groups)
    return answers


def training_export_rows(*, study: Study, options: ExportOptions) -> Iterator[list[str]]:
    """The header, then one row per practice answer (``options.groups`` filters)."""
    text_cell = cell_escape if options.spreadsheet_safe else cell_exact
    slugs = sorted(ErrorCategory.objects.filter(study=study).values_list("bit", "slug"))
    slug_of_bit = dict(slugs)
    required = _marks(TrainingItem.required_categories, study)
    wrong = _marks(TrainingItem.wrong_categories, study)
    answers = training_answers(study=study, options=options)
    outcome = training_outcomes(study=study)
    yield list(TRAINING_COLUMNS)
    rows = answers.order_by(
        "attempt__annotator__group__name",
        "attempt__annotator__number",
        "attempt__number",
        "item__position",
    ).values_list(*_FIELDS)
    for row in rows.iterator(chunk_size=CHUNK_SIZE):
        (
            annotator_id,
            pseudonym,
            group,
            number,
            status,
            n_right,
            n_items,
            started,
            finished,
            item_id,
            position,
            expected_coherent,
            coherent,
            flags,
            mee_bit,
            empathy,
            description,
            seconds,
            is_right,
            answered,
        ) = row
        yield [
            text_cell(study.slug),
            text_cell(pseudonym),
            text_cell(group),
            outcome[annotator_id],
            str(number),
            status,
            "" if n_right is None else str(n_right),
            str(n_items),
            "" if n_right is None else f"{100 * n_right / n_items:g}",
            _iso(started),
            _iso(finished),
            str(position),
            YES if expected_coherent else NO,
            ";".join(sorted(required.get(item_id, []))),
            ";".join(sorted(wrong.get(item_id, []))),
            YES if coherent else NO,
            ";".join(selected_categories(flags, slugs)),
            slug_of_bit.get(mee_bit, "") if mee_bit is not None else "",
            str(empathy) if empathy else "",
            text_cell(description),
            "" if seconds is None else f"{seconds:g}",
            YES if is_right else NO,
            _iso(answered),
        ]
