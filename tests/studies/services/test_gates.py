"""Gated stages on hand-made ratings: three laypeople judge two contexts in the first
stage; experts judge "Is this a good reflection?" on the items the lay majority found
coherent, and adjudicate coherence on the items whose lay raters were not unanimous.
Items enter as soon as decided, never leave; a rejected deciding batch leaves the
decision standing (flagged); a rule changes only before the gated stage has work."""

import json
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from analysis.report.gates import gates_build
from analysis.selectors.gates import gate_data
from studies.datafiles.materials import MaterialsImportError, materials_import
from studies.errors import ErrorCode
from studies.models import (
    Assignment,
    Batch,
    GateDecision,
    Reflection,
    StageGate,
)
from studies.protocol import (
    GATE_LIKERT_MEAN_AT_LEAST,
    GATE_MAJORITIES_DIFFER,
    GATE_MAJORITY_CATEGORY,
    GATE_MAJORITY_COHERENT,
    GATE_MAJORITY_INCOHERENT,
    GATE_NOT_UNANIMOUS,
    GATE_SCORE_AT_LEAST,
    GateVotes,
    gate_passes,
)
from studies.selectors import StageStatus, annotator_stage_states
from studies.selectors.gates import gate_flagged_decisions, gate_pending_stage_ids
from studies.services import (
    Answer,
    NoWorkAvailable,
    assignment_claim,
    assignment_create,
    assignment_reject,
    assignment_submit,
    judgement_record,
)
from studies.services.gates import (
    gate_change_validate,
    gate_decisions_make,
    gate_rule_changed,
    gate_validate,
)
from tests.analysis.report.test_gated import expert_answers
from tests.conftest import materials_doc
from tests.studies.gate_fixtures import T0, batch_of, gated, items_of, lay_judge  # noqa: F401
from tests.studies.likert_fixtures import make_likert
from tests.studies.services.test_assignments import consented


def test_items_enter_the_gated_stages_as_soon_as_their_context_is_decided(
    gated, django_assert_num_queries
):
    laypeople = consented(gated, "Layperson", count=3)
    (expert,) = consented(gated, "Expert")
    first = gated.stages.get(position=1)
    dlg1 = batch_of(gated, 1, "dlg-1")
    lay_judge(laypeople[0], dlg1, 0)
    lay_judge(laypeople[1], dlg1, 1)
    assert not GateDecision.objects.exists()  # two of three ratings: undecided
    states = annotator_stage_states(annotator=expert, now=T0)
    assert [s.status for s in states] == [
        StageStatus.SKIPPED,
        StageStatus.AWAITING_ITEMS,
        StageStatus.LOCKED,
    ]
    with pytest.raises(NoWorkAvailable) as waiting:
        assignment_claim(annotator=expert, now=T0)
    assert waiting.value.code == ErrorCode.STAGE_AWAITING_ITEMS

    gated_stages = {s.pk for s in gated.stages.filter(position__gt=1)}
    with django_assert_num_queries(1):
        assert gate_pending_stage_ids(study_id=gated.pk) == gated_stages
    lay_judge(laypeople[2], dlg1, 2)  # the third rating: dlg-1 is decided at once
    human, c1, c2 = items_of(dlg1)[:3]
    good, adjudication = (StageGate.objects.get(stage__position=p) for p in (2, 3))
    assert {(d.reflection_id, d.passed) for d in good.decisions.all()} == {
        (human.pk, True),
        (c1.pk, True),
        (c2.pk, False),
    }
    assert {(d.reflection_id, d.passed) for d in adjudication.decisions.all()} == {
        (human.pk, False),
        (c1.pk, True),
        (c2.pk, True),
    }
    decision = good.decisions.get(reflection=c1)
    assert decision.summary == {
        "groups": [
            {"group": laypeople[0].group_id, "raters": 3, "yes": 2, "flagged": 0, "mean": None}
        ]
    }
    lay_judgements = first.assignments.filter(batch=dlg1).values_list("judgements", flat=True)
    assert set(decision.judgements) <= set(lay_judgements)
    assert len(decision.judgements) == 3
    # The gated batches: the passed items in the lay batch's order, then its check.
    check = items_of(dlg1)[3]
    assert check.kind == Reflection.Kind.ATTENTION_CHECK
    assert items_of(batch_of(gated, 2, "dlg-1")) == [human, c1, check]
    assert items_of(batch_of(gated, 3, "dlg-1")) == [c1, c2, check]
    assert batch_of(gated, 2, "dlg-2") is None

    # The expert starts the good-reflection stage with the first context's batch.
    assignment = assignment_claim(annotator=expert, now=T0 + timedelta(minutes=10))
    assert (assignment.stage.position, assignment.batch.context.external_id) == (2, "dlg-1")


