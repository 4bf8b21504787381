"""Shared by bench/load and bench/claims: a study with realistic materials and
annotators.

Call ``bench.common.django_setup`` before importing anything from the project's apps.
"""

import json
import random
import time
from datetime import timedelta

CLIENT_LINES = [
    "I keep telling myself I'll cut down, but then Friday comes and it-it just happens.",
    "My wife says I'm not the same person when I've been drinking, and I guess she's right.",
    "Work has been a mess since they changed the shifts, I barely sleep.",
    "I don't know, I think I'm fine most days, it's only when I'm alone.",
    "The doctor said my blood pressure is up again and I should do something about it.",
    "I tried the gum for a week, and then I just, whatever, I went back.",
]
THERAPIST_LINES = [
    "What do you make of that?",
    "Tell me more about what Fridays are like for you.",
    "It sounds like that has been on your mind a lot.",
    "How would you like things to be different?",
    "What have you tried so far?",
]


def materials_document(n_contexts: int, stages: list[str], *, synthetic: int = 7) -> dict:
    """A materials document shaped like the published studies: about 14 turns per
    context, one human reflection, ``synthetic`` candidates per stage."""
    rng = random.Random(n_contexts)
    contexts = []
    for i in range(1, n_contexts + 1):
        turns = []
        for t in range(14):
            role = "therapist" if t % 2 == 0 else "client"
            line = rng.choice(THERAPIST_LINES if role == "therapist" else CLIENT_LINES)
            turns.append({"role": role, "text": f"{line} ({i}.{t})"})
        contexts.append(
            {
                "id": f"dlg-{i}",
                "turns": turns,
                "human_reflection": f"You are worried that things are slipping again ({i}).",
                "synthetic": [
                    {
                        "stage": stage,
                        "source": stage.split()[0],
                        "text": f"It sounds like {rng.choice(CLIENT_LINES).lower()} ({i}/{j})",
                        "generation": {"model": stage.split()[0].lower(), "decoding": "nucleus"},
                    }
                    for stage in stages
                    for j in range(synthetic)
                ],
            }
        )
    return {"contexts": contexts}


def study_build(
    *,
    slug: str,
    n_contexts: int,
    per_group: int,
    k: int = 3,
    m: int = 5,
    stage_wait: timedelta = timedelta(0),
    consented_at=None,
    synthetic: int = 7,
    instrument: str = "coherence",
    log=print,
):
    """An open study with two stages (the second after ``stage_wait``), two groups,
    ``n_contexts`` contexts and ``per_group`` annotators per group. With
    ``consented_at``, the annotators have consented and done the tutorial. With
    ``instrument`` "likert", both stages rate on ``bench.generate.LIKERT_DIMENSIONS``;
    "pairwise", both compare pairs (the human reflection against each candidate);
    "ranking", both rank each context's candidates."""
    from bench.generate import LIKERT_DIMENSIONS
    from studies.datafiles.materials import materials_import
    from studies.models import Annotator, LikertDimension, Stage, Study
    from studies.services import annotators_create, consent_version_current, study_create

    started = time.monotonic()
    stages = ["GPT-2 stage", "GPT-3 stage"]
    study = study_create(
        slug=slug,
        title=f"Benchmark {slug}",
        stages=[(stages[0], timedelta(0)), (stages[1], stage_wait)],
        groups=["Layperson", "Expert"],
        information_sheet="What the study is about.",
        consent_text="I agree to take part.",
        tutorial_intro="How it works.",
        overlap_k=k,
        batches_per_stage=m,
        seed=2024,
    )
    Stage.objects.filter(study=study).update(instrument=instrument)
    if instrument == Stage.Instrument.LIKERT:
        for stage in study.stages.all():
            for dimension in LIKERT_DIMENSIONS:
                LikertDimension.objects.create(stage=stage, **dimension)
    document = json.dumps(materials_document(n_contexts, stages, synthetic=synthetic))
    materials_import(study=study, content=document, fmt="json")
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    for group in study.groups.all():
        left = per_group
        while left:
            annotators_create(group=group, count=min(left, 1000))
            left -= min(left, 1000)
    if consented_at is not None:
        Annotator.objects.filter(study=study).update(
            consented_version=consent_version_current(study=study),
            consented_at=consented_at,
            tutorial_completed_at=consented_at,
        )
    study.refresh_from_db()
    log(
        f"study {slug}: {n_contexts} contexts, {2 * per_group} annotators, k={k}, m={m}"
        f"{'' if instrument == 'coherence' else ', ' + instrument} "
        f"({time.monotonic() - started:.1f} s)"
    )
    return study
