"""Deleting what identifies the annotators of a closed study (the registry in
the models' ``PERSONAL_FIELDS``, read by :mod:`studies.personal_data`, say what
that is); pseudonymous annotations stay."""

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from ..locks import studies_locked
from ..models import PersonalDataPurge, Study
from ..personal_data import PERSONAL_ROWS, personal_fields


def study_personal_data_counts(*, study: Study) -> dict[str, int]:
    """How many of each kind of personal data the study still holds."""
    counts = {
        item.what: item.model.objects.filter(**{item.of_study: study})
        .filter(item.still_set)
        .count()
        for item in personal_fields()
    }
    counts.update(
        {
            rows.what: rows.model.objects.filter(rows.of_study(study)).count()
            for rows in PERSONAL_ROWS
        }
    )
    return counts


def study_purge_personal_data(
    *, study: Study, by=None, now: datetime | None = None
) -> PersonalDataPurge:
    """Delete the personal data of a closed study's annotators and log who did it,
    when, and how much of each kind went. The study stays closed for good (a database
    constraint); its annotators' invitation links stop working (their tokens are
    replaced). ``Annotator.is_active`` is left as it was: it records a researcher's
    decision to disable an annotator, which decides whose questionnaire answers count
    (``QuestionAnswer.objects.that_count``), and the answers of everyone else must
    still be exported and reported after the purge. Refused, changing nothing, while
    the study is not closed. Purging again logs what was left (new sessions, say).
    Locks the study row."""
    now = now or timezone.now()
    with transaction.atomic(durable=True):
        study = studies_locked().get(pk=study.pk)
        if study.status != Study.Status.CLOSED:
            raise ValidationError(
                f"Close the study before deleting its personal data (it is "
                f"{study.get_status_display().lower()}): annotators may still be at work.",
                code="study_not_closed",
            )
        deleted = study_personal_data_counts(study=study)
        for item in personal_fields():
            item.erase(item.model.objects.filter(**{item.of_study: study}).filter(item.still_set))
        for rows in PERSONAL_ROWS:
            rows.erase(study)
        study.purged_at = now
        study.save(update_fields=["purged_at", "updated_at"])
        return PersonalDataPurge.objects.create(
            study=study,
            purged_at=now,
            purged_by=by,
            purged_by_name=getattr(by, "username", "") or "",
            deleted=deleted,
        )
