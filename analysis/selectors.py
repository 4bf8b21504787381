"""The one place ORM rows become a DataFrame (one query, no per-row Python)."""

import pandas as pd
from django.db.models import BooleanField, Count, ExpressionWrapper, F, Max, Q, TextField
from django.db.models.functions import Cast

from studies.models import (
    Annotator,
    Assignment,
    Choice,
    Code,
    Coder,
    DescriptionCoding,
    ErrorCategory,
    Judgement,
    Question,
    QuestionAnswer,
    Questionnaire,
    Reflection,
    ScreeningTally,
    Stage,
)

from .metrics.protocol.descriptions import CODING_COLUMNS, PRIMARY, SECOND
from .models import AutomaticScore
from .report import Category
from .report_descriptions import Codings
from .report_questionnaires import QuestionnaireData

JUDGEMENT_COLUMNS = {
    "id": "judgement_id",
    "assignment__batch__stage__name": "stage",
    "assignment__batch__stage__position": "stage_position",
    "assignment__annotator__group__name": "group",
    "assignment__annotator__pseudonym": "annotator",
    "assignment__annotator_id": "annotator_id",
    "assignment__batch__context__external_id": "dialogue_id",
    "reflection_id": "reflection_id",
    "reflection__source": "source",
    "reflection__kind": "kind",
    "coherent": "coherent",
    "error_flags": "error_flags",
    "most_evident_bit": "most_evident_bit",
    "empathy": "empathy",
    "assignment__is_recurring": "is_recurring",
    "assignment__status": "assignment_status",
    "described": "described",  # the answer has a description (annotated below)
    "assignment_id": "assignment_id",
    "seconds_spent": "seconds_spent",
}


def report_categories(*, study_id: int) -> list[Category]:
    """The study's error categories in display order, as the report names them."""
    rows = ErrorCategory.objects.filter(study_id=study_id).order_by("order", "bit")
    return [
        Category(slug, label, bit) for slug, label, bit in rows.values_list("slug", "label", "bit")
    ]


def judgements_frame(
    *, study_id: int, include_expired: bool = False, exclude_sources: tuple[str, ...] = ()
) -> pd.DataFrame:
    """The judgements that count for analysis (``Judgement.objects.analysed``)."""
    qs = (
        Judgement.objects.analysed(
            include_expired=include_expired, excluded_sources=exclude_sources
        )
        .filter(assignment__batch__stage__study_id=study_id)
        .annotate(
            described=ExpressionWrapper(~Q(error_description=""), output_field=BooleanField())
        )
        .order_by()
        .values_list(*JUDGEMENT_COLUMNS)
    )
    return pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=list(JUDGEMENT_COLUMNS.values())
    )


def stages_without_categories(*, study_id: int) -> list[str]:
    """The names of the study's stages whose "No" asks for no error categories
    (``AnswerSettings.asks_categories``): a free-text stage."""
    stages = Stage.objects.filter(study_id=study_id).only("name", "no_answer", "empathy_after_yes")
    return [stage.name for stage in stages if not stage.answer_settings.asks_categories]


def description_codings(*, study_id: int) -> Codings:
    """The study's codebook and the codings the report reads: the primary coder's
    (``Coder.objects.primary``) and the second coder's (the first other coder), one
    row per (description, coder, code), in one query."""
    # In the order the codes were added, as the coding page numbers them.
    codebook = list(
        Code.objects.filter(study_id=study_id).order_by("pk").values_list("slug", "label")
    )
    primary = Coder.objects.primary(study_id)
    roles: dict[int, str] = {}
    if primary is not None:
        roles[primary.pk] = PRIMARY
        second = Coder.objects.filter(study_id=study_id).exclude(pk=primary.pk).first()
        if second is not None:
            roles[second.pk] = SECOND
    qs = (
        DescriptionCoding.objects.filter(coder_id__in=list(roles))
        .order_by()
        .values_list("judgement_id", "coder_id", "uninformative", "codes__slug")
    )
    frame = pd.DataFrame.from_records(qs.iterator(chunk_size=20_000), columns=list(CODING_COLUMNS))
    frame["coder"] = frame["coder"].map(roles)
    return Codings(frame=frame, codebook=codebook)


