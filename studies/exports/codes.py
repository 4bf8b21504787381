"""The codes export: one CSV row per (description, coder, code) of a study, for
agreement between coders and for reading the themes back.

An uninformative coding is one row with an empty ``code`` and ``uninformative`` = Yes.
``primary`` says whether the coder is the study's primary coder
(``Coder.objects.primary``). Only descriptions that count (``Judgement.analysed_q``,
as on the coding page). Texts are exact (RFC 4180, ``\\r\\n``, UTF-8), or escaped
for a spreadsheet as the annotation exports do. The full annotation export adds the
primary coder's codes per judgement (``primary_codes_by_judgement``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from ..columns import NO, UNINFORMATIVE, YES
from ..datafiles.spreadsheet import cell_escape, cell_exact
from ..models import Coder, DescriptionCoding, Judgement, Stage, Study
from ..selectors.coding import description_order
from .csvtext import csv_chunks
from .files import file_extension

CODES_COLUMNS = (
    "study",
    "stage",
    "annotator_group",
    "annotator",
    "annomi_dialogue_id",
    "reflection_source",
    "judgement_id",
    "error_description",
    "coder",
    "primary",
    "code",
    "uninformative",
)
#: The full annotation export's column of the primary coder's codes.


def _codings(*, study: Study, stage: Stage | None = None):
    """The codings of the descriptions the coding page lists: of judgements that count
    (``Judgement.analysed_q``; not those of a rejected batch, say)."""
    qs = DescriptionCoding.objects.filter(
        Judgement.analysed_q(prefix="judgement__"), judgement__assignment__stage__study=study
    )
    if stage is not None:
        qs = qs.filter(judgement__assignment__stage=stage)
    return qs


def _slugs_by_coding(codings) -> dict[int, list[str]]:
    """coding id -> its code slugs, sorted (one query)."""
    through = DescriptionCoding.codes.through.objects.filter(descriptioncoding__in=codings)
    slugs: dict[int, list[str]] = defaultdict(list)
    for coding_id, slug in through.order_by("code__slug").values_list(
        "descriptioncoding_id", "code__slug"
    ):
        slugs[coding_id].append(slug)
    return slugs


def codes_rows(
    *, study: Study, stage: Stage | None = None, spreadsheet_safe: bool = False
) -> Iterator[list[str]]:
    """The header, then one row per (description, coder, code)."""
    text = cell_escape if spreadsheet_safe else cell_exact
    primary = Coder.objects.primary(study)
    codings = _codings(study=study, stage=stage)
    slugs = _slugs_by_coding(codings)
    yield list(CODES_COLUMNS)
    rows = codings.order_by(
        *description_order("judgement__"), "coder__added_at", "coder_id"
    ).values_list(
        "pk",
        "judgement__assignment__stage__name",
        "judgement__assignment__group__name",
        "judgement__assignment__annotator__pseudonym",
        "judgement__assignment__batch__context__external_id",
        "judgement__reflection__source",
        "judgement_id",
        "judgement__error_description",
        "coder__user__username",
        "coder_id",
        "uninformative",
    )
    for (
        pk,
        stage_name,
        group,
        pseudonym,
        dialogue,
        source,
        jid,
        desc,
        user,
        coder_id,
        uninf,
    ) in rows.iterator(chunk_size=2000):
        head = [
            text(study.slug),
            text(stage_name),
            text(group),
            text(pseudonym),
            text(dialogue),
            text(source),
            str(jid),
            text(desc),
            text(user),
            YES if primary is not None and coder_id == primary.pk else NO,
        ]
        if uninf:
            yield [*head, "", YES]
            continue
        for slug in slugs.get(pk, []):
            yield [*head, slug, NO]


def codes_csv_chunks(
    *, study: Study, stage: Stage | None = None, spreadsheet_safe: bool = False
) -> Iterator[str]:
    """The codes export as CSV text, in chunks."""
    return csv_chunks(codes_rows(study=study, stage=stage, spreadsheet_safe=spreadsheet_safe))


def codes_filename(*, study: Study, stage: Stage | None = None, file: str = "csv") -> str:
    """``file`` is one of ``FILES``, which names the extension."""
    suffix = f"-stage-{stage.position}" if stage is not None else ""
    return f"{study.slug}-codes{suffix}.{file_extension(file)}"


def primary_codes_by_judgement(*, study: Study) -> dict[int, str]:
    """judgement id -> the primary coder's codes (slugs joined by ``;``, or
    ``uninformative``), for the judgements that coder coded. Empty without coders."""
    primary = Coder.objects.primary(study)
    if primary is None:
        return {}
    codings = DescriptionCoding.objects.filter(coder=primary)
    slugs = _slugs_by_coding(codings)
    return {
        judgement_id: UNINFORMATIVE if uninformative else ";".join(slugs.get(pk, []))
        for pk, judgement_id, uninformative in codings.values_list(
            "pk", "judgement_id", "uninformative"
        )
    }
