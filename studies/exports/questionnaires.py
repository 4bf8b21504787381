"""The questionnaire answers of a study, a file of their own beside the full export
(``<study>-questionnaires.csv`` / ``.xlsx``, sheet "questionnaires"): one row per
answer (a multiple-choice question: one row per chosen choice), annotators by
pseudonym only, of annotators who consented and are active
(``QuestionAnswer.objects.that_count``). The only place text answers leave the
system; the report counts them. People screened out have no rows: only counts per answer are kept about them
(the report's ``screened_out`` entries)."""

from __future__ import annotations

from collections.abc import Iterator

from ..datafiles.spreadsheet import cell_escape, cell_exact
from ..models import QuestionAnswer, Study
from .files import file_extension

HEADER = [
    "study",
    "questionnaire",
    "placement",
    "stage",
    "annotator",
    "annotator_group",
    "submitted_at",
    "question_position",
    "question",
    "question_kind",
    "answer",
]

_FIELDS = (
    "response__questionnaire__name",
    "response__questionnaire__placement",
    "response__questionnaire__stage__name",
    "response__annotator__pseudonym",
    "response__annotator__group__name",
    "response__submitted_at",
    "question__position",
    "question__text",
    "question__kind",
    "choice__text",
    "choice__position",
    "scale",
    "text",
)

CHUNK_SIZE = 2_000


def questionnaire_export_filename(*, study: Study, file: str) -> str:
    return f"{study.slug}-questionnaires.{file_extension(file)}"


def questionnaire_export_rows(
    *, study: Study, spreadsheet_safe: bool = False
) -> Iterator[list[str]]:
    """The header, then one row per stored answer, streamed (one query, server-side
    cursor), in the order questionnaire, annotator, question, choice."""
    text_cell = cell_escape if spreadsheet_safe else cell_exact
    yield list(HEADER)
    rows = (
        QuestionAnswer.objects.that_count()
        .filter(response__questionnaire__study=study)
        .order_by(
            "-response__questionnaire__placement",
            "response__questionnaire__stage__position",
            "response__questionnaire__name",
            "response__annotator__group__name",
            "response__annotator__number",
            "question__position",
            "choice__position",
        )
        .values_list(*_FIELDS)
    )
    for (
        name,
        placement,
        stage,
        pseudonym,
        group,
        submitted,
        position,
        question,
        kind,
        choice,
        _choice_position,
        scale,
        text,
    ) in rows.iterator(chunk_size=CHUNK_SIZE):
        answer = choice if choice is not None else (str(scale) if scale is not None else text)
        yield [
            text_cell(study.slug),
            text_cell(name),
            placement,
            text_cell(stage or ""),
            text_cell(pseudonym),
            text_cell(group),
            submitted.isoformat().replace("+00:00", "Z"),
            str(position),
            text_cell(question),
            kind,
            text_cell(answer),
        ]