def test_a_context_with_too_few_passed_items_gets_no_batch_and_the_stage_ends(
    gated, django_assert_num_queries
):
    laypeople = consented(gated, "Layperson", count=3)
    (expert,) = consented(gated, "Expert")
    for context in ("dlg-1", "dlg-2"):
        for number, person in enumerate(laypeople):
            lay_judge(person, batch_of(gated, 1, context), number)
    assert GateDecision.objects.filter(gate__stage__position=2).count() == 6
    assert batch_of(gated, 2, "dlg-2") is None  # every item failed
    # Every item decided: nothing is pending, and the job looks at no gate (one query).
    assert gate_pending_stage_ids(study_id=gated.pk) == set()
    with django_assert_num_queries(1):
        assert gate_decisions_make(study_id=gated.pk) == 0
    assert batch_of(gated, 3, "dlg-2") is None  # unanimous: nothing to adjudicate
    # The expert does the one batch of each gated stage, then has finished: every
    # context is decided and no batch is left (though m is 2).
    later = T0 + timedelta(hours=1)
    for position in (2, 3):
        assignment = assignment_claim(annotator=expert, now=later)
        assert assignment.stage.position == position
        for reflection in items_of(assignment.batch):
            if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
                answer = Answer(False, frozenset({"off_topic"}))
            else:
                answer = Answer(True, empathy=4)
            judgement_record(assignment=assignment, reflection=reflection, answer=answer, now=later)
        assignment_submit(assignment=assignment, now=later)
    states = annotator_stage_states(annotator=expert, now=later)
    assert [s.status for s in states] == [StageStatus.SKIPPED, StageStatus.DONE, StageStatus.DONE]


def test_a_decision_never_changes_and_a_rejected_deciding_batch_is_flagged(gated):
    laypeople = consented(gated, "Layperson", count=3)
    dlg1 = batch_of(gated, 1, "dlg-1")
    assignments = [lay_judge(p, dlg1, n) for n, p in enumerate(laypeople)]
    good = StageGate.objects.get(stage__position=2)
    before = list(good.decisions.order_by("pk").values_list("reflection_id", "passed"))
    assert not gate_flagged_decisions(good)
    assignment_reject(assignment=assignments[0], reason="Rushed through.")
    gate_decisions_make(study_id=gated.pk)
    assert list(good.decisions.order_by("pk").values_list("reflection_id", "passed")) == before
    assert set(gate_flagged_decisions(good)) == set(good.decisions.values_list("pk", flat=True))
    with pytest.raises(IntegrityError, match="a gate decision never changes"), transaction.atomic():
        GateDecision.objects.filter(gate=good).update(passed=False)


def test_a_rule_change_decides_afresh_before_work_and_is_refused_after(gated):
    laypeople = consented(gated, "Layperson", count=3)
    dlg1 = batch_of(gated, 1, "dlg-1")
    for number, person in enumerate(laypeople):
        lay_judge(person, dlg1, number)
    good = StageGate.objects.get(stage__position=2)
    c2 = items_of(dlg1)[2]
    good.rule = GATE_MAJORITY_INCOHERENT
    good.save()
    gate_rule_changed(gate=good)
    assert set(good.decisions.filter(passed=True).values_list("reflection_id", flat=True)) == {
        c2.pk
    }
    assert items_of(batch_of(gated, 2, "dlg-1"))[:1] == [c2]
    (expert,) = consented(gated, "Expert")
    assignment_claim(annotator=expert, now=T0 + timedelta(minutes=10))
    with pytest.raises(ValidationError, match="its decisions stand"):
        gate_change_validate(gate=good, changed=["rule"])
    with pytest.raises(ValidationError, match="its decisions stand"):
        gate_rule_changed(gate=good)
    with pytest.raises(IntegrityError, match="stays once its stage has work"), transaction.atomic():
        good.decisions.all().delete()
    assert good.decisions.count() == 3


