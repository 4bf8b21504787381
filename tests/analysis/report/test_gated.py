"""The report's ``gated`` block and tables on hand-made ratings (the gated study of
``tests.studies.gate_fixtures``): three laypeople, two contexts; the first context's
items got 3, 2 and 1 Yes of 3, the second's none."""

from datetime import timedelta

from analysis.report.gates import gates_build
from analysis.selectors.gates import gate_data
from analysis.services import analysis_run_compute
from analysis.tables import report_tables
from studies.models import Reflection
from studies.services import (
    Answer,
    assignment_claim,
    assignment_reject,
    assignment_submit,
    judgement_record,
)
from tests.studies.gate_fixtures import T0, batch_of, gated, items_of, lay_judge  # noqa: F401
from tests.studies.services.test_assignments import consented


def expert_answers(expert, yes_for, now):
    """The expert claims their next batch and answers Yes to the items in ``yes_for``
    (by text), No to the rest; the attention check No, off-topic."""
    assignment = assignment_claim(annotator=expert, now=now)
    for reflection in items_of(assignment.batch):
        if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
            answer = Answer(False, frozenset({"off_topic"}))
        elif reflection.text in yes_for:
            answer = Answer(True, empathy=4)
        else:
            answer = Answer(False, frozenset({"parroting"}))
        judgement_record(assignment=assignment, reflection=reflection, answer=answer, now=now)
    return assignment_submit(assignment=assignment, now=now)


def test_the_gated_block_counts_decisions_savings_strengths_and_agreement(gated):
    laypeople = consented(gated, "Layperson", count=3)
    lay = [lay_judge(p, batch_of(gated, 1, "dlg-1"), n) for n, p in enumerate(laypeople)]
    human = items_of(batch_of(gated, 1, "dlg-1"))[0]
    (expert,) = consented(gated, "Expert")
    # Good reflection: the human reflection (3 of 3 Yes) and c1 (2 of 3); the expert
    # finds the human reflection good, c1 not.
    expert_answers(expert, {human.text}, T0 + timedelta(hours=1))
    assignment_reject(assignment=lay[0], reason="Rushed through.")

    report = gates_build(gate_data(study_id=gated.pk))
    good, adjudication = report["stages"]
    assert (good["stage"], good["rule"], good["deciding_group"]) == (
        "Good reflection",
        "majority_coherent",
        "Layperson",
    )
    # Six items (three per context); dlg-1's three decided (two passed), dlg-2's
    # undecided; every decision rests on the rejected batch too.
    assert {n: good[n] for n in ("items", "passed", "not_passed", "undecided", "flagged")} == {
        "items": 6,
        "passed": 2,
        "not_passed": 1,
        "undecided": 3,
        "flagged": 3,
    }
    assert good["judgements_saved"] == 1 * 1 * 1  # one item × k = 1 × the experts
    assert good["by_strength"] == [
        {"group": "Expert", "strength": "2 of 3", "n_items": 1, "n_judgements": 1, "yes_rate": 0.0},
        {"group": "Expert", "strength": "3 of 3", "n_items": 1, "n_judgements": 1, "yes_rate": 1.0},
    ]
    # The lay majority said coherent on both; the expert agrees on the human one only.
    assert good["agreement"] == [{"group": "Expert", "n_items": 2, "agreement": 0.5}]
    assert adjudication["passed"] == 2 and adjudication["by_strength"] == []
    assert adjudication["judgements_saved"] == 1  # the human reflection: unanimous

    tables = {t.slug: t for t in report_tables({"gated": report})}
    assert {"gated", "gated-answers"} <= set(tables)


def test_a_run_of_the_analysis_holds_the_gated_block(gated):
    laypeople = consented(gated, "Layperson", count=3)
    for n, p in enumerate(laypeople):
        lay_judge(p, batch_of(gated, 1, "dlg-1"), n)
    run = analysis_run_compute(study=gated)
    assert run.status == "done", run.error
    stages = run.result["gated"]["stages"]
    assert [(s["stage"], s["passed"], s["undecided"]) for s in stages] == [
        ("Good reflection", 2, 3),
        ("Adjudication", 2, 3),
    ]


def test_the_adjudicated_label_stands_beside_the_deciding_majority(gated):
    laypeople = consented(gated, "Layperson", count=3)
    for n, p in enumerate(laypeople):
        lay_judge(p, batch_of(gated, 1, "dlg-1"), n)
        lay_judge(p, batch_of(gated, 1, "dlg-2"), n)  # no Yes: no item passes
    human, c1, c2 = items_of(batch_of(gated, 1, "dlg-1"))[:3]  # 3, 2 and 1 Yes of 3
    (expert,) = consented(gated, "Expert")
    expert_answers(expert, {human.text}, T0 + timedelta(hours=1))  # good reflection
    expert_answers(expert, {c2.text}, T0 + timedelta(hours=2))  # adjudication: c1, c2

    good, adjudication = gates_build(gate_data(study_id=gated.pk))["stages"]

    def rows(entry):
        return {
            row["reflection"]: (row["deciding"], row["other"], row["group"], row["label"])
            for row in entry["adjudicated"]
        }

    assert rows(adjudication) == {
        c1.pk: ("coherent (2 of 3 Yes)", None, "Expert", "incoherent"),
        c2.pk: ("incoherent (1 of 3 Yes)", None, "Expert", "coherent"),
    }
    assert rows(good) == {
        human.pk: ("coherent (3 of 3 Yes)", None, "Expert", "coherent"),
        c1.pk: ("coherent (2 of 3 Yes)", None, "Expert", "incoherent"),
    }
    row = next(r for r in adjudication["adjudicated"] if r["reflection"] == c2.pk)
    assert (row["dialogue"], row["source"], row["n_answers"], row["yes"]) == (
        "dlg-1",
        c2.source,
        1,
        1,
    )
    order = [(r["dialogue"], r["source"], r["reflection"]) for r in adjudication["adjudicated"]]
    assert order == sorted(order)

    table = {t.slug: t for t in report_tables({"gated": {"stages": [good, adjudication]}})}[
        "gated-items"
    ]
    texts = [[cell.text for cell in row] for row in table.rows]
    assert [
        "Adjudication",
        f"dlg-1 · {c2.source} · #{c2.pk}",
        "incoherent (1 of 3 Yes)",
        "Expert",
        "coherent",
        "1",
        "1",
    ] in texts
    assert len(texts) == 4
