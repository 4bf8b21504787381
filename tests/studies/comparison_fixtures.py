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
