"""Questionnaire answers summarised per question and annotator group, and the counts
kept about people screened out.

Per question and group: for a choice question ``{"n", "counts"}`` (``n``: the
respondents who answered it; ``counts``: how many chose each choice, every choice
listed, so a multiple-choice question's counts can add up to more than ``n``); for a
scale ``{"n", "mean"}``; for a text question ``{"n"}`` (how many wrote something:
texts are counted, never listed). ``screened_out_summary`` gives the same per
question from the counts kept about people a screening answer ended (no per-person
answers exist for them), apart from the groups, so no group name can clash with it.

Vectorised pandas; no Django.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._common import clean

CHOICE_KINDS = ("single", "multiple")


def _choice_entries(rows: pd.DataFrame, choices: dict) -> dict:
    """{(questionnaire, question, group): {"n", "counts"}} for choice questions."""
    n = rows.groupby(["questionnaire", "question", "group"])["response"].nunique()
    counts = rows.groupby(["questionnaire", "question", "group", "choice"])["response"].nunique()
    entries = {}
    for key, respondents in n.items():
        chosen = counts.loc[key]
        entries[key] = {
            "n": int(respondents),
            "counts": {c: int(chosen.get(c, 0)) for c in choices[key[:2]]},
        }
    return entries


def _scale_entries(rows: pd.DataFrame) -> dict:
    stats = rows.groupby(["questionnaire", "question", "group"])["scale"].agg(["size", "mean"])
    return {
        key: {"n": int(row["size"]), "mean": clean(float(row["mean"]))}
        for key, row in stats.iterrows()
    }


def _text_entries(rows: pd.DataFrame) -> dict:
    n = rows.groupby(["questionnaire", "question", "group"])["response"].nunique()
    return {key: {"n": int(value)} for key, value in n.items()}


def _screened_out_entries(tallies: pd.DataFrame, questions: pd.DataFrame) -> dict:
    """{(questionnaire, question): entry} from the counts (``answer``: a choice's text,
    a scale value as text, ``"text"`` or ``"answered"``)."""
    entries = {}
    if tallies.empty:
        return entries
    for row in questions.itertuples(index=False):
        mine = tallies.loc[
            (tallies["questionnaire"] == row.questionnaire) & (tallies["question"] == row.question)
        ]
        if mine.empty:
            continue
        counts = dict(zip(mine["answer"], mine["count"].astype(int), strict=True))
        n = int(counts.get("answered", 0))
        if row.kind in CHOICE_KINDS:
            entry = {"n": n, "counts": {c: int(counts.get(c, 0)) for c in row.choices}}
        elif row.kind == "scale":
            values = np.array([int(v) for v in range(1, 6)])
            weights = np.array([counts.get(str(v), 0) for v in values])
            mean = float(np.average(values, weights=weights)) if weights.sum() else None
            entry = {"n": n, "mean": mean}
        else:
            entry = {"n": n}
        entries[(row.questionnaire, row.question)] = entry
    return entries


def screened_out_summary(*, questions: pd.DataFrame, tallies: pd.DataFrame) -> dict:
    """``{questionnaire: {question: entry}}`` from the screened-out counts
    (``tallies``: ``questionnaire``, ``question``, ``answer``, ``count``; ``questions``
    as for ``questionnaire_summary``); only questions with counts."""
    result: dict = {}
    for (questionnaire, question), entry in _screened_out_entries(tallies, questions).items():
        result.setdefault(questionnaire, {})[question] = entry
    return result


def questionnaire_summary(*, questions: pd.DataFrame, answers: pd.DataFrame) -> dict:
    """``{questionnaire: {question: {group: entry}}}``.

    ``questions``: one row per question (``questionnaire``, ``question``, ``kind``,
    ``choices``: the choice texts in order); ``answers``: one row per stored answer
    (``questionnaire``, ``question``, ``group``, ``response``, ``choice`` text or
    missing, ``scale`` or missing; a text answer has neither). A question nobody answered has an empty dict."""
    result: dict = {}
    for row in questions.itertuples(index=False):
        result.setdefault(row.questionnaire, {})[row.question] = {}
    if not answers.empty:
        kinds = questions.set_index(["questionnaire", "question"])["kind"]
        kind = pd.Series(
            kinds.reindex(pd.MultiIndex.from_frame(answers[["questionnaire", "question"]])).values,
            index=answers.index,
        )
        choices = {
            (r.questionnaire, r.question): list(r.choices)
            for r in questions.itertuples(index=False)
        }
        entries = {
            **_choice_entries(answers.loc[kind.isin(CHOICE_KINDS)], choices),
            **_scale_entries(answers.loc[kind == "scale"]),
            **_text_entries(answers.loc[kind == "text"]),
        }
        for (questionnaire, question, group), entry in sorted(entries.items(), key=str):
            result[questionnaire][question][str(group)] = entry
    return result
