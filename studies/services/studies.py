"""Writes on studies, consent versions and annotators."""

from collections.abc import Iterable
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..errors import ErrorCode
from ..locks import groups_locked, studies_locked
from ..models import (
    CHECK_MESSAGES,
    MAX_CATEGORY_BIT,
    Annotator,
    AnnotatorGroup,
    ConsentVersion,
    ErrorCategory,
    QuestionnaireResponse,
    Stage,
    Study,
    TutorialReading,
)
from ..protocol import DEFAULT_ERROR_CATEGORIES

# --- studies ----------------------------------------------------------------------


def error_category_next_bit(*, study: Study) -> int:
    """The storage bit for a new category: after every bit the study ever used, so a
    bit never changes meaning."""
    used = set(study.categories.values_list("bit", flat=True))
    bit = max(used) + 1 if used else 0
    if bit > MAX_CATEGORY_BIT:
        raise ValidationError(f"A study can have at most {MAX_CATEGORY_BIT + 1} error categories.")
    return bit


def error_categories_create_defaults(*, study: Study) -> list[ErrorCategory]:
    """Give ``study`` the protocol's five error categories (no-op for slugs it already has).

    Each keeps its usual storage bit when that bit is free, else takes the next one.
    """
    existing = set(study.categories.values_list("slug", flat=True))
    created = []
    for c in DEFAULT_ERROR_CATEGORIES:
        if c.slug in existing:
            continue
        bit = c.bit
        if study.categories.filter(bit=bit).exists():
            bit = error_category_next_bit(study=study)
        created.append(
            ErrorCategory.objects.create(
                study=study,
                slug=c.slug,
                label=c.label,
                definition=c.definition,
                order=c.order,
                bit=bit,
                catches_attention_check=c.catches_attention_check,
            )
        )
    return created


@transaction.atomic
def study_create(
    *,
    slug: str,
    title: str,
    stages: Iterable[tuple[str, timedelta]] = (),
    groups: Iterable[str] = (),
    user=None,
    default_categories: bool = True,
    **fields,
) -> Study:
    """Create a study with its stages (in order), groups and (unless
    ``default_categories`` is False: the caller adds its own) the default categories.

    ``fields`` are further Study fields (overlap_k, information_sheet, ...).
    """
    study = Study(slug=slug, title=title, **fields)
    study.full_clean()
    study.save()
    for position, (name, min_wait) in enumerate(stages, start=1):
        stage = Stage(study=study, position=position, name=name, min_wait=min_wait)
        stage.full_clean()
        stage.save()
    for name in groups:
        group = AnnotatorGroup(study=study, name=name, pseudonym_prefix=name)
        group.full_clean()
        group.save()
    if default_categories:
        error_categories_create_defaults(study=study)
    consent_version_sync(study=study, user=user)
    return study


def study_open(*, study: Study) -> Study:
    """Let annotators in. Refuses, listing what is missing and changing nothing, while
    the study lacks what annotators need (``study_missing_for_opening``)."""
    from ..selectors.readiness import study_missing_for_opening, study_opening_message

    with transaction.atomic():
        study = studies_locked().get(pk=study.pk)
        if study.purged_at is not None:
            raise ValidationError(
                CHECK_MESSAGES["study_purged_stays_closed"], code=ErrorCode.STUDY_PURGED
            )
        missing = study_missing_for_opening(study=study)
        if missing:
            raise ValidationError(study_opening_message(missing), code=ErrorCode.STUDY_NOT_READY)
        if study.status != Study.Status.OPEN:
            study.status = Study.Status.OPEN
            study.save(update_fields=["status", "updated_at"])
    return study


def consent_version_current(*, study: Study) -> ConsentVersion | None:
    return study.consent_versions.order_by("-number").first()


@transaction.atomic
def consent_version_sync(*, study: Study, user=None) -> ConsentVersion | None:
    """Snapshot the study's information sheet and consent text as a new version when
    they differ from the latest version. Returns the new version, or None if unchanged
    (or if either text is still empty, so there is nothing to consent to yet).

    Locks the study row so two concurrent edits cannot take the same version number.
    """
    if not study.information_sheet.strip() or not study.consent_text.strip():
        return None
    studies_locked().filter(pk=study.pk).first()
    latest = consent_version_current(study=study)
    sheet, statement = _normalised(study.information_sheet), _normalised(study.consent_text)
    if (
        latest is not None
        and _normalised(latest.information_sheet) == sheet
        and _normalised(latest.consent_text) == statement
    ):
        return None
    return ConsentVersion.objects.create(
        study=study,
        number=(latest.number + 1) if latest else 1,
        information_sheet=sheet,
        consent_text=statement,
        created_by=user,
    )


