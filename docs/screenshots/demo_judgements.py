"""Simulated judgements for the demo study, so the dashboard screenshot has data.

Only for `make screenshots` (a throwaway database): the demo's annotators judge the
demo batches of both stages at random, with a lean towards calling human and GPT-3
reflections coherent, through the same services as the annotation pages. One
Layperson slot of the first stage stays free for the annotator the capture script
then walks through a batch.

    DATABASE_URL=sqlite:////tmp/screenshots-demo.sqlite3 python docs/screenshots/demo_judgements.py
"""

import os
import random
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")

import django  # noqa: E402

django.setup()

from django.utils import timezone  # noqa: E402

from studies.models import Annotator, Batch, Reflection, Study  # noqa: E402
from studies.services import (  # noqa: E402
    Answer,
    assignment_create,
    assignment_submit,
    consent_version_current,
    judgement_record,
)

COHERENT_CHANCE = {"Human": 0.8, "GPT-2": 0.45, "GPT-3": 0.7}


def answer(rng: random.Random, reflection: Reflection, slugs: list[str]) -> Answer:
    if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
        return Answer(coherent=False, categories=frozenset({"off_topic"}))
    if rng.random() < COHERENT_CHANCE.get(reflection.source, 0.6):
        return Answer(coherent=True, empathy=rng.choice([3, 4, 4, 5, 5]))
    chosen = rng.sample(slugs, k=rng.choice([1, 1, 1, 2]))
    return Answer(
        coherent=False,
        categories=frozenset(chosen),
        most_evident=rng.choice(chosen) if len(chosen) > 1 else None,
    )


def main() -> None:
    rng = random.Random(20261121)
    study = Study.objects.get(slug="demo")
    slugs = list(study.categories.order_by("order").values_list("slug", flat=True))
    k = study.overlap_k
    start = timezone.now() - timedelta(days=10)
    Annotator.objects.filter(study=study, consented_at__isnull=True).update(
        consented_version=consent_version_current(study=study),
        consented_at=start - timedelta(days=1),
        tutorial_completed_at=start - timedelta(days=1),
    )
    made = 0
    for group in study.groups.order_by("name"):
        annotators = list(group.annotators.order_by("number"))
        for stage in study.stages.order_by("position"):
            now = start + timedelta(days=5 * (stage.position - 1))
            batches = list(Batch.objects.filter(stage=stage).order_by("pk"))
            for i, batch in enumerate(batches):
                takers = k
                if group.name == "Layperson" and stage.position == 1 and i == len(batches) - 1:
                    takers = k - 1  # a free slot for the capture script's annotator
                for j in range(takers):
                    annotator = annotators[(i + j) % len(annotators)]
                    now += timedelta(minutes=12)
                    assignment = assignment_create(annotator=annotator, batch=batch, now=now)
                    for reflection in Reflection.objects.filter(pk__in=assignment.order):
                        now += timedelta(seconds=40)
                        judgement_record(
                            assignment=assignment,
                            reflection=reflection,
                            answer=answer(rng, reflection, slugs),
                            now=now,
                        )
                    assignment_submit(assignment=assignment, now=now + timedelta(seconds=30))
                    made += 1
    print(f"Simulated {made} submitted batches in {study.slug}.")


if __name__ == "__main__":
    main()
