"""A category a stage did not offer is null there, not "never chosen": worked by hand
on two stages, the second offering a subset (``malformed`` and ``generic``, not
``parroting``); every rendering says "not offered"; the selector reads the rule."""

import csv
import io

import pandas as pd
import pytest

from analysis.report.build import Category, report_build
from analysis.report.descriptions import generation_categories_null
from analysis.report.text import report_summary_lines
from analysis.report.tidy_csv import table_csv
from analysis.selectors.judgements import stage_offered_slugs
from analysis.tables import report_tables
from analysis.tables.model import NOT_OFFERED
from studies.protocol import NO_ANSWER_FREE_TEXT

CATEGORIES = [
    Category("malformed", "Malformed", 0),
    Category("parroting", "Parroting", 1),
    Category("generic", "Generic", 2),
]
SLUGS = [c.slug for c in CATEGORIES]
BIT = {c.slug: c.bit for c in CATEGORIES}
STAGE_1, STAGE_2 = "Stage 1", "Stage 2"
OFFERED = {STAGE_1: SLUGS, STAGE_2: ["malformed", "generic"]}

# (stage, reflection, source) -> each rater's answer: None for Yes, else (chosen, most
# evident). Item 1 is the human reflection of both stages.
ANSWERS = {
    (STAGE_1, 1, "Human"): [None, None, None],
    (STAGE_1, 5, "S"): [(["parroting"], "parroting")] * 3,
    (STAGE_2, 1, "Human"): [None, None, None],
    (STAGE_2, 2, "S"): [
        (["malformed"], "malformed"),
        (["malformed", "generic"], "malformed"),
        (["malformed"], "malformed"),
    ],
    (STAGE_2, 3, "S"): [(["generic"], "generic"), None, (["generic"], "generic")],
    (STAGE_2, 4, "S"): [
        (["malformed"], "malformed"),
        (["generic"], "generic"),
        (["malformed"], "malformed"),
    ],
}


def frame() -> pd.DataFrame:
    rows = []
    for (stage, rid, source), answers in ANSWERS.items():
        position = 1 if stage == STAGE_1 else 2
        for rater, answer in enumerate(answers):
            chosen, mee = answer or ([], None)
            rows.append(
                {
                    "judgement_id": len(rows) + 1,
                    "stage": stage,
                    "stage_position": position,
                    "group": "G",
                    "annotator": f"G {rater + 1}",
                    "reflection_id": rid,
                    "dialogue_id": f"d{rid}",
                    "source": source,
                    "kind": "human" if source == "Human" else "synthetic",
                    "coherent": answer is None,
                    "error_flags": sum(1 << BIT[slug] for slug in chosen),
                    "most_evident_bit": None if mee is None else BIT[mee],
                    "empathy": 4 if answer is None else None,
                    "is_recurring": position == 2 and rid == 1,
                    "assignment_status": "submitted",
                    "assignment_id": 10 * position + rater,
                    "seconds_spent": 5.0,
                    "described": False,
                }
            )
    return pd.DataFrame(rows)


def build(offered=None) -> dict:
    return report_build(
        frame=frame(),
        study_slug="offered",
        parameters={"bootstrap_resamples": 0, "seed": 0},
        categories=CATEGORIES,
        mee_merge={},
        offered_categories=offered,
    )


@pytest.fixture(scope="module")
def report() -> dict:
    return build(OFFERED)


def test_a_category_the_stage_did_not_offer_is_null_and_the_offered_are_worked(report):
    assert report["stage_categories"] == OFFERED
    cell = report["groups"]["G"]["stages"][STAGE_2]
    # Synthetic: 9 judgements; one Yes; a No is split among its categories.
    # malformed 1 + .5 + 1 (item 2) + 1 + 1 (item 4); generic .5 + 1 + 1 + 1.
    assert cell["label_distribution"]["synthetic"] == pytest.approx(
        {
            "coherent": 1 / 9,
            "malformed": 4.5 / 9,
            "parroting": None,
            "generic": 3.5 / 9,
            "incoherent_unspecified": 0.0,
        }
    )
    # The human reflection, all Yes: 0 for the offered categories, null for the other.
    human = cell["label_distribution"]["Human"]
    assert (human["malformed"], human["parroting"], human["generic"]) == (0.0, None, 0.0)
    # Majority agreement: malformed flagged on items 2 (3 of 3) and 4 (2 of 3); generic
    # on 2 (1 of 3), 3 (2 of 3), 4 (1 of 3).
    assert cell["error_categories"] == {
        "malformed": {"majority_agreement": 1.0, "n_items_flagged": 2},
        "parroting": {"majority_agreement": None, "n_items_flagged": None},
        "generic": {"majority_agreement": pytest.approx(1 / 3), "n_items_flagged": 3},
    }
    # Most evident error over items 2 (M M M) and 4 (M G M), the offered two only:
    # observed agreement (1 + 1/3) / 2 = 2/3; Randolph's kappa with q = 2 is
    # (2/3 - 1/2) / (1 - 1/2) = 1/3 (counting the third category would give 1/2).
    raw = cell["most_evident_error"]["raw"]
    assert raw["categories"] == ["malformed", "generic"]
    assert raw["n_items"] == 2
    assert raw["randolph_kappa"] == pytest.approx(1 / 3)
    # Stage 1 offered every category: parroting computed as always.
    first = report["groups"]["G"]["stages"][STAGE_1]
    assert first["error_categories"]["parroting"] == {
        "majority_agreement": 1.0,
        "n_items_flagged": 1,
    }
    assert first["label_distribution"]["S"]["parroting"] == 1.0
    assert first["label_distribution"]["S"]["generic"] == 0.0


