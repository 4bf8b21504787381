"""The study's questionnaires and their answers as the report reads them (one query per
table, no per-row Python), beside :mod:`analysis.selectors.judgements`."""

import pandas as pd

from studies.models import Choice, Question, QuestionAnswer, Questionnaire, ScreeningTally

from ..report.questionnaires import QuestionnaireData


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
