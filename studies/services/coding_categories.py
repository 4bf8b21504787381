"""Turning codes into error categories: the themes found in a free-text phase become
the categories of a later categorical phase, of the same study or of a new draft copy.

A stage that asks for categories checks a No against the categories that catch the
attention check (``ErrorCategory.catches_attention_check``): after the action, a study
with such a stage keeps at least one, or the action marks the chosen code's category
so (``attention_check``). Earlier answers never saw a new category, so the same study
takes new categories only while none of its categories-asking stages has started.
The new categories can become the ones a later stage offers; that stage then waits for
its scheme to be marked final before it opens to annotators.
"""

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from ..locks import studies_locked
from ..models import (
    MAX_CATEGORY_BIT,
    TUTORIAL_FIELDS,
    WORDING_FIELDS,
    Assignment,
    Code,
    ErrorCategory,
    Stage,
    Study,
)
from .coding import reserved_slug_message
from .studies import error_category_next_bit, study_create

# Study fields a copy does not take over: its identity, status and random seed, the
# crowd group, the purge, and mee_merge (it names the original's categories).
NOT_COPIED = frozenset({"slug", "title", "status", "seed", "crowd_group", "purged_at", "mee_merge"})


def copied_fields() -> tuple[str, ...]:
    """What a copy takes over from its study: every other editable Study field."""
    return tuple(
        field.name
        for field in Study._meta.concrete_fields
        if field.editable and not field.primary_key and field.name not in NOT_COPIED
    )


def _stages_asking_categories(study: Study) -> list:
    return [s for s in study.stages.order_by("position") if s.answer_settings.asks_categories]


def coding_next_stage(*, study: Study) -> Stage | None:
    """The stage whose categories the codes are meant for: the first stage asking for
    categories after a stage asking for descriptions (None when there is none)."""
    described = False
    for stage in study.stages.order_by("position"):
        settings = stage.answer_settings
        if described and settings.asks_categories:
            return stage
        described = described or settings.asks_description
    return None


def _codes_problems(
    *,
    codes: Sequence[Code],
    study: Study,
    attention_check: Code | None = None,
    stage: Stage | None = None,
) -> list[str]:
    problems = []
    if stage is not None and stage.study_id != study.pk:
        problems.append(f"{stage.name} is a stage of another study.")
    elif stage is not None and not stage.answer_settings.asks_categories:
        problems.append(f"{stage.name} asks for no error categories: it cannot offer them.")
    if not codes:
        problems.append("Choose at least one code.")
    studies = {code.study_id for code in codes}
    if len(studies) > 1:
        problems.append("Choose codes of one study at a time.")
    if attention_check is not None and attention_check not in codes:
        problems.append("The code catching the attention check must be one of the chosen codes.")
    asking = _stages_asking_categories(study)
    started = [s.name for s in asking if Assignment.objects.filter(stage=s).exists()]
    if started:
        problems.append(
            f"{study.slug} has answers in {', '.join(started)}, which ask for error "
            "categories: earlier answers never saw a new category. Make the categories in a "
            "new draft study instead."
        )
    existing = list(study.categories.values_list("slug", "label"))
    slugs = {slug for slug, _ in existing}
    labels = {label for _, label in existing}
    for code in codes:
        if code.slug in slugs:
            problems.append(f'{study.slug} already has an error category "{code.slug}".')
        if code.label in labels:
            problems.append(f'{study.slug} already has an error category labelled "{code.label}".')
        if reserved := reserved_slug_message(code.slug):
            problems.append(f'The code "{code.slug}": {reserved}')
        if not code.definition:
            problems.append(f'The code "{code.slug}" needs a definition to become a category.')
    if (
        asking
        and attention_check is None
        and not study.categories.filter(catches_attention_check=True).exists()
    ):
        problems.append(
            f"{study.slug} asks for error categories but no category catches the attention "
            "check: choose the code whose category does (a No with it passes the check)."
        )
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
def codes_to_categories(
    *,
    codes: Sequence[Code],
    study: Study,
    attention_check: Code | None = None,
    stage: Stage | None = None,
) -> list[ErrorCategory]:
    """Add one error category per code to ``study``: slug, label and definition of the
    code, its example as the tutorial example, the next free storage bits
    (``error_category_next_bit``'s rule: after every bit ever used) and an order
    after the existing categories; ``attention_check``'s category catches the
    attention check. With ``stage`` (one of the study's stages asking for categories,
    usually ``coding_next_stage``), the new categories become the ones it offers
    (replacing the defaults there; a category catching the attention check stays
    offered) and its categories come from coding: it stays closed to annotators until
    a researcher marks its scheme final (``stage_scheme_mark_final``). Refuses
    (``ValidationError``, nothing written) when a stage
    asking for categories has answers, a slug or label is taken or reserved, a code
    has no definition, no category would catch the attention check, the bits run
    out, or ``stage`` is another study's or asks for no categories. Locks the study
    row."""
    studies_locked().get(pk=study.pk)
    codes = sorted(codes, key=lambda c: c.label)
    problems = _codes_problems(
        codes=codes, study=study, attention_check=attention_check, stage=stage
    )
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
            catches_attention_check=attention_check is not None and code.pk == attention_check.pk,
        )
        category.full_clean()
        category.save()
        created.append(category)
    if stage is not None:
        stage.categories.set(created)
        stage.categories_from_coding = True
        stage.scheme_final_at, stage.scheme_final_by = None, None
        stage.save(update_fields=["categories_from_coding", "scheme_final_at", "scheme_final_by"])
    return created


@transaction.atomic
def codes_to_new_study(
    *, codes: Sequence[Code], slug: str, title: str, attention_check: Code | None = None, user=None
) -> Study:
    """A new draft study copying the codes' study (its texts, protocol settings, stages
    and groups; every stage asks for error categories) whose categories are the codes
    only (``codes_to_categories``: a bottom-up scheme, no default categories), one of
    them catching the attention check. Nothing is written on refusal."""
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
        default_categories=False,
        **{field: getattr(source, field) for field in copied_fields()},
    )
    copied_stage_fields = ("empathy_after_yes", *WORDING_FIELDS, *TUTORIAL_FIELDS)
    for stage, copy in zip(stages, study.stages.order_by("position"), strict=True):
        for name in copied_stage_fields:
            setattr(copy, name, getattr(stage, name))
        copy.save(update_fields=copied_stage_fields)
    prefixes = dict(source.groups.values_list("name", "pseudonym_prefix"))
    for group in study.groups.all():
        group.pseudonym_prefix = prefixes[group.name]
        group.save(update_fields=["pseudonym_prefix"])
    codes_to_categories(codes=codes, study=study, attention_check=attention_check)
    return study