def test_the_offered_categories_are_computed_as_without_a_subset(report):
    everything = build()
    assert everything["stage_categories"] == {STAGE_1: SLUGS, STAGE_2: SLUGS}
    before = everything["groups"]["G"]["stages"][STAGE_2]
    after = report["groups"]["G"]["stages"][STAGE_2]
    # What this guards against: the category nobody could choose read as never chosen.
    assert before["label_distribution"]["synthetic"]["parroting"] == 0.0
    assert before["error_categories"]["parroting"]["n_items_flagged"] == 0
    for slug in ("malformed", "generic"):
        assert after["error_categories"][slug] == before["error_categories"][slug]
        for row, shares in after["label_distribution"].items():
            assert shares[slug] == before["label_distribution"][row][slug]
    assert before["most_evident_error"]["raw"]["randolph_kappa"] == pytest.approx(1 / 2)
    assert everything["groups"]["G"]["stages"][STAGE_1] == report["groups"]["G"]["stages"][STAGE_1]


def test_generation_settings_null_the_shares_of_the_categories_not_offered():
    entry = {
        "n_items": 5,
        "coherent_rate": 0.5,
        "label_distribution": {"coherent": 0.5, "malformed": 0.25, "parroting": 0.0,
                               "generic": 0.25, "incoherent_unspecified": 0.0},
        "majority_mee": {"malformed": 0.5, "parroting": 0.0, "generic": 0.5, "no_majority": 0.0},
    }  # fmt: skip
    settings = {"G": {STAGE_1: {"model": {"m": entry}}, STAGE_2: {"model": {"m": entry}}}}
    nulled = generation_categories_null(settings, SLUGS, {**OFFERED, "Free": []})
    assert nulled["G"][STAGE_1] == settings["G"][STAGE_1]
    second = nulled["G"][STAGE_2]["model"]["m"]
    assert second["label_distribution"] == {**entry["label_distribution"], "parroting": None}
    assert second["majority_mee"] == {**entry["majority_mee"], "parroting": None}
    assert second["coherent_rate"] == 0.5
    free = generation_categories_null({"G": {"Free": {"model": {"m": entry}}}}, SLUGS, {"Free": []})
    assert set(free["G"]["Free"]["model"]["m"]["majority_mee"].values()) == {None}


def test_tables_csv_and_text_say_not_offered(report):
    tables = {table.slug: table for table in report_tables(report)}
    majority = tables["majority"]
    (row,) = [r for r in majority.records() if r.keys["stage"] == STAGE_2]
    assert row.value("majority_agreement", "parroting") is None
    assert row.value("n_items_flagged", "parroting") is None
    assert row.value("majority_agreement", "generic") == pytest.approx(1 / 3)
    texts = {
        (cells[1].text, column.label): cell.text
        for cells in majority.rows
        for column, cell in zip(majority.columns, cells, strict=True)
    }
    assert texts[(STAGE_2, "Parroting")] == NOT_OFFERED
    assert texts[(STAGE_1, "Parroting")].startswith("1.00")
    assert texts[(STAGE_2, "Generic")].startswith("0.33")
    shares = tables["label-distribution"]
    shown = [
        cell.text
        for cells in shares.rows
        if cells[1].text == STAGE_2
        for column, cell in zip(shares.columns, cells, strict=True)
        if column.label == "Parroting"
    ]
    assert shown and set(shown) == {NOT_OFFERED}
    # The CSV writes the raw value: empty.
    rows = list(csv.DictReader(io.StringIO("".join(table_csv(majority)))))
    (cell,) = [
        r
        for r in rows
        if (r["stage"], r["statistic"], r.get("label"))
        == (STAGE_2, "majority_agreement", "parroting")
    ]
    assert cell["value"] == ""
    text = "\n".join(report_summary_lines(report))
    assert NOT_OFFERED in text


@pytest.mark.django_db
def test_the_selector_reads_each_stage_s_offered_categories(study):
    first, second = study.stages.order_by("position")[:2]
    kept = study.categories.exclude(catches_attention_check=True).order_by("order")[:1]
    second.categories.set(kept)
    catching = study.categories.get(catches_attention_check=True)
    offered = stage_offered_slugs(study_id=study.pk)
    assert offered[first.name] == [c.slug for c in study.categories.all()]
    assert set(offered[second.name]) == {kept[0].slug, catching.slug}
    type(first).objects.filter(pk=first.pk).update(no_answer=NO_ANSWER_FREE_TEXT)
    assert stage_offered_slugs(study_id=study.pk)[first.name] == []
