"""Candidate selection at the issue's size: 100 contexts × 150 generated candidates,
on this machine, with the default embedding model.

    python -m bench.candidates.run --contexts 100 --candidates 150

In a fresh database (default ``bench_candidates``), writes a pool file of generated
candidates (:func:`pool_document`: reflections built from phrase lists, spread over
three models and five decoding settings, with exact and case-and-punctuation
duplicates as decoding settings give them), then times, each as its own process:

* ``manage.py import_materials SLUG FILE --pool``;
* ``manage.py select_candidates SLUG --stage "Stage 1"``: duplicates, embeddings (none
  cached yet), clusters, the draw, the stage written, and the diversity of the pool and
  the selection (Self-BLEU on 200 pairs per context, cosine over all pairs);
* the same into ``Stage 2``: the embeddings now come from the cache.

Target: the first selection, diversity included, in under 600 s (the issue's ten
minutes; an absolute bound, as no floor stands for an embedding model). The two
selections must draw the same clusters (same pool, parameters and seed). Exit status 1
when a target fails.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

from bench.common import (
    PYTHON,
    child_env,
    database_recreate,
    django_setup,
    results_write,
    run_measured,
    table,
)

MAX_FIRST_SELECTION_S = 600.0
SLUG = "bench-candidates"

OPENINGS = [
    "It sounds like", "You feel that", "So you're saying", "You're worried that",
    "Part of you thinks", "You've noticed that", "It seems", "You're wondering whether",
]  # fmt: skip
SUBJECTS = [
    "your drinking", "the job", "your family", "your health", "money", "your sleep",
    "the move", "your partner", "school", "your doctor's advice", "the weekends",
    "your friends at work", "cutting back", "your dad's illness",
]  # fmt: skip
PREDICATES = [
    "has been weighing on you", "keeps you up at night", "feels out of your control",
    "matters a lot to you", "is harder than people think", "makes you feel alone",
    "is something you want to change", "has been getting better lately",
    "brings up old worries", "is where most of the stress comes from",
]  # fmt: skip
TAILS = [
    "", ", and you're not sure where to start", ", even though you've tried before",
    ", and that frustrates you", ", especially after what happened last year",
    ", and you want things to be different",
]  # fmt: skip
DETAILS = [
    "since the spring", "at the weekend", "when the kids are asleep", "after the last visit",
    "with your sister", "on the way home", "most evenings", "since the new manager came",
    "every payday", "in the mornings", "around the holidays", "when you are alone",
    "at the clinic", "with the neighbours", "over the phone", "since the accident",
    "this month", "at your mother's", "when it rains", "before big meetings",
]  # fmt: skip
SETTINGS = [
    {"decoding": "greedy"},
    {"decoding": "beam"},
    {"decoding": "nucleus", "p": 0.8},
    {"decoding": "nucleus", "p": 0.9},
    {"decoding": "nucleus", "p": 0.95},
]
MODELS = ["GPT-2", "GPT-3", "BART"]


def pool_document(*, contexts: int, candidates: int, seed: int = 0) -> dict:
    """A materials file of ``contexts`` contexts with ``candidates`` pool candidates
    each (nearly every text distinct, so nearly every one is embedded): every model and
    decoding setting in turn; greedy and beam agree on one text
    in three (an exact duplicate), and one candidate in ten repeats an earlier one in
    other case and punctuation."""
    rng = random.Random(seed)
    document = {"contexts": []}
    for c in range(contexts):
        subject = SUBJECTS[c % len(SUBJECTS)]
        items = []
        for n in range(candidates):
            model = MODELS[n % len(MODELS)]
            setting = SETTINGS[(n // len(MODELS)) % len(SETTINGS)]
            if setting["decoding"] == "beam" and items and rng.random() < 1 / 3:
                text = items[-len(MODELS)]["text"]  # the same model's greedy text
            elif items and rng.random() < 0.1:
                text = rng.choice(items)["text"].lower().rstrip(".") + "!"
            else:
                text = (
                    f"{rng.choice(OPENINGS)} {rng.choice([subject, *rng.sample(SUBJECTS, 2)])} "
                    f"{rng.choice(PREDICATES)} {rng.choice(DETAILS)}{rng.choice(TAILS)}."
                )
            items.append({"source": model, "text": text, "generation": {"model": model, **setting}})
        document["contexts"].append(
            {
                "id": f"ctx-{c:04d}",
                "turns": [
                    {"role": "therapist", "text": "What brings you in today?"},
                    {"role": "client", "text": f"I keep thinking about {subject}."},
                ],
                "human_reflection": f"You keep coming back to {subject}.",
                "synthetic": items,
            }
        )
    return document


def bench_candidates(
    *, database_url: str, contexts: int, candidates: int, workdir: Path, create: bool = True
) -> dict:
    """Import, select, select again; returns the timings, counts and target checks.
    With ``create``, makes the study (two stages) in this process first."""
    if create:
        from datetime import timedelta

        from studies.services import study_create

        study_create(
            slug=SLUG,
            title="Candidate selection benchmark",
            stages=[("Stage 1", timedelta(0)), ("Stage 2", timedelta(0))],
            groups=["Layperson"],
        )
    pool_file = workdir / "pool.json"
    pool_file.write_text(json.dumps(pool_document(contexts=contexts, candidates=candidates)))
    env = child_env(database_url, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    manage = [PYTHON, "manage.py"]
    imported = run_measured([*manage, "import_materials", SLUG, str(pool_file), "--pool"], env=env)
    first = run_measured([*manage, "select_candidates", SLUG, "--stage", "Stage 1"], env=env)
    second = run_measured([*manage, "select_candidates", SLUG, "--stage", "Stage 2"], env=env)

    from analysis.models import CandidateCluster, CandidateSelection

    selections = list(CandidateSelection.objects.filter(study__slug=SLUG).order_by("pk"))

    def drawn(selection) -> list:
        return sorted(
            CandidateCluster.objects.filter(selection=selection, selected=True).values_list(
                "context_id", "representative_id"
            )
        )

    same = len(selections) == 2 and drawn(selections[0]) == drawn(selections[1])
    counts = selections[0].counts if selections else {}
    result = {
        "contexts": contexts,
        "candidates_per_context": candidates,
        "import_s": round(imported.seconds, 1),
        "first_selection_s": round(first.seconds, 1),
        "first_selection_rss_mib": round(first.max_rss_mib),
        "second_selection_s": round(second.seconds, 1),
        "counts": counts,
        "diversity_selection_all": selections[0].diversity["selection"]["all"]
        if selections
        else None,
        "same_selection_twice": same,
        "targets": {
            "first_selection_under_600_s": first.seconds < MAX_FIRST_SELECTION_S,
            "same_selection_twice": same,
        },
    }
    return result


def results_table(result: dict) -> str:
    return table(
        ["contexts × candidates", "import (s)", "selection (s)", "RSS (MiB)", "again, cached (s)",
         "clusters", "same draw"],
        [[f"{result['contexts']} × {result['candidates_per_context']}", result["import_s"],
          result["first_selection_s"], result["first_selection_rss_mib"],
          result["second_selection_s"], result["counts"].get("clusters"),
          result["same_selection_twice"]]],
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=150)
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/bench_candidates"
    )
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()
    database_recreate(args.database_url)
    django_setup(args.database_url)
    with tempfile.TemporaryDirectory() as workdir:
        result = bench_candidates(
            database_url=args.database_url,
            contexts=args.contexts,
            candidates=args.candidates,
            workdir=Path(workdir),
        )
    print(results_table(result))
    print(f"Written: {results_write('candidates', result)}")
    if not args.keep_db:
        from django.db import connections

        from bench.analysis.run import database_drop

        connections.close_all()
        database_drop(args.database_url)
    return 0 if all(result["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