ASSIGNMENT_COLUMNS = {
    "group__name": "group",
    "annotator__pseudonym": "annotator",
    "stage__name": "stage",
    "status": "status",
    "attention_passed": "attention_passed",
    "assigned_at": "assigned_at",
    "submitted_at": "submitted_at",
}


def assignments_frame(*, study_id: int) -> pd.DataFrame:
    """Every assignment of the study, whatever its status (quality: attention checks
    failed; waiting periods: submissions and claims), one row each."""
    qs = (
        Assignment.objects.filter(stage__study_id=study_id)
        .order_by()
        .values_list(*ASSIGNMENT_COLUMNS)
    )
    frame = pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=list(ASSIGNMENT_COLUMNS.values())
    )
    for column in ("assigned_at", "submitted_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def annotator_ids_by_pseudonym(*, study_id: int) -> dict[str, int]:
    return dict(Annotator.objects.filter(study_id=study_id).values_list("pseudonym", "pk"))


def stage_names(*, study_id: int) -> list[str]:
    """The study's stage names by position."""
    return list(
        Stage.objects.filter(study_id=study_id).order_by("position").values_list("name", flat=True)
    )


AUTOMATIC_SCORE_COLUMNS = {
    "stage__name": "stage",
    "reflection_id": "reflection_id",
    "evaluator": "evaluator",
    "score": "score",
}


def automatic_scores_frame(*, study_id: int) -> pd.DataFrame:
    """Automatic-evaluator scores of the study's analysed items, one row per (stage,
    reflection, evaluator); ``stage`` is the stage name, as in ``judgements_frame``.

    Only a reflection still in its stage's batch counts (a materials re-import may have
    rebuilt the batch since the scores were imported); attention checks never do.
    """
    qs = (
        AutomaticScore.objects.filter(
            study_id=study_id, reflection__batch_items__batch__stage_id=F("stage_id")
        )
        .exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
        .order_by("stage__position", "evaluator", "reflection_id")
        .values_list(*AUTOMATIC_SCORE_COLUMNS)
    )
    return pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=list(AUTOMATIC_SCORE_COLUMNS.values())
    )


def generation_metadata(*, study_id: int) -> pd.Series:
    """The generation metadata of the study's reflections that have any, as JSON text
    indexed by reflection id (text: a study has a handful of distinct settings, parsed
    once each by :func:`analysis.metrics.generation_values`)."""
    qs = (
        Reflection.objects.filter(context__study_id=study_id)
        .exclude(generation={})
        .order_by()
        .values_list("id", Cast("generation", TextField()))
    )
    frame = pd.DataFrame.from_records(
        qs.iterator(chunk_size=20_000), columns=["reflection_id", "generation"]
    )
    return frame.set_index("reflection_id")["generation"].astype(object)


def automatic_evaluators_list(*, study_id: int) -> list[dict]:
    """The study's automatic evaluators: ``evaluator``, ``origin``, ``n_scores`` and
    ``last_set`` (when an import or a computation last set one), by name."""
    return list(
        AutomaticScore.objects.filter(study_id=study_id)
        .values("evaluator", "origin")
        .annotate(n_scores=Count("id"), last_set=Max("imported_at"))
        .order_by("evaluator", "origin")
    )


# --- the REST API (analysis/apis.py) -----------------------------------------------------


def analysis_run_list(*, study_id: int):
    """The study's runs, newest first, without their (large) reports."""
    from .models import AnalysisRun

    return (
        AnalysisRun.objects.filter(study_id=study_id)
        .select_related("study")
        .defer("result")
        .order_by("-created_at", "-id")
    )


def analysis_run_get(*, run_id: int):
    """One run with its report, or None."""
    from .models import AnalysisRun

    return AnalysisRun.objects.select_related("study").filter(pk=run_id).first()


