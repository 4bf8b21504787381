"""Fields locked once their row is in use (annotated, referenced), so that data already
collected keeps its meaning: a study's instrument once annotators answered, a stage's
position and answer settings once annotators work in it, a group's pseudonym prefix
once its annotators are named with it, a category's slug and attention-check role
once judgements chose it, a dialogue's turns and a reflection once judged, and a
batch's reflections once handed out, the study's seed once it has materials; a code or a coder with codings stays. The training
quiz's rule of the same kind is
``training_is_locked``. The admin's forms, the materials import and any other
interface changing these rows ask here, and refuse before writing anything.
"""

from collections.abc import Callable, Collection
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Model, QuerySet
from django.utils.text import capfirst

from ..models import (
    WORDING_FIELDS,
    AnnotatorGroup,
    Batch,
    Code,
    Coder,
    DialogueContext,
    ErrorCategory,
    Judgement,
    LikertDimension,
    Reflection,
    Stage,
    Study,
)
from ..selectors import error_category_is_used, study_has_judgements

#: The study's wording of the questions.
INSTRUMENT_FIELDS = (
    "coherence_question",
    "description_prompt",
    "empathy_statement",
    "empathy_labels",
    "mee_merge",
)


def study_instrument_is_locked(*, study: Study) -> bool:
    return study_has_judgements(study_id=study.pk)


def study_seed_is_locked(*, study: Study) -> bool:
    """Attention checks and stored orders were drawn with the study's seed once it has
    materials: it stays, so an audit can reproduce them."""
    return study.contexts.exists()


def stage_is_locked(*, stage: Stage) -> bool:
    return stage.assignments.exists()


def annotator_group_is_locked(*, group: AnnotatorGroup) -> bool:
    return group.annotators.exists()


def dialogue_context_is_locked(*, context: DialogueContext) -> bool:
    return Judgement.objects.filter(reflection__context=context).exists()


def reflection_is_locked(*, reflection: Reflection) -> bool:
    return reflection.judgements.exists()


def likert_dimension_is_locked(*, dimension: LikertDimension) -> bool:
    """Ratings on the dimension exist: its scale, name and check stay as rated."""
    return dimension.ratings.exists()


def batch_is_locked(*, batch: Batch) -> bool:
    """Annotators have the batch: its reflections cannot change."""
    return batch.assignments.exists()


@dataclass(frozen=True)
class LockedOnceUsed:
    fields: tuple[str, ...]
    reason: str
    is_locked: Callable[[Model], bool]


LOCKED_ONCE_USED: dict[type[Model], LockedOnceUsed] = {
    Study: LockedOnceUsed(
        INSTRUMENT_FIELDS,
        "annotators have already answered this study's questions",
        lambda study: study_instrument_is_locked(study=study),
    ),
    Stage: LockedOnceUsed(
        (
            "position",
            "instrument",
            "no_answer",
            "empathy_after_yes",
            "categories",
            "categories_from_coding",
            "allows_ties",
            "asks_reason",
            "pairs_per_context",
            *WORDING_FIELDS,
        ),
        "annotators already work in this stage",
        lambda stage: stage_is_locked(stage=stage),
    ),
    AnnotatorGroup: LockedOnceUsed(
        ("pseudonym_prefix",),
        "the group's annotators are already named with it",
        lambda group: annotator_group_is_locked(group=group),
    ),
    ErrorCategory: LockedOnceUsed(
        ("slug", "catches_attention_check"),
        "judgements already chose this category",
        lambda category: error_category_is_used(category=category),
    ),
    DialogueContext: LockedOnceUsed(
        ("turns",),
        "annotators have already judged reflections of this context",
        lambda context: dialogue_context_is_locked(context=context),
    ),
    LikertDimension: LockedOnceUsed(
        (
            "stage",
            "name",
            "points",
            "labels",
            "offers_cannot_judge",
            "checks_attention",
            "attention_pass_min",
            "attention_pass_max",
        ),
        "annotators have already rated this dimension",
        lambda dimension: likert_dimension_is_locked(dimension=dimension),
    ),
    Reflection: LockedOnceUsed(
        ("context", "text", "source", "kind"),
        "annotators have already judged this reflection",
        lambda reflection: reflection_is_locked(reflection=reflection),
    ),
}


def code_is_used(*, code: Code) -> bool:
    """A coding gave the code: deleting it would empty codings and change exports."""
    return code.codings.exists()


def coders_used(*, coders: QuerySet[Coder]) -> QuerySet[Coder]:
    """The coders among ``coders`` who coded descriptions: deleting them would delete
    their codings."""
    return coders.filter(codings__isnull=False).distinct()


def coder_is_used(*, coder: Coder) -> bool:
    return coders_used(coders=Coder.objects.filter(pk=coder.pk)).exists()


def locked_fields(*, model: type[Model]) -> tuple[str, ...]:
    """The fields of ``model`` that lock once a row is in use (none for other models)."""
    rule = LOCKED_ONCE_USED.get(model)
    return rule.fields if rule is not None else ()


def locked_reason(*, model: type[Model]) -> str:
    return LOCKED_ONCE_USED[model].reason


def locked_fields_validate(*, instance: Model, changed: Collection[str]) -> None:
    """Refuses a change to the ``changed`` fields of the stored row ``instance`` when
    one of them is locked and the row is in use: a ValidationError naming the fields
    ("Turns cannot change: annotators have already judged reflections of this
    context."). Call before saving, so that nothing is written on refusal."""
    rule = LOCKED_ONCE_USED.get(type(instance))
    if rule is None or instance.pk is None:
        return
    locked = [name for name in rule.fields if name in changed]
    if locked and rule.is_locked(instance):
        labels = ", ".join(capfirst(instance._meta.get_field(name).verbose_name) for name in locked)
        raise ValidationError(f"{labels} cannot change: {rule.reason}.")


def error_category_delete_validate(*, category: ErrorCategory) -> None:
    """Refuses deleting a category judgements already chose (their answers would lose
    it)."""
    if category.pk is not None and error_category_is_used(category=category):
        raise ValidationError(f'"{category.label}" cannot be deleted: judgements already chose it.')
