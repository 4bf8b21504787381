"""Builds the JSON report of a study from the judgements DataFrame.

This first version reports the sizes a researcher checks before any statistics:
judgements, items, annotators and the coherent share per group and stage. The
agreement suite (BRIEF §5) extends this report under the same keys.
"""

import math

import pandas as pd


def _clean(value):
    """JSON has no NaN: undefined values become null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def report_build(*, frame: pd.DataFrame, study_slug: str, parameters: dict) -> dict:
    groups: dict = {}
    if not frame.empty:
        per_stage = (
            frame.groupby(["group", "stage_position", "stage"], sort=True)
            .agg(
                n_judgements=("judgement_id", "size"),
                n_items=("reflection_id", "nunique"),
                n_annotators=("annotator_id", "nunique"),
                coherent_rate=("coherent", "mean"),
            )
            .reset_index()
        )
        for row in per_stage.itertuples(index=False):
            stages = groups.setdefault(row.group, {"stages": {}})["stages"]
            stages[row.stage] = {
                "n_judgements": int(row.n_judgements),
                "n_items": int(row.n_items),
                "n_annotators": int(row.n_annotators),
                "coherent_rate": _clean(float(row.coherent_rate)),
            }
    return {
        "study": study_slug,
        "parameters": parameters,
        "n_judgements": len(frame),
        "groups": groups,
    }
