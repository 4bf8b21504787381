"""Writes on studies: every rule a write must obey lives here (HackSoft style).

Views, the admin, management commands, the API and Celery tasks call these
functions, so the rules cannot drift apart between interfaces. Validation errors are
``django.core.exceptions.ValidationError`` with field-keyed messages.
"""

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from .models import (
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    ConsentVersion,
    DialogueContext,
    ErrorCategory,
    Judgement,
    Reflection,
    Stage,
    Study,
)
from .protocol import DEFAULT_ERROR_CATEGORIES, EMPATHY_SCALE

# --- studies ----------------------------------------------------------------------


def error_categories_create_defaults(*, study: Study) -> list[ErrorCategory]:
    """Give ``study`` the five categories of BRIEF §4 (no-op for those it already has)."""
    existing = set(study.categories.values_list("slug", flat=True))
    created = ErrorCategory.objects.bulk_create(
        ErrorCategory(
            study=study,
            slug=c.slug,
            label=c.label,
            definition=c.definition,
            order=c.order,
            bit=c.bit,
        )
        for c in DEFAULT_ERROR_CATEGORIES
        if c.slug not in existing
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
    **fields,
) -> Study:
    """Create a study with its stages (in order), groups and the default categories.

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
    error_categories_create_defaults(study=study)
    consent_version_sync(study=study, user=user)
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
    Study.objects.select_for_update().filter(pk=study.pk).first()
    latest = consent_version_current(study=study)
    if (
        latest is not None
        and latest.information_sheet == study.information_sheet
        and latest.consent_text == study.consent_text
    ):
        return None
    return ConsentVersion.objects.create(
        study=study,
        number=(latest.number + 1) if latest else 1,
        information_sheet=study.information_sheet,
        consent_text=study.consent_text,
        created_by=user,
    )


# --- annotators --------------------------------------------------------------------


@transaction.atomic
def annotators_create(*, group: AnnotatorGroup, count: int, email: str = "") -> list[Annotator]:
    """Create ``count`` pseudonymous annotators numbered after the group's highest.

    Locks the group row so concurrent calls cannot hand out the same number.
    """
    if not 1 <= count <= 1000:
        raise ValidationError({"count": "Create between 1 and 1000 annotators at a time."})
    group = AnnotatorGroup.objects.select_for_update().select_related("study").get(pk=group.pk)
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
    if annotator.group_id and annotator.number:
        expected = f"{annotator.group.pseudonym_prefix} {annotator.number}"
        if annotator.pseudonym != expected:
            raise ValidationError({"pseudonym": f'The pseudonym must be "{expected}".'})


# --- assignments -------------------------------------------------------------------


def assignment_shuffled_order(*, batch: Batch, annotator: Annotator) -> list[int]:
    """The annotator's own order of the batch's reflections, reproducible from the
    study seed (so an audit can recompute it)."""
    ids = list(batch.items.order_by("position").values_list("reflection_id", flat=True))
    rng = random.Random(f"{batch.stage.study.seed}/order/{annotator.pk}/{batch.pk}")
    rng.shuffle(ids)
    return ids


@transaction.atomic
def assignment_create(
    *, annotator: Annotator, batch: Batch, now: datetime | None = None
) -> Assignment:
    """Give ``batch`` to ``annotator`` with a stored shuffled order.

    This only checks that the pairing is valid; which batch to give (overlap, workload,
    stages, waiting periods) is the assignment service's decision.
    """
    now = now or timezone.now()
    batch = Batch.objects.select_related("stage__study", "context").get(pk=batch.pk)
    if batch.stage.study_id != annotator.study_id:
        raise ValidationError({"batch": "This batch belongs to another study."})
    if Assignment.objects.filter(annotator=annotator, batch=batch).exists():
        raise ValidationError({"batch": f"{annotator.pseudonym} already has this batch."})
    order = assignment_shuffled_order(batch=batch, annotator=annotator)
    if not order:
        raise ValidationError({"batch": "This batch has no reflections."})
    is_recurring = Assignment.objects.filter(
        annotator=annotator,
        batch__context_id=batch.context_id,
        batch__stage__position__lt=batch.stage.position,
    ).exists()
    return Assignment.objects.create(
        annotator=annotator,
        batch=batch,
        order=order,
        assigned_at=now,
        is_recurring=is_recurring,
    )


# --- judgements --------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """An annotator's answer for one response candidate, as submitted."""

    coherent: bool
    categories: frozenset[str] = field(default_factory=frozenset)
    most_evident: str | None = None
    empathy: int | None = None
    seconds_spent: float | None = None


@dataclass(frozen=True)
class EncodedAnswer:
    coherent: bool
    error_flags: int
    most_evident_bit: int | None
    empathy: int | None
    seconds_spent: float | None


