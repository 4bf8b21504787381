"""The floor of the analysis benchmark, run as its own process like ``analyze``:
one query loading the same judgement rows into a DataFrame, then statsmodels'
Fleiss and Randolph kappas on the coherent label for each group × stage.

``python -m bench.analysis.floor SLUG`` prints one line per group × stage.
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


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    import django

    django.setup()
    from studies.models import Study

    study = Study.objects.get(slug=sys.argv[1])
    for (group, stage), (fleiss, randolph) in floor_kappas(study_id=study.pk).items():
        print(f"{group}\t{stage}\t{fleiss:.4f}\t{randolph:.4f}")


if __name__ == "__main__":
    main()