def questionnaire_frames(*, study_id: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """What ``metrics.questionnaire_summary`` reads: the study's questions (with their
    choices' texts in order), its stored answers that count (``QuestionAnswer.objects.that_count``; texts only as "given"; a text never
    leaves the database here) and the counts kept about screened-out people (the
    answer keys of ``ScreeningTally`` turned into choice texts and scale values)."""
    choices = pd.DataFrame.from_records(
        Choice.objects.filter(question__questionnaire__study_id=study_id)
        .order_by("question_id", "position")
        .values_list("pk", "question_id", "text"),
        columns=["choice_id", "question_id", "text"],
    )
    questions = pd.DataFrame.from_records(
        Question.objects.filter(questionnaire__study_id=study_id)
        .order_by("-questionnaire__placement", "questionnaire__stage__position", "position")
        .values_list("pk", "questionnaire__name", "text", "kind"),
        columns=["question_id", "questionnaire", "question", "kind"],
    )
    by_question = choices.groupby("question_id")["text"].agg(list)
    questions["choices"] = [by_question.get(pk, []) for pk in questions["question_id"]]
    answers = pd.DataFrame.from_records(
        QuestionAnswer.objects.that_count()
        .filter(response__questionnaire__study_id=study_id)
        .order_by()
        .values_list(
            "response__questionnaire__name",
            "question__text",
            "response__annotator__group__name",
            "response_id",
            "choice__text",
            "scale",
        ),
        columns=["questionnaire", "question", "group", "response", "choice", "scale"],
    )
    tallies = pd.DataFrame.from_records(
        ScreeningTally.objects.filter(questionnaire__study_id=study_id, question__isnull=False)
        .order_by()
        .values_list("questionnaire__name", "question__text", "answer", "count"),
        columns=["questionnaire", "question", "answer", "count"],
    )
    names = dict(zip("choice:" + choices["choice_id"].astype(str), choices["text"], strict=True))
    scales = {f"scale:{v}": str(v) for v in range(1, 6)}
    tallies["answer"] = tallies["answer"].map(lambda key: names.get(key, scales.get(key, key)))
    return questions, answers, tallies


def questionnaire_order(*, study_id: int) -> list[dict]:
    """The study's questionnaires in the order annotators meet them, each with its
    questions in order, each choice question's choices in order, and how many people
    it screened out (the report's
    ``questionnaire_order``: stored as JSONB, the ``questionnaires`` block keeps no
    key order)."""
    people = dict(
        ScreeningTally.objects.filter(
            questionnaire__study_id=study_id, answer=ScreeningTally.PEOPLE
        ).values_list("questionnaire_id", "count")
    )
    questions = pd.DataFrame.from_records(
        Question.objects.filter(questionnaire__study_id=study_id)
        .order_by("position")
        .values_list("questionnaire_id", "text"),
        columns=["questionnaire_id", "text"],
    )
    texts = questions.groupby("questionnaire_id")["text"].agg(list)
    choices = pd.DataFrame.from_records(
        Choice.objects.filter(question__questionnaire__study_id=study_id)
        .order_by("position")
        .values_list("question__questionnaire_id", "question__text", "text"),
        columns=["questionnaire_id", "question", "text"],
    )
    by_question = choices.groupby(["questionnaire_id", "question"], sort=False)["text"].agg(list)
    return [
        {
            "name": name,
            "placement": placement,
            "stage": stage,
            "questions": texts.get(pk, []),
            "choices": {q: c for (qn, q), c in by_question.items() if qn == pk},
            "n_screened_out": people.get(pk, 0),
        }
        for pk, name, placement, stage in Questionnaire.objects.filter(study_id=study_id)
        .order_by("-placement", "stage__position", "name")
        .values_list("pk", "name", "placement", "stage__name")
    ]


def questionnaire_data(*, study_id: int) -> QuestionnaireData:
    """Everything the report's questionnaire blocks read."""
    questions, answers, tallies = questionnaire_frames(study_id=study_id)
    return QuestionnaireData(
        questions=questions,
        answers=answers,
        tallies=tallies,
        order=questionnaire_order(study_id=study_id),
    )