def _normalised(text: str) -> str:
    """Browsers send CRLF line endings; a re-saved form with the same words must not
    count as a new consent text."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


# --- annotators --------------------------------------------------------------------


@transaction.atomic
def annotators_create(*, group: AnnotatorGroup, count: int, email: str = "") -> list[Annotator]:
    """Create ``count`` pseudonymous annotators numbered after the group's highest.

    Locks the group row so concurrent calls cannot hand out the same number, and,
    first, the study's row.
    """
    if not 1 <= count <= 1000:
        raise ValidationError({"count": "Create between 1 and 1000 annotators at a time."})
    studies_locked().filter(pk=group.study_id).first()
    group = groups_locked().select_related("study").get(pk=group.pk)
    start = (group.annotators.aggregate(m=Max("number"))["m"] or 0) + 1
    annotators = [
        Annotator(
            study=group.study,
            group=group,
            number=n,
            pseudonym=f"{group.pseudonym_prefix} {n}",
            email=email,
        )
        for n in range(start, start + count)
    ]
    return Annotator.objects.bulk_create(annotators)


def annotator_validate(*, annotator: Annotator) -> None:
    """Cross-table rule the admin form and services share: group belongs to the study
    and the pseudonym is "<prefix> <number>"."""
    if annotator.group_id and annotator.study_id and annotator.group.study_id != annotator.study_id:
        raise ValidationError({"group": "This group belongs to another study."})
    if annotator.consented_version_id and (
        annotator.consented_version.study_id != annotator.study_id
    ):
        raise ValidationError(
            {"consented_version": "This consent version belongs to another study."}
        )
    if annotator.group_id and annotator.number:
        expected = f"{annotator.group.pseudonym_prefix} {annotator.number}"
        if annotator.pseudonym != expected:
            raise ValidationError({"pseudonym": f'The pseudonym must be "{expected}".'})


# --- annotator entry ---------------------------------------------------------------------


def annotator_needs_consent(*, annotator: Annotator) -> bool:
    """True until the annotator accepted the study's current consent version (a new
    version, after a researcher changed the texts, asks again)."""
    if "current_consent_id" in annotator.__dict__:  # read with the annotator (selectors)
        current_id = annotator.current_consent_id
    else:
        current = consent_version_current(study=annotator.study)
        current_id = current.pk if current is not None else None
    return current_id is None or annotator.consented_version_id != current_id


def annotator_consent(*, annotator: Annotator, version: ConsentVersion, now=None) -> Annotator:
    """Record that ``annotator`` accepted ``version`` (which must be the current one:
    a page shown before the texts changed must be shown again)."""
    current = consent_version_current(study=annotator.study)
    if current is None:
        raise ValidationError("This study has no consent text yet.")
    if version.pk != current.pk:
        raise ValidationError(
            "The information sheet has changed since you opened it. Please read it again."
        )
    if annotator.consented_version_id == version.pk:
        return annotator  # a double click: keep the first time
    annotator.consented_version = version
    annotator.consented_at = now or timezone.now()
    annotator.save(update_fields=["consented_version", "consented_at"])
    return annotator


def annotator_complete_tutorial(*, annotator: Annotator, stage: Stage | None = None, now=None):
    """The annotator confirmed the tutorial: the first time, before any batch; and, as
    it stood for ``stage`` (the one they are about to work in), once per stage
    (``TutorialReading``, which ``stage_tutorial_due`` asks)."""
    now = now or timezone.now()
    if annotator.tutorial_completed_at is None:
        annotator.tutorial_completed_at = now
        annotator.save(update_fields=["tutorial_completed_at"])
    if stage is not None:
        TutorialReading.objects.get_or_create(
            annotator=annotator, stage=stage, defaults={"read_at": now}
        )
    return annotator


def annotator_decline(*, annotator: Annotator) -> bool:
    """The annotator does not want to take part. A crowd worker who never consented
    and has no work is removed with their platform ids (nothing is kept about them).
    Anyone else who never consented loses their screening answers (they count only
    once a person consents); the record of a screening that ended participation
    stays. Returns whether the row was removed."""
    if annotator.consented_at is None:
        QuestionnaireResponse.objects.filter(annotator=annotator, screened_out=False).delete()
    if annotator.platform and annotator.consented_at is None and not annotator.assignments.exists():
        annotator.delete()
        return True
    return False
