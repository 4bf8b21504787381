"""What a Likert stage's pages show: the item panel's dimensions with the form's values
(``_likert.html``), and each answer's ratings as the review page reads them."""

from ..forms import CANNOT_JUDGE, CANNOT_JUDGE_PREFIX, RATING_PREFIX, AnswerForm
from ..models import Assignment, LikertRating


def likert_rows(form: AnswerForm, dimensions) -> list[dict]:
    """A Likert panel's dimensions with what the form holds for each (a saved answer,
    or the answer posted with its errors)."""
    rows = []
    for dimension in dimensions:
        field = RATING_PREFIX + dimension.name
        value = str(form[field].value() or "").strip()
        cannot_judge = value == CANNOT_JUDGE or bool(
            form[CANNOT_JUDGE_PREFIX + dimension.name].value()
        )
        low, high = dimension.scale_range
        labels = dimension.labels
        rows.append(
            {
                "name": dimension.name,
                "statement": dimension.statement,
                "field": field,
                "cannot_judge_field": CANNOT_JUDGE_PREFIX + dimension.name,
                "value": "" if cannot_judge else value,
                "cannot_judge": cannot_judge,
                "offers_cannot_judge": dimension.offers_cannot_judge,
                "slider": dimension.points is None,
                "points": [(str(n), label) for n, label in enumerate(labels, start=1)],
                "low": low,
                "high": high,
                "middle": (low + high) // 2,
                "low_label": labels[0],
                "high_label": labels[-1],
                "errors": form[field].errors,
            }
        )
    return rows


def likert_summaries(assignment: Assignment, dimensions) -> dict[int, str]:
    """Judgement id → its ratings in the dimensions' order ("fluency: 4 of 5 (good);
    warmth: cannot judge"), for the batch's answers, in one query."""
    given: dict[int, dict[int, tuple]] = {}
    rows = LikertRating.objects.filter(judgement__assignment=assignment).values_list(
        "judgement_id", "dimension_id", "value", "cannot_judge"
    )
    for judgement_id, dimension_id, value, cannot_judge in rows:
        given.setdefault(judgement_id, {})[dimension_id] = (value, cannot_judge)
    return {
        judgement_id: "; ".join(
            d.rating_text(*ratings[d.pk]) for d in dimensions if d.pk in ratings
        )
        for judgement_id, ratings in given.items()
    }
