"""The floor of the analysis benchmark, run as its own process like ``analyze``:
one query loading the same judgement rows into a DataFrame, then statsmodels'
Fleiss and Randolph kappas on the coherent label for each group × stage; for a
Likert study (``--likert``) one query of its rating rows, then the mean per group,
stage, system and dimension; for a pairwise study (``--pairwise``) one query of its
answers, then the wins, losses and ties per group, stage and pair of systems.

``python -m bench.analysis.floor SLUG [--likert | --pairwise]`` prints one line per
cell.
"""

import os
import sys


def floor_kappas(*, study_id: int) -> dict[tuple[str, str], tuple[float, float]]:
    import pandas as pd
    from statsmodels.stats.inter_rater import fleiss_kappa

    from studies.models import Assignment, Judgement, Reflection

    rows = (
        Judgement.objects.filter(
            assignment__batch__stage__study_id=study_id,
            assignment__status=Assignment.Status.SUBMITTED,
        )
        .exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
        .order_by()
        .values_list(
            "assignment__annotator__group__name",
            "assignment__batch__stage__name",
            "reflection_id",
            "coherent",
        )
    )
    frame = pd.DataFrame.from_records(
        rows.iterator(chunk_size=20_000), columns=["group", "stage", "item", "coherent"]
    )
    result = {}
    for (group, stage), cell in frame.groupby(["group", "stage"], sort=True):
        counts = pd.crosstab(cell["item"], cell["coherent"]).to_numpy()
        result[(group, stage)] = (
            float(fleiss_kappa(counts, method="fleiss")),
            float(fleiss_kappa(counts, method="randolph")),
        )
    return result


def floor_likert_means(*, study_id: int) -> dict[tuple, float]:
    """A Likert study's floor: one query of the same rating rows (of submitted answers,
    no attention checks) into a DataFrame, then the mean per group, stage, system and
    dimension ("cannot judge" left out)."""
    import pandas as pd

    from studies.models import Assignment, LikertRating, Reflection

    rows = (
        LikertRating.objects.filter(
            judgement__assignment__stage__study_id=study_id,
            judgement__assignment__status=Assignment.Status.SUBMITTED,
        )
        .exclude(judgement__reflection__kind=Reflection.Kind.ATTENTION_CHECK)
        .order_by()
        .values_list(
            "judgement__assignment__group__name",
            "judgement__assignment__stage__name",
            "judgement__reflection__source",
            "dimension__name",
            "judgement__reflection_id",
            "value",
            "cannot_judge",
        )
    )
    frame = pd.DataFrame.from_records(
        rows.iterator(chunk_size=20_000),
        columns=["group", "stage", "source", "dimension", "item", "value", "cannot_judge"],
    ).astype({"value": float})
    judged = frame[~frame["cannot_judge"]]
    means = judged.groupby(["group", "stage", "source", "dimension"], sort=True)["value"].mean()
    return means.to_dict()


def floor_pairwise_counts(*, study_id: int) -> dict[tuple, tuple[int, int, int]]:
    """A pairwise study's floor: one query of the same answers (of submitted
    assignments, no attention pair) into a DataFrame, then per group, stage and pair of
    systems (in name order) a's wins, b's wins and the ties."""
    import numpy as np
    import pandas as pd

    from studies.models import Assignment, Judgement, Reflection

    rows = (
        Judgement.objects.filter(
            assignment__stage__study_id=study_id,
            assignment__status=Assignment.Status.SUBMITTED,
            opponent__isnull=False,
        )
        .exclude(reflection__kind=Reflection.Kind.ATTENTION_CHECK)
        .order_by()
        .values_list(
            "assignment__group__name",
            "assignment__stage__name",
            "reflection__source",
            "opponent__source",
            "choice",
            "shown_swapped",
        )
    )
    frame = pd.DataFrame.from_records(
        rows.iterator(chunk_size=20_000),
        columns=["group", "stage", "first", "second", "choice", "swapped"],
    )
    first_is_a = frame["first"] < frame["second"]
    second_won = (frame["choice"] == "A") == frame["swapped"]
    tie = frame["choice"] == "Tie"
    a_won = np.where(first_is_a, ~second_won, second_won) & ~tie
    frame = frame.assign(
        a=np.where(first_is_a, frame["first"], frame["second"]),
        b=np.where(first_is_a, frame["second"], frame["first"]),
        win=a_won,
        loss=~a_won & ~tie,
        tie=tie,
    )
    counts = frame.groupby(["group", "stage", "a", "b"], sort=True)[["win", "loss", "tie"]].sum()
    return {
        key: tuple(int(v) for v in row)
        for key, row in zip(counts.index, counts.to_numpy(), strict=True)
    }


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    import django

    django.setup()
    from studies.models import Study

    study = Study.objects.get(slug=sys.argv[1])
    if "--pairwise" in sys.argv[2:]:
        for key, counts in floor_pairwise_counts(study_id=study.pk).items():
            print("\t".join(map(str, (*key, *counts))))
        return
    if "--likert" in sys.argv[2:]:
        for key, mean in floor_likert_means(study_id=study.pk).items():
            print("\t".join(map(str, key)) + f"\t{mean:.4f}")
        return
    for (group, stage), (fleiss, randolph) in floor_kappas(study_id=study.pk).items():
        print(f"{group}\t{stage}\t{fleiss:.4f}\t{randolph:.4f}")


if __name__ == "__main__":
    main()
