"""Writes on the coding of free-text descriptions: the codebook, the coders and each
coder's coding of a description.

A description is a judgement that counts (``Judgement.analysed_q``) and carries an
``error_description``. Each coder writes only their own coding (one row per
judgement and coder); a coding is one or more codes of the coder's study, or
*uninformative* with no codes. The primary coder is ``Coder.objects.primary``: the one
marked primary, else the study's first coder; the study's first coder is marked
primary when joining (decided under the study's row lock), until a researcher chooses
another.

Every function is all-or-nothing: a refusal raises ``ValidationError`` with a message
per field and writes nothing.
"""

from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..columns import RESERVED_CODE_SLUGS
from ..limits import cap_message
from ..locks import coders_locked, description_codings_locked, studies_locked
from ..models import Code, Coder, DescriptionCoding, Judgement, Study
from ..permissions import user_is_active_staff

STAFF_ONLY_MESSAGE = "Only active staff users code descriptions."
CODE_FIELDS = ("slug", "label", "definition", "example")
BLANK_MESSAGES = {
    "slug": "A code needs a slug (e.g. lost_context).",
    "label": "A code needs a label.",
}


def coder_user_problem(user) -> str | None:
    """Why ``user`` may not be a coder (the coding service and the admin), or None."""
    return None if user_is_active_staff(user) else STAFF_ONLY_MESSAGE


def reserved_slug_message(slug: str) -> str | None:
    """Why ``slug`` may not name a code or an error category (it is an export column
    name, ``RESERVED_CODE_SLUGS``), or None."""
    if slug in RESERVED_CODE_SLUGS:
        return f'"{slug}" names a column of the exports: choose another slug.'
    return None


@transaction.atomic
def coder_join(*, study: Study, user) -> Coder:
    """``user`` codes ``study`` (idempotent: returns their existing role). Staff only.
    The study's first coder is marked primary; the study row is locked, so of two
    coders joining at once exactly one is first."""
    if problem := coder_user_problem(user):
        raise ValidationError({"user": problem})
    studies_locked().get(pk=study.pk)
    coder = Coder.objects.filter(study=study, user=user).first()
    if coder is None:
        first = not Coder.objects.filter(study=study).exists()
        coder = Coder.objects.create(study=study, user=user, is_primary=first)
    return coder


@transaction.atomic
def coder_make_primary(*, coder: Coder) -> Coder:
    """Make ``coder`` the study's primary coder (the one the analysis reports); the
    previous primary, if any, stops being primary. Locks the study's coders."""
    coders = coders_locked().filter(study_id=coder.study_id)
    list(coders)  # take the locks
    coders.exclude(pk=coder.pk).filter(is_primary=True).update(is_primary=False)
    Coder.objects.filter(pk=coder.pk).update(is_primary=True)
    coder.is_primary = True
    return coder


def _constraint_message(name: str, field: str, fields: dict[str, str], exc) -> str:
    value = fields[field]
    if name == "code_slug_unique":
        return f'The codebook already has a code "{value}".'
    if name == "code_label_unique":
        return f'The codebook already has a code labelled "{value}".'
    if name.endswith("_max_length"):
        return cap_message(Code._meta.get_field(field).max_length, len(value))
    return " ".join(exc.messages)


def code_clean(
    *, study: Study, slug: str, label: str, definition: str = "", example: str = ""
) -> dict[str, str]:
    """The code's fields, trimmed, or ``ValidationError`` with a message per field:
    Code's own field checks and constraints (``clean_fields``, each constraint's
    ``validate``, as ``full_clean`` runs them), told per field, and no reserved slug."""
    values = {"slug": slug, "label": label, "definition": definition, "example": example}
    fields = {name: (value or "").strip() for name, value in values.items()}
    code = Code(study=study, **fields)
    errors: dict[str, str] = {}
    try:
        code.clean_fields(exclude=["study", "created_by"])
    except ValidationError as exc:
        for name, messages in exc.message_dict.items():
            blank = not fields.get(name)
            errors[name] = BLANK_MESSAGES.get(name, messages[0]) if blank else messages[0]
    for constraint in Code._meta.constraints:
        field = next(f for f in CODE_FIELDS if constraint.name.startswith(f"code_{f}_"))
        if field in errors:
            continue
        try:
            constraint.validate(Code, code)
        except ValidationError as exc:
            errors[field] = _constraint_message(constraint.name, field, fields, exc)
    if "slug" not in errors and (reserved := reserved_slug_message(fields["slug"])):
        errors["slug"] = reserved
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
    coding, _ = description_codings_locked().get_or_create(
        judgement=judgement,
        coder=coder,
        defaults={"coded_at": now or timezone.now(), "uninformative": uninformative},
    )
    coding.uninformative = uninformative
    coding.coded_at = now or timezone.now()
    coding.save(update_fields=["uninformative", "coded_at"])
    coding.codes.set(codes)
    return coding
