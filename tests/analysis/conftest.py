"""A study annotated end to end through the real services, for report tests."""

import zlib

import pytest

from studies.models import Assignment, Batch, Reflection
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
)

CATEGORY_CYCLE = (
    frozenset({"off_topic"}),
    frozenset({"malformed", "parroting"}),
    frozenset({"dialogue_contradicting"}),
    frozenset({"malformed"}),
)


def scripted_answer(pseudonym: str, reflection: Reflection) -> Answer:
    """A deterministic but varied answer: attention checks are failed or passed per
    annotator, everything else depends on (annotator, reflection) through a hash."""
    if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
        return Answer(coherent=False, categories=frozenset({"off_topic"}))
    h = zlib.crc32(f"{pseudonym}|{reflection.text}".encode())
    if reflection.kind == Reflection.Kind.HUMAN and h % 4 != 0:
        return Answer(coherent=True, empathy=3 + h % 3)
    if h % 3 == 0:
        return Answer(coherent=True, empathy=1 + h % 5)
    categories = CATEGORY_CYCLE[h % len(CATEGORY_CYCLE)]
    most_evident = sorted(categories)[h % len(categories)] if len(categories) > 1 else None
    return Answer(coherent=False, categories=categories, most_evident=most_evident)


def annotate_study(study, *, annotators_per_group: int = 4) -> dict[str, list]:
    """Every batch gets k = 3 annotators of each group out of ``annotators_per_group``
    (rotating, so some human reflections recur for an annotator and some do not);
    every assignment is answered with :func:`scripted_answer` and submitted."""
    by_group = {}
    for group in study.groups.order_by("name"):
        annotators = annotators_create(group=group, count=annotators_per_group)
        by_group[group.name] = annotators
        batches = Batch.objects.filter(stage__study=study).order_by("stage__position", "context")
        for index, batch in enumerate(batches):
            chosen = [
                annotators[(index + offset) % annotators_per_group]
                for offset in range(study.overlap_k)
            ]
            for annotator in chosen:
                assignment = assignment_create(annotator=annotator, batch=batch)
                reflections = {r.pk: r for r in batch.reflections.all()}
                for reflection_id in assignment.order:
                    reflection = reflections[reflection_id]
                    judgement_record(
                        assignment=assignment,
                        reflection=reflection,
                        answer=scripted_answer(annotator.pseudonym, reflection),
                    )
                assignment_submit(assignment=assignment)
    return by_group


@pytest.fixture
def annotated_study(loaded_study):
    annotate_study(loaded_study)
    assert Assignment.objects.filter(status=Assignment.Status.SUBMITTED).count() == 36
    return loaded_study