def test_the_majority_category_rule_reads_the_chosen_categories(gated):
    """Items a lay majority flagged as off-topic go to the gated stage."""
    good = StageGate.objects.get(stage__position=2)
    good.rule, good.category = GATE_MAJORITY_CATEGORY, gated.categories.get(slug="parroting")
    good.save()
    laypeople = consented(gated, "Layperson", count=3)
    dlg2 = batch_of(gated, 1, "dlg-2")
    lay_judge(laypeople[0], dlg2, 0, category="parroting")
    lay_judge(laypeople[1], dlg2, 1, category="parroting")
    lay_judge(laypeople[2], dlg2, 2, category="malformed")
    assert set(good.decisions.values_list("passed", flat=True)) == {True}
    assert {d["flagged"] for d in good.decisions.first().summary["groups"]} == {2}


@pytest.mark.parametrize(
    ("rule", "votes", "options", "passed"),
    [
        (GATE_MAJORITY_COHERENT, GateVotes(3, yes=2), {}, True),
        (GATE_MAJORITY_COHERENT, GateVotes(3, yes=2), {"min_votes": 3}, False),
        (GATE_MAJORITY_COHERENT, GateVotes(4, yes=2), {}, False),  # a tie: no majority
        (GATE_MAJORITY_COHERENT, GateVotes(1, yes=1), {}, True),
        (GATE_MAJORITY_INCOHERENT, GateVotes(3, yes=1), {}, True),
        (GATE_MAJORITY_INCOHERENT, GateVotes(3, yes=2), {}, False),
        (GATE_MAJORITY_CATEGORY, GateVotes(3, yes=0, flagged=2), {}, True),
        (GATE_MAJORITY_CATEGORY, GateVotes(3, yes=0, flagged=1), {}, False),
        (GATE_SCORE_AT_LEAST, GateVotes(3, yes=2), {"threshold": 2}, True),
        (GATE_SCORE_AT_LEAST, GateVotes(3, yes=1), {"threshold": 2}, False),
        (GATE_NOT_UNANIMOUS, GateVotes(3, yes=1), {}, True),
        (GATE_NOT_UNANIMOUS, GateVotes(3, yes=3), {}, False),
        (GATE_NOT_UNANIMOUS, GateVotes(3, yes=0), {}, False),
        (GATE_MAJORITIES_DIFFER, GateVotes(3, yes=2), {"other": GateVotes(3, yes=1)}, True),
        (GATE_MAJORITIES_DIFFER, GateVotes(3, yes=2), {"other": GateVotes(2, yes=2)}, False),
        (GATE_MAJORITIES_DIFFER, GateVotes(3, yes=2), {"other": GateVotes(2, yes=1)}, True),
        (GATE_LIKERT_MEAN_AT_LEAST, GateVotes(3, mean=3.5), {"threshold": 3.5}, True),
        (GATE_LIKERT_MEAN_AT_LEAST, GateVotes(3, mean=3.4), {"threshold": 3.5}, False),
        (GATE_LIKERT_MEAN_AT_LEAST, GateVotes(3, mean=None), {"threshold": 1}, False),
    ],
)
def test_each_rule_by_hand(rule, votes, options, passed):
    """Every rule on hand-counted votes: a majority is more than half the raters (2 of
    3; 2 of 4 is a tie), a lone rater's answer is the group's."""
    assert gate_passes(rule, votes, **options) is passed


def test_a_gate_changes_nothing_when_no_rule_field_changed(gated):
    good = StageGate.objects.get(stage__position=2)
    (expert,) = consented(gated, "Expert")
    laypeople = consented(gated, "Layperson", count=3)
    for number, person in enumerate(laypeople):
        lay_judge(person, batch_of(gated, 1, "dlg-1"), number)
    assignment_claim(annotator=expert, now=T0 + timedelta(minutes=10))
    gate_change_validate(gate=good, changed=[])  # nothing of the rule changed: fine
    assert Assignment.objects.filter(stage=good.stage).count() == 1


