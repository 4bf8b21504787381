"""A study with gated stages for tests: three laypeople judge two contexts in a lay
stage (k = 3); experts judge "good reflection" on the items the lay majority found
coherent, and adjudicate those whose lay raters were not unanimous."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from studies.datafiles.materials import materials_import
from studies.models import Batch, Reflection, Stage, StageGate, Study
from studies.protocol import GATE_MAJORITY_COHERENT, GATE_NOT_UNANIMOUS
from studies.services import (
    Answer,
    assignment_create,
    assignment_submit,
    judgement_record,
    study_create,
)
from tests.conftest import materials_doc

T0 = timezone.now().replace(microsecond=0)

# Per context, the laypeople's Yes (True) / No per item: the human reflection, then
# the two candidates (the attention check is always answered No, off-topic).
LAY_ANSWERS = {
    "dlg-1": [(True, True, True), (True, True, False), (False, False, True)],
    "dlg-2": [(False, False, False), (False, False, False), (False, False, False)],
}


def gated_study_unbuilt() -> Study:
    """The study's three stages, open, with the lay stage's materials, before its
    groups, k and gates are set (``gated_study_build``; the admin's browser walk sets
    them on the stages' pages)."""
    study = study_create(
        slug="gated",
        title="Gated",
        stages=[
            ("Lay stage", timedelta(0)),
            ("Good reflection", timedelta(0)),
            ("Adjudication", timedelta(0)),
        ],
        groups=["Layperson", "Expert"],
        information_sheet="What the study is about.",
        consent_text="I agree to take part.",
        seed=11,
    )
    doc = materials_doc(n_contexts=2, stages=("Lay stage",))
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    Study.objects.filter(pk=study.pk).update(
        status=Study.Status.OPEN, overlap_k=1, batches_per_stage=2
    )
    study.refresh_from_db()
    return study


def gated_study_build(study: Study) -> Study:
    """Three laypeople per lay batch; experts only in the gated stages: "good
    reflection" takes the items the lay majority found coherent, "adjudication" those
    whose lay raters were not unanimous."""
    lay, expert = (study.groups.get(name=n) for n in ("Layperson", "Expert"))
    first, good, adjudication = study.stages.order_by("position")
    Stage.objects.filter(pk=first.pk).update(overlap_k=3)
    first.groups.set([lay])
    for stage in (good, adjudication):
        stage.groups.set([expert])
    StageGate.objects.create(
        stage=good, source_stage=first, rule=GATE_MAJORITY_COHERENT, deciding_group=lay
    )
    StageGate.objects.create(
        stage=adjudication, source_stage=first, rule=GATE_NOT_UNANIMOUS, deciding_group=lay
    )
    return study


@pytest.fixture
def gated(db):
    """A lay stage (k = 3 laypeople per batch), then two experts' stages gated on it
    (``gated_study_build``)."""
    return gated_study_build(gated_study_unbuilt())


def items_of(batch) -> list[Reflection]:
    return [i.reflection for i in batch.items.order_by("position").select_related("reflection")]


def lay_judge(annotator, batch, number, *, now=T0, category="off_topic"):
    """The ``number``-th layperson's answers to ``batch`` (``LAY_ANSWERS``), submitted."""
    assignment = assignment_create(annotator=annotator, batch=batch, now=now)
    answers = iter(LAY_ANSWERS[batch.context.external_id])
    for reflection in items_of(batch):
        if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
            answer = Answer(False, frozenset({"off_topic"}))
        else:
            yes = next(answers)[number]
            answer = Answer(True, empathy=4) if yes else Answer(False, frozenset({category}))
        judgement_record(assignment=assignment, reflection=reflection, answer=answer, now=now)
    return assignment_submit(assignment=assignment, now=now + timedelta(minutes=5))


def batch_of(study, position, context) -> Batch | None:
    return Batch.objects.filter(
        stage__study=study, stage__position=position, context__external_id=context
    ).first()


def kinds_and_texts(batch) -> list[str]:
    return [r.text for r in items_of(batch)]