def answer_encode(
    *, answer: Answer, categories: dict[str, int], require_complete: bool = True
) -> EncodedAnswer:
    """Check ``answer`` against the protocol (BRIEF §4) and the database rules and turn
    category slugs into the stored bit set.

    ``categories`` maps the study's category slugs to their bits. With
    ``require_complete`` (the annotation interface) a No needs at least one category,
    two or more categories need a most evident error, and a Yes needs the 5-point
    rating. Imported published data may lack those, so importers pass False; the
    consistency rules that the database enforces always apply.
    """
    errors: dict[str, str] = {}
    unknown = sorted(answer.categories - categories.keys())
    if unknown:
        errors["categories"] = f"Unknown error categories: {', '.join(unknown)}."
    if answer.coherent:
        if answer.categories:
            errors["categories"] = "Error categories can only be chosen when the answer is No."
        if answer.most_evident is not None:
            errors["most_evident"] = (
                "A most evident error can only be chosen when the answer is No."
            )
        if answer.empathy is None and require_complete:
            errors["empathy"] = "Choose how much you agree with the statement."
    else:
        if answer.empathy is not None:
            errors["empathy"] = "The agreement rating is only asked when the answer is Yes."
        if require_complete and not answer.categories:
            errors["categories"] = "Choose at least one error category."
        if answer.most_evident is not None and answer.most_evident not in answer.categories:
            errors["most_evident"] = "The most evident error must be one of the chosen categories."
        elif answer.most_evident is None and len(answer.categories) >= 2 and require_complete:
            errors["most_evident"] = "Choose the most evident error among the chosen categories."
    if answer.empathy is not None and answer.empathy not in EMPATHY_SCALE:
        errors["empathy"] = "The agreement rating must be between 1 and 5."
    if answer.seconds_spent is not None and answer.seconds_spent < 0:
        errors["seconds_spent"] = "Time spent cannot be negative."
    if errors:
        raise ValidationError(errors)

    flags = 0
    for slug in answer.categories:
        flags |= 1 << categories[slug]
    most_evident = answer.most_evident
    if most_evident is None and len(answer.categories) == 1:
        # BRIEF §5: a single chosen category is that annotator's most evident error.
        (most_evident,) = answer.categories
    return EncodedAnswer(
        coherent=answer.coherent,
        error_flags=flags,
        most_evident_bit=categories[most_evident] if most_evident is not None else None,
        empathy=answer.empathy,
        seconds_spent=answer.seconds_spent,
    )


def study_category_bits(*, study_id: int) -> dict[str, int]:
    return dict(ErrorCategory.objects.filter(study_id=study_id).values_list("slug", "bit"))


@transaction.atomic
def judgement_record(
    *, assignment: Assignment, reflection: Reflection, answer: Answer, now: datetime | None = None
) -> Judgement:
    """Save (or revise) one answer of an open assignment. Idempotent: saving the same
    answer twice leaves one row.

    Locks the assignment row so a concurrent submit or expiry cannot slip in between
    the status check and the write.
    """
    now = now or timezone.now()
    assignment = (
        Assignment.objects.select_for_update().select_related("batch__stage").get(pk=assignment.pk)
    )
    if assignment.status not in (Assignment.Status.ASSIGNED, Assignment.Status.IN_PROGRESS):
        raise ValidationError(
            f"This batch is {assignment.get_status_display().lower()}; answers can no longer "
            "be changed."
        )
    if reflection.pk not in assignment.order:
        raise ValidationError({"reflection": "This response candidate is not part of this batch."})
    encoded = answer_encode(
        answer=answer, categories=study_category_bits(study_id=assignment.batch.stage.study_id)
    )
    judgement, _ = Judgement.objects.update_or_create(
        assignment=assignment,
        reflection=reflection,
        defaults={
            "coherent": encoded.coherent,
            "error_flags": encoded.error_flags,
            "most_evident_bit": encoded.most_evident_bit,
            "empathy": encoded.empathy,
            "seconds_spent": encoded.seconds_spent,
        },
    )
    if assignment.status == Assignment.Status.ASSIGNED:
        assignment.status = Assignment.Status.IN_PROGRESS
        assignment.started_at = now
        assignment.save(update_fields=["status", "started_at", "updated_at"])
    return judgement


def judgement_categories(*, judgement: Judgement, categories: Iterable[ErrorCategory]) -> list[str]:
    """Slugs of the categories set in ``judgement`` (for display)."""
    return [c.slug for c in categories if judgement.error_flags & (1 << c.bit)]


def context_validate(*, context: DialogueContext) -> None:
    """Model-level validation for admin edits of a context (turn shape)."""
    context.full_clean()
