"""What pairwise and ranking stages' pages show: a pair's two candidates on the sides the
annotator's order gives them (``_pair.html``), a ranking's candidates in the order the
form holds (``_ranking.html``), and both as the review page reads them."""

from django.urls import reverse

from ..forms import RANK_PREFIX, RankingForm
from ..models import Assignment, Judgement, Reflection
from ..protocol import CHOICE_A, CHOICE_B, CHOICE_TIE

#: A pairwise answer as the review page says it.
PAIR_SUMMARY = {CHOICE_A: "A is better", CHOICE_B: "B is better", CHOICE_TIE: "Equally good"}


def pair_shown(entry: list, text: str, opponent_text: str) -> dict:
    """A pair as shown: ``a`` on the left, ``b`` on the right (``entry``: the order's
    ``[first, second, swapped]``; the texts: the first's and the second's)."""
    left, right = (opponent_text, text) if entry[2] else (text, opponent_text)
    return {"a": left, "b": right}


def ranking_rows(form: RankingForm, texts: dict[int, str]) -> list[dict]:
    """The candidates of a ranking with the rank the form holds (saved, or posted with
    its errors), best first; candidates without one keep the annotator's order, after
    the ranked ones; each marked as tied with the one above it."""
    rows = []
    for index, rid in enumerate(form.candidates):
        field = f"{RANK_PREFIX}{rid}"
        value = str(form[field].value() or "").strip()
        rank = int(value) if value.isdigit() else None
        rows.append(
            {
                "id": rid,
                "text": texts[rid],
                "field": field,
                "value": value,
                "sort": (rank is None, rank or 0, index),
                "errors": form[field].errors,
            }
        )
    rows.sort(key=lambda row: row["sort"])
    for above, row in zip([None, *rows], rows, strict=False):
        row["tied"] = bool(above and row["value"] and row["value"] == above["value"])
    return rows


def review_rows(assignment: Assignment, settings, slug: str) -> list[dict] | None:
    """The review page's rows for a pairwise stage (one per pair, as shown) or a
    ranking stage (the candidates, best first); None for other stages."""
    if not (settings.compares_pairs or settings.ranks_candidates):
        return None
    judgements = {j.key: j for j in Judgement.objects.filter(assignment=assignment)}
    ids = {
        rid
        for entry in assignment.order
        for rid in (entry[:2] if settings.compares_pairs else [entry])
    }
    texts = dict(Reflection.objects.filter(pk__in=ids).values_list("id", "text"))

    def url(number: int) -> str:
        return reverse("studies:item", args=[slug, assignment.pk, number]) + "?next=review"

    rows = []
    if settings.compares_pairs:
        for number, entry in enumerate(assignment.order, start=1):
            j = judgements.get((entry[0], entry[1]))
            pair = pair_shown(entry, texts[entry[0]], texts[entry[1]])
            rows.append(
                {
                    "number": number,
                    "pair": pair,
                    "summary": PAIR_SUMMARY[j.choice] if j is not None else None,
                    "description": j.reason if j is not None else "",
                    "description_label": "Your reason",
                    "url": url(number),
                }
            )
        return rows
    ranked = sorted(
        assignment.order,
        key=lambda rid: (
            judgements.get((rid, None)) is None,
            getattr(judgements.get((rid, None)), "rank", 0),
        ),
    )
    for rid in ranked:
        j = judgements.get((rid, None))
        rows.append(
            {
                "number": 1,
                "text": texts[rid],
                "summary": f"Rank {j.rank}" if j is not None else None,
                "description": "",
                "url": url(1),
            }
        )
    return rows
