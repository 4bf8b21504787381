"""What a study still lacks before annotators can be let in.

The one home of the rule "an open study gives annotators what they need": the admin
form, the service that opens a study (``study_open``) and the demo loader all ask
:func:`study_missing_for_opening`, so they cannot disagree.
"""

from django.db.models import Count, Q

from ..models import (
    BatchItem,
    Choice,
    ErrorCategory,
    LikertDimension,
    Reflection,
    Stage,
    Study,
    TrainingItem,
)

# (field, what annotators miss without it), in the order the admin page shows them.
REQUIRED_TEXTS = (
    ("information_sheet", "the information sheet"),
    ("consent_text", "the consent text"),
    ("tutorial_intro", "the tutorial's introduction"),
    ("tutorial_example_turns", "the tutorial's worked example dialogue"),
    ("tutorial_example_notes", "the notes on the tutorial's worked example"),
    ("tutorial_empathy_explanation", "the tutorial's explanation of the agreement scale"),
)


def _blank(value) -> bool:
    if isinstance(value, str):
        return not value.strip()
    return not value


def _ending_without_code(study: Study) -> bool:
    """A screening choice ends participation but the first stage has no screened-out
    code (the rule ``choice_validate`` applies when the choice is saved)."""
    first = Stage.objects.filter(study=study).order_by("position").first()
    return (first is None or not first.screened_out_code) and Choice.objects.filter(
        question__questionnaire__study=study, ends_participation=True
    ).exists()


def stage_codes_repeated(*, study) -> list[str]:
    """Codes shared by two stages of ``study`` (possible only from before every code had
    to differ), as sentences for the admin: a worker could be paid for the wrong stage
    with them, so the researcher changes one on the platform and here."""
    seen: dict[str, tuple[Stage, str]] = {}
    repeated = []
    for stage in study.stages.order_by("position"):
        for name in Stage.CODE_FIELDS:
            code = getattr(stage, name)
            if not code:
                continue
            if code in seen:
                first, first_name = seen[code]
                repeated.append(
                    f"Stage {stage.position}'s {Stage.code_label(name)} {code} is also stage "
                    f"{first.position}'s {Stage.code_label(first_name)}: a worker given it could "
                    "be paid for the wrong stage. Give one of them a new code, here and on "
                    "the platform."
                )
            else:
                seen[code] = (stage, name)
    return repeated


def stages_without_partial_code(*, study: Study):
    """The stages of ``study`` without a partial-completion code, in order: a crowd study
    cannot open with one, and an open one is flagged (``stage_code_warnings``)."""
    return Stage.objects.filter(study=study, partial_completion_code="").order_by("position")


def stage_code_warnings(*, study: Study) -> list[str]:
    """What the study's admin page flags about its stages' codes: codes shared by two
    stages (possible only from before every code had to differ), and in an open crowd
    study stages without a partial-completion code (its workers then wait for a batch
    to come free, as before such codes; a study that is not open cannot open so,
    ``study_missing_for_opening``)."""
    warnings = stage_codes_repeated(study=study)
    if study.crowd_group_id and study.status == Study.Status.OPEN:
        for name in stages_without_partial_code(study=study).values_list("name", flat=True):
            warnings.append(
                f'The stage "{name}" has no partial-completion code, so a crowd worker who '
                "did some of its batches and can get no further one is asked to come back "
                "later while the platform's clock runs. Give it a code, and give that code "
                "a payment on the platform."
            )
    return warnings


def study_tutorial_missing(*, study: Study) -> bool:
    """A text of the tutorial is still empty (the study cannot open without it)."""
    return any(
        _blank(getattr(study, field))
        for field, _ in REQUIRED_TEXTS
        if field.startswith("tutorial_")
    )


def study_crowd_settings_missing(*, study: Study) -> bool:
    """The study takes part through a crowd platform but lacks what that needs: its
    stages name platform task ids but no crowd group is chosen (workers could not
    join), or it has a crowd group and a stage lacks a code the platform pays with
    (``study_missing_for_opening`` names which)."""
    if study.pk is None:
        return False
    if not study.crowd_group_id:
        return Stage.objects.filter(study=study).exclude(platform_task_ids="").exists()
    return _ending_without_code(study) or stages_without_partial_code(study=study).exists()


