"""Pairwise and ranking stages for tests: contexts whose first stage compares three
systems (two GPT-2 candidates, one GPT-3, and the human reflection)."""

import json

from studies.datafiles.materials.importing import materials_import
from studies.models import Stage

SOURCES = ("GPT-2", "GPT-2", "GPT-3")


def comparison_materials(n_contexts: int = 3) -> dict:
    return {
        "contexts": [
            {
                "id": f"dlg-{i}",
                "turns": [
                    {"role": "therapist", "text": f"What brings you here today ({i})?"},
                    {"role": "client", "text": f"I keep worrying about problem number {i}."},
                ],
                "human_reflection": f"Problem {i} has been weighing on you.",
                "synthetic": [
                    {
                        "stage": stage,
                        "source": source,
                        "text": f"{source} candidate {j} of {stage} for dialogue {i}.",
                    }
                    for stage in ("GPT-2 stage", "GPT-3 stage")
                    for j, source in enumerate(SOURCES, start=1)
                ],
            }
            for i in range(1, n_contexts + 1)
        ]
    }


def make_comparison(study, instrument, *, position=1, **settings):
    """``study`` (the conftest's, no materials yet) loaded with
    ``comparison_materials``; its stage at ``position`` of ``instrument``."""
    materials_import(study=study, content=json.dumps(comparison_materials()), fmt="json")
    stage = study.stages.get(position=position)
    Stage.objects.filter(pk=stage.pk).update(instrument=instrument, **settings)
    stage.refresh_from_db()
    return stage


def answer_pairs(assignment, choices="AB") -> None:
    """Answer every pair of a pairwise assignment, cycling through ``choices``; the
    attention pair so that the off-topic candidate (the first) loses."""
    from studies.models import Reflection
    from studies.protocol import pair_winner
    from studies.services import Answer, judgement_record_item

    for number, (first, _, swapped) in enumerate(assignment.order, start=1):
        choice = choices[(number - 1) % len(choices)]
        if Reflection.objects.get(pk=first).kind == Reflection.Kind.ATTENTION_CHECK:
            choice = next(c for c in ("A", "B") if pair_winner(c, swapped) == 1)
        judgement_record_item(
            annotator_id=assignment.annotator_id,
            assignment_id=assignment.pk,
            number=number,
            answer=Answer(coherent=None, choice={"T": "Tie"}.get(choice, choice)),
        )


def rank_all(assignment, numbers=None) -> None:
    """Rank a ranking assignment's candidates (default: in their shown order, the
    off-topic candidate last, alone)."""
    from studies.models import Reflection
    from studies.services import ranking_record

    check = [
        rid
        for rid in assignment.order
        if Reflection.objects.get(pk=rid).kind == Reflection.Kind.ATTENTION_CHECK
    ]
    others = [rid for rid in assignment.order if rid not in check]
    numbers = numbers or list(range(1, len(others) + 1))
    ranks = dict(zip(others, numbers, strict=True))
    ranks.update({rid: len(assignment.order) for rid in check})
    ranking_record(annotator_id=assignment.annotator_id, assignment_id=assignment.pk, ranks=ranks)


def answered_comparisons(study):
    """Stage 1 compares pairs (a reason asked), stage 2 ranks; two laypeople and one
    expert each submitted a batch of both stages of the first context."""
    from studies.models import Stage
    from studies.services import annotators_create, assignment_create, assignment_submit

    make_comparison(study, Stage.Instrument.PAIRWISE, asks_reason=True)
    Stage.objects.filter(study=study, position=2).update(instrument=Stage.Instrument.RANKING)
    first, second = study.stages.order_by("position")
    people = [
        *annotators_create(group=study.groups.get(name="Layperson"), count=2),
        *annotators_create(group=study.groups.get(name="Expert"), count=1),
    ]
    for i, annotator in enumerate(people):
        pairs = assignment_create(
            annotator=annotator, batch=first.batches.order_by("context__external_id").first()
        )
        answer_pairs(pairs, choices=["AB", "BT", "AA"][i])
        assignment_submit(assignment=pairs)
        ranking = assignment_create(
            annotator=annotator, batch=second.batches.order_by("context__external_id").first()
        )
        rank_all(ranking, numbers=[[1, 2, 2, 4], [4, 3, 2, 1], [1, 2, 3, 4]][i])
        assignment_submit(assignment=ranking)
    return study
