"""Writes on the coding of free-text descriptions: the codebook, the coders and each
coder's coding of a description.

A description is a judgement that counts (``Judgement.analysed_q``) and carries an
``error_description``. Each coder writes only their own coding (one row per
judgement and coder); a coding is one or more codes of the coder's study, or
*uninformative* with no codes. The primary coder is ``Coder.objects.primary``: the one
marked primary, else the study's first coder; becoming a coder never marks anyone, so
the first coder is primary until a researcher chooses another.

Every function is all-or-nothing: a refusal raises ``ValidationError`` with a message
per field and writes nothing.
"""

import re
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..limits import SHORT_TEXT_MAX_LENGTH, cap_message
from ..models import SLUG_REGEX, Code, Coder, DescriptionCoding, Judgement, Study
from ..models.messages import SLUG_MESSAGE

SLUG_MAX_LENGTH = Code._meta.get_field("slug").max_length
LABEL_MAX_LENGTH = Code._meta.get_field("label").max_length
STAFF_ONLY_MESSAGE = "Only active staff users code descriptions."


def coder_join(*, study: Study, user) -> Coder:
    """``user`` codes ``study`` (idempotent: returns their existing role). Staff only."""
    if not (user.is_active and user.is_staff):
        raise ValidationError({"user": STAFF_ONLY_MESSAGE})
    coder, _ = Coder.objects.get_or_create(study=study, user=user)
    return coder


@transaction.atomic
def coder_make_primary(*, coder: Coder) -> Coder:
    """Make ``coder`` the study's primary coder (the one the analysis reports); the
    previous primary, if any, stops being primary. Locks the study's coders."""
    coders = Coder.objects.select_for_update().filter(study_id=coder.study_id)
    list(coders)  # take the locks
    coders.exclude(pk=coder.pk).filter(is_primary=True).update(is_primary=False)
    Coder.objects.filter(pk=coder.pk).update(is_primary=True)
    coder.is_primary = True
    return coder


def code_clean(
    *, study: Study, slug: str, label: str, definition: str = "", example: str = ""
) -> dict[str, str]:
    """The code's fields, trimmed, or ``ValidationError`` with a message per field (the
    same rules as the database's constraints on Code)."""
    fields = {
        "slug": (slug or "").strip(),
        "label": (label or "").strip(),
        "definition": (definition or "").strip(),
        "example": (example or "").strip(),
    }
    errors: dict[str, str] = {}
    if not fields["slug"]:
        errors["slug"] = "A code needs a slug (e.g. lost_context)."
    elif len(fields["slug"]) > SLUG_MAX_LENGTH:
        errors["slug"] = f"A slug has at most {SLUG_MAX_LENGTH} characters."
    elif not re.fullmatch(SLUG_REGEX.strip("^$"), fields["slug"]):
        errors["slug"] = SLUG_MESSAGE
    elif Code.objects.filter(study=study, slug=fields["slug"]).exists():
        errors["slug"] = f'The codebook already has a code "{fields["slug"]}".'
    if not fields["label"]:
        errors["label"] = "A code needs a label."
    elif len(fields["label"]) > LABEL_MAX_LENGTH:
        errors["label"] = f"A label has at most {LABEL_MAX_LENGTH} characters."
    elif Code.objects.filter(study=study, label=fields["label"]).exists():
        errors["label"] = f'The codebook already has a code labelled "{fields["label"]}".'
    for name in ("definition", "example"):
        if len(fields[name]) > SHORT_TEXT_MAX_LENGTH:
            errors[name] = cap_message(SHORT_TEXT_MAX_LENGTH, len(fields[name]))
    if errors:
        raise ValidationError(errors)
    return fields


def code_create(
    *, study: Study, slug: str, label: str, definition: str = "", example: str = "", user=None
) -> Code:
    """Add a code to the study's codebook. Its slug never changes afterwards."""
    fields = code_clean(study=study, slug=slug, label=label, definition=definition, example=example)
    try:
        with transaction.atomic():
            return Code.objects.create(study=study, created_by=user, **fields)
    except IntegrityError:
        # Another coder added the same slug or label a moment ago.
        code_clean(study=study, **fields)
        raise


def coding_judgement_problem(*, judgement: Judgement, study: Study) -> str | None:
    """Why ``judgement`` is not a description ``study`` codes, or None."""
    if judgement.assignment.stage.study_id != study.pk:
        return "This answer belongs to another study."
    if not judgement.error_description:
        return "This answer has no description to code."
    if not Judgement.objects.filter(Judgement.analysed_q(), pk=judgement.pk).exists():
        return (
            "This description is not coded: its batch was not submitted, or it answers "
            "an attention check."
        )
    return None


@transaction.atomic
def coding_save(
    *,
    coder: Coder,
    judgement: Judgement,
    codes: Iterable[Code] = (),
    uninformative: bool = False,
    user=None,
    now=None,
) -> DescriptionCoding:
    """Save ``coder``'s coding of ``judgement``'s description, replacing their earlier
    coding of it (never another coder's). ``user``, when given, must be the coder's own
    user. Locks the coding row."""
    codes = list(codes)
    errors: dict[str, str] = {}
    if user is not None and user.pk != coder.user_id:
        raise ValidationError({"coder": "You can only save your own coding."})
    problem = coding_judgement_problem(judgement=judgement, study=coder.study)
    if problem:
        errors["judgement"] = problem
    foreign = sorted(c.slug for c in codes if c.study_id != coder.study_id)
    if foreign:
        errors["codes"] = f"Not codes of this study: {', '.join(foreign)}."
    elif uninformative and codes:
        errors["codes"] = (
            "An uninformative description gets no codes: untick the codes or uninformative."
        )
    elif not uninformative and not codes:
        errors["codes"] = "Choose at least one code, or mark the description uninformative."
    if errors:
        raise ValidationError(errors)
    coding, _ = DescriptionCoding.objects.select_for_update().get_or_create(
        judgement=judgement,
        coder=coder,
        defaults={"coded_at": now or timezone.now(), "uninformative": uninformative},
    )
    coding.uninformative = uninformative
    coding.coded_at = now or timezone.now()
    coding.save(update_fields=["uninformative", "coded_at"])
    coding.codes.set(codes)
    return coding