def study_missing_for_opening(*, study: Study) -> list[str]:
    """What annotators would miss if ``study`` opened now, as short phrases ("the
    consent text", "materials for the stage \"GPT-3 stage\""); empty when it can open.

    Reads the texts from ``study`` as given (an unsaved form's values work) and the
    stages, groups, categories and materials from the database; a study not saved yet
    has no materials, which can only be imported into a saved study."""
    missing = [label for field, label in REQUIRED_TEXTS if _blank(getattr(study, field))]
    if study.pk is None:  # its stages, groups and categories are saved with it
        return [*missing, "materials (save the study as a draft first, then import them)"]
    # (A gated stage's batches come from its gate's decisions: it needs no materials.)
    stages = list(
        Stage.objects.filter(study=study)
        .order_by("position")
        .annotate(n_batches=Count("batches"), gated=Count("gate"))
        .values_list("name", "n_batches", "gated")
    )
    if not stages:
        missing.append("a stage")
    if not study.groups.exists():
        missing.append("an annotator group")
    coherence = Stage.objects.filter(study=study, instrument=Stage.Instrument.COHERENCE)
    if not stages or coherence.exists():  # a coherence stage offers categories
        categories = ErrorCategory.objects.filter(study=study)
        if not categories.exists():
            missing.append("error categories")
        undefined = categories.filter(Q(definition="") | Q(label="")).order_by("order")
        for slug in undefined.values_list("slug", flat=True):
            missing.append(f'a label and definition of the error category "{slug}"')
    missing.extend(likert_stages_missing(study=study))
    missing.extend(first_stage_missing(study=study))
    if study.crowd_group_id and _ending_without_code(study):
        missing.append(
            "a screened-out code on the first stage (a screening choice ends participation, "
            "and a crowd worker it ends is paid with that code)"
        )
    if study.crowd_group_id:
        missing.extend(
            f'a partial-completion code on the stage "{name}" (a crowd worker whose part of '
            "the stage ends early is paid with it)"
            for name in stages_without_partial_code(study=study).values_list("name", flat=True)
        )
    if stage_codes_repeated(study=study):
        missing.append(
            "a code of its own for each outcome of each stage (two share one: the study's "
            "page says which)"
        )
    if not stages or all(n == 0 for _, n, _ in stages):
        missing.append("materials (import the dialogue contexts)")
    else:
        missing.extend(
            f'materials for the stage "{name}"' for name, n, gated in stages if n == 0 and not gated
        )
    return missing


def likert_stages_missing(*, study: Study) -> list[str]:
    """What the study's Likert stages lack: dimensions to rate, one of which checks
    attention when the stage's batches hold off-topic candidates (rated on it)."""
    missing = []
    likert = Stage.objects.filter(study=study, instrument=Stage.Instrument.LIKERT)
    with_check = set(
        LikertDimension.objects.filter(stage__in=likert, checks_attention=True).values_list(
            "stage_id", flat=True
        )
    )
    with_checked_candidates = set(
        BatchItem.objects.filter(
            batch__stage__in=likert, reflection__kind=Reflection.Kind.ATTENTION_CHECK
        ).values_list("batch__stage_id", flat=True)
    )
    for stage in likert.order_by("position").annotate(n=Count("dimensions")):
        if stage.n == 0:
            missing.append(f'Likert dimensions for the stage "{stage.name}"')
        elif stage.pk in with_checked_candidates and stage.pk not in with_check:
            missing.append(
                f'an attention check dimension for the stage "{stage.name}" (its off-topic '
                "candidate is rated on it)"
            )
    return missing


def first_stage_missing(*, study: Study) -> list[str]:
    """With a training quiz (which practises the coherence protocol), the first stage
    is a coherence stage. (Every batch has something to compare: the human reflection
    and at least one synthetic candidate, from two systems.)"""
    missing = []
    first = Stage.objects.filter(study=study).order_by("position").first()
    quiz = TrainingItem.objects.filter(study=study).exists()
    if quiz and first is not None and first.instrument != Stage.Instrument.COHERENCE:
        does = {
            Stage.Instrument.LIKERT: "rates on Likert dimensions",
            Stage.Instrument.PAIRWISE: "compares pairs of candidates",
            Stage.Instrument.RANKING: "ranks candidates",
        }[first.instrument]
        missing.append(
            "a coherence first stage for the training quiz (the quiz practises the coherence "
            f"protocol; a study whose first stage {does} has no practice items)"
        )
    return missing


def study_opening_message(missing: list[str]) -> str:
    return "Annotators cannot start yet: the study needs " + "; ".join(missing) + "."