def test_the_likert_rule_reads_the_dimensions_mean_without_cannot_judge(gated):
    """The lay stage rates instead: an item passes when its warmth mean is at least 50,
    "cannot judge" left out (counted as 0, the last candidate would fail)."""
    first = gated.stages.get(position=1)
    make_likert(first)
    good = StageGate.objects.get(stage__position=2)
    good.rule, good.threshold = GATE_LIKERT_MEAN_AT_LEAST, 50.0
    good.dimension = first.dimensions.get(name="warmth")
    good.save()
    StageGate.objects.filter(stage__position=3).delete()
    dlg1 = batch_of(gated, 1, "dlg-1")
    human, c1, c2 = items_of(dlg1)[:3]
    # Warmth by the three laypeople; the first cannot judge any.
    warmth = {human.pk: (None, 90, 80), c1.pk: (None, 20, 30), c2.pk: (None, 50, 50)}
    for number, person in enumerate(consented(gated, "Layperson", count=3)):
        assignment = assignment_create(annotator=person, batch=dlg1, now=T0)
        for reflection in items_of(dlg1):
            rating = warmth.get(reflection.pk, (None, 0, 0))[number]
            fluency = 1 if reflection.kind == Reflection.Kind.ATTENTION_CHECK else 4
            answer = Answer(coherent=None, ratings={"fluency": fluency, "warmth": rating})
            judgement_record(assignment=assignment, reflection=reflection, answer=answer, now=T0)
        assignment_submit(assignment=assignment, now=T0 + timedelta(minutes=5))
    decided = {
        d.reflection_id: (d.passed, d.summary["groups"][0]["mean"]) for d in good.decisions.all()
    }
    assert decided == {human.pk: (True, 85.0), c1.pk: (False, 25.0), c2.pk: (True, 50.0)}
    # The report sets the deciding mean, not a Yes/No majority, beside the expert's label.
    (expert,) = consented(gated, "Expert")
    expert_answers(expert, {human.text}, T0 + timedelta(hours=1))
    (entry,) = gates_build(gate_data(study_id=gated.pk))["stages"]
    assert entry["by_strength"] == [] and entry["agreement"] == []
    assert {r["reflection"]: (r["deciding"], r["label"]) for r in entry["adjudicated"]} == {
        human.pk: ("mean 85.00", "coherent"),
        c2.pk: ("mean 50.00", "incoherent"),
    }


def test_the_rule_comparing_groups_waits_for_both_groups_ratings(gated):
    """Majorities differ between laypeople and experts in the lay stage (both take
    part, three of each): decided only once both groups' ratings are all in."""
    first = gated.stages.get(position=1)
    first.groups.clear()  # every group
    good = StageGate.objects.get(stage__position=2)
    good.rule, good.other_group = GATE_MAJORITIES_DIFFER, gated.groups.get(name="Expert")
    good.save()
    StageGate.objects.filter(stage__position=3).delete()
    dlg1 = batch_of(gated, 1, "dlg-1")
    for number, person in enumerate(consented(gated, "Layperson", count=3)):
        lay_judge(person, dlg1, number)
    assert not good.decisions.exists()  # the experts' ratings are not in
    experts = consented(gated, "Expert", count=3)
    for number, person in enumerate(experts):
        lay_judge(person, dlg1, 2 - number)  # the same answers: 3, 2, 1 Yes again
    human, c1, c2 = items_of(dlg1)[:3]
    assert {d.reflection_id: d.passed for d in good.decisions.all()} == {
        human.pk: False,
        c1.pk: False,
        c2.pk: False,
    }
    assert len(good.decisions.get(reflection=c1).judgements) == 6


def test_a_gated_stage_decides_no_gate_and_takes_no_materials(gated):
    """A gate decides on a stage with materials of its own: not on a gated stage, and
    not into a stage holding imported batches; a materials file naming a gated stage is
    refused whole."""
    adjudication = StageGate.objects.get(stage__position=3)
    adjudication.source_stage = gated.stages.get(position=2)
    with pytest.raises(ValidationError, match="Good reflection is gated itself"):
        gate_validate(gate=adjudication)
    doc = materials_doc(n_contexts=1, stages=("Lay stage", "Good reflection"))
    with pytest.raises(MaterialsImportError, match="stage 'Good reflection' is gated"):
        materials_import(study=gated, content=json.dumps(doc), fmt="json")
    assert not Batch.objects.filter(stage__position=2).exists()
    StageGate.objects.filter(stage__position=3).delete()
    third = gated.stages.get(position=3)
    doc = materials_doc(n_contexts=1, stages=("Lay stage", "Adjudication"))
    materials_import(study=gated, content=json.dumps(doc), fmt="json")
    fresh = StageGate(
        stage=third,
        source_stage=gated.stages.get(position=1),
        rule=GATE_NOT_UNANIMOUS,
        deciding_group=gated.groups.get(name="Layperson"),
    )
    with pytest.raises(ValidationError, match="Adjudication has batches of its own"):
        gate_validate(gate=fresh)
