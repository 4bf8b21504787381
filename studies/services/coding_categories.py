"""Turning codes into error categories: the themes found in a free-text phase become
the categories of a later categorical phase, of the same study or of a new draft copy.
"""

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from ..models import MAX_CATEGORY_BIT, Code, ErrorCategory, Study
from .studies import error_category_next_bit, study_create

# What a copy takes over from its study (everything but identity, status, the crowd
# group and the purge; mee_merge names the original's categories).
COPIED_FIELDS = (
    "description", "contact_email", "information_sheet", "consent_text", "tutorial_intro",
    "tutorial_example_turns", "tutorial_example_notes", "tutorial_empathy_explanation",
    "coherence_question", "empathy_statement", "empathy_labels", "overlap_k",
    "batches_per_stage", "batch_time_limit", "avoid_recurrence", "attention_failure_policy",
    "mturk_frame",
)  # fmt: skip


def _codes_problems(*, codes: Sequence[Code], study: Study) -> list[str]:
    problems = []
    if not codes:
        problems.append("Choose at least one code.")
    studies = {code.study_id for code in codes}
    if len(studies) > 1:
        problems.append("Choose codes of one study at a time.")
    existing = list(study.categories.values_list("slug", "label"))
    slugs = {slug for slug, _ in existing}
    labels = {label for _, label in existing}
    for code in codes:
        if code.slug in slugs:
            problems.append(f'{study.slug} already has an error category "{code.slug}".')
        if code.label in labels:
            problems.append(f'{study.slug} already has an error category labelled "{code.label}".')
        if not code.definition:
            problems.append(f'The code "{code.slug}" needs a definition to become a category.')
    try:
        free = MAX_CATEGORY_BIT + 1 - error_category_next_bit(study=study)
    except ValidationError:
        free = 0
    if len(codes) > free:
        problems.append(
            f"{study.slug} has room for {free} more error categor{'y' if free == 1 else 'ies'} "
            f"(at most {MAX_CATEGORY_BIT + 1}); {len(codes)} codes were chosen."
        )
    return problems


@transaction.atomic
def codes_to_categories(*, codes: Sequence[Code], study: Study) -> list[ErrorCategory]:
    """Add one error category per code to ``study``: slug, label and definition of the
    code, its example as the tutorial example, the next free storage bits
    (``error_category_next_bit``'s rule: after every bit ever used) and an order
    after the existing categories. Refuses (``ValidationError``, nothing written) when
    a slug or label is taken, a code has no definition or the bits run out. Locks the
    study row."""
    Study.objects.select_for_update().get(pk=study.pk)
    codes = sorted(codes, key=lambda c: c.label)
    problems = _codes_problems(codes=codes, study=study)
    if problems:
        raise ValidationError(problems)
    top = study.categories.aggregate(order=Max("order"))["order"]
    order = 0 if top is None else top
    created = []
    for code in codes:
        order += 1
        bit = error_category_next_bit(study=study)
        category = ErrorCategory(
            study=study,
            slug=code.slug,
            label=code.label,
            definition=code.definition,
            example_reflection=code.example,
            order=order,
            bit=bit,
        )
        category.full_clean()
        category.save()
        created.append(category)
    return created


@transaction.atomic
def codes_to_new_study(*, codes: Sequence[Code], slug: str, title: str, user=None) -> Study:
    """A new draft study copying the codes' study (its texts, protocol settings, stages
    and groups; every stage asks for error categories), with the default categories
    plus one per code (``codes_to_categories``). Nothing is written on refusal."""
    if not codes:
        raise ValidationError("Choose at least one code.")
    source = codes[0].study
    stages = list(source.stages.order_by("position"))
    if Study.objects.filter(slug=(slug or "").strip()).exists():
        raise ValidationError({"slug": f'A study "{slug.strip()}" already exists.'})
    study = study_create(
        slug=(slug or "").strip(),
        title=(title or "").strip(),
        stages=[(stage.name, stage.min_wait) for stage in stages],
        groups=list(source.groups.order_by("name").values_list("name", flat=True)),
        user=user,
        **{field: getattr(source, field) for field in COPIED_FIELDS},
    )
    for stage, copy in zip(stages, study.stages.order_by("position"), strict=True):
        copy.empathy_after_yes = stage.empathy_after_yes
        copy.save(update_fields=["empathy_after_yes"])
    prefixes = dict(source.groups.values_list("name", "pseudonym_prefix"))
    for group in study.groups.all():
        group.pseudonym_prefix = prefixes[group.name]
        group.save(update_fields=["pseudonym_prefix"])
    codes_to_categories(codes=codes, study=study)
    return study
