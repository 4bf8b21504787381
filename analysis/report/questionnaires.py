"""The report's questionnaire blocks, from the frames of
:func:`analysis.selectors.questionnaires.questionnaire_frames` (the statistics live in
:mod:`analysis.metrics.protocol.questionnaires`).

* ``questionnaires``: ``{questionnaire: {question: {group: entry}}}``; an entry
  is ``{"n", "counts"}`` for a choice question, ``{"n", "mean"}`` for a 1–5 scale,
  ``{"n"}`` for a text question (texts are counted, never listed);
* ``questionnaires_screened_out``: ``{questionnaire: {question: entry}}``, the same
  from the counts kept about people a screening answer ended (a block of its own,
  so no group name can clash with it);
* ``questionnaire_order``: the questionnaires in the order annotators meet them
  (``name``, ``placement``, ``stage``, ``questions`` in order, ``choices``: per
  choice question its choices in order, ``n_screened_out``: the people a screening
  answer ended), since JSONB keeps no key order.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import metrics


@dataclass(frozen=True)
class QuestionnaireData:
    questions: pd.DataFrame
    answers: pd.DataFrame
    tallies: pd.DataFrame
    order: list[dict]


def questionnaires_build(data: QuestionnaireData | None) -> dict:
    """The three blocks (empty without questionnaires)."""
    if data is None or data.questions.empty:
        return {"questionnaires": {}, "questionnaires_screened_out": {}, "questionnaire_order": []}
    return {
        "questionnaires": metrics.questionnaire_summary(
            questions=data.questions, answers=data.answers
        ),
        "questionnaires_screened_out": metrics.screened_out_summary(
            questions=data.questions, tallies=data.tallies
        ),
        "questionnaire_order": data.order,
    }
