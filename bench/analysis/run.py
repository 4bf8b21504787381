"""Analysis at scale: ``manage.py analyze`` end to end against a same-run floor.

    python -m bench.analysis.run --sizes 10000 100000 1000000

For each size: generate a study (:mod:`bench.generate`), then time three processes,
each started fresh under ``/usr/bin/time`` (wall time, peak RSS): the floor
(:mod:`bench.analysis.floor`), ``analyze SLUG --resamples 0 --json PATH`` and
``analyze SLUG --resamples 1000 --json PATH``. Targets apply from 1,000,000
judgements up: no-bootstrap ≤ 3 × floor, bootstrap ≤ 60 s, peak RSS ≤ 2 GiB. The
exit status is 1 when a target fails at such a size.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
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
from bench.generate import JUDGEMENTS_PER_CONTEXT

TARGET_SIZE = 1_000_000
MAX_RATIO = 3.0
MAX_BOOTSTRAP_SECONDS = 60.0
MAX_RSS_MIB = 2048.0


def bench_analysis_size(
    *,
    database_url: str,
    slug: str,
    n_judgements: int,
    resamples: int = 1000,
    likert: bool = False,
    pairwise: bool = False,
) -> dict:
    """Time the floor and both analyze runs of study ``slug`` (already generated; a
    Likert study's size counts its ratings)."""
    env = child_env(database_url)
    flags = [*(["--likert"] if likert else []), *(["--pairwise"] if pairwise else [])]
    # What the worker does after an import, before any report: the embeddings the
    # stage diversity reads (analysis.services.candidate_texts_embed).
    from analysis.services import candidate_texts_embed
    from studies.models import Study

    started = time.perf_counter()
    candidate_texts_embed(study_id=Study.objects.get(slug=slug).pk)
    embeddings_s = time.perf_counter() - started
    floor = run_measured([PYTHON, "-m", "bench.analysis.floor", slug, *flags], env=env)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, count in (("no_bootstrap", 0), ("bootstrap", resamples)):
            target = Path(tmp) / f"{name}.json"
            runs[name] = run_measured(
                [
                    PYTHON,
                    "manage.py",
                    "analyze",
                    slug,
                    "--resamples",
                    str(count),
                    "--json",
                    str(target),
                    # The crossed settings on, as an analyst studying decoding would.
                    *([] if likert or pairwise else ["--cross", "model", "--cross", "p"]),
                ],
                env=env,
            )
            report = json.loads(target.read_text(encoding="utf-8"))
            if report["parameters"]["bootstrap_resamples"] != count:
                raise RuntimeError(f"{name}: the report was computed with other parameters")
            runs[name + "_judgements"] = (
                likert_ratings_counted(report)
                if likert
                else pairwise_answers_counted(report)
                if pairwise
                else report["n_judgements"]
            )
    floor_cells = len(floor.stdout.strip().splitlines())
    result = {
        "size": n_judgements,
        "embeddings_after_import_s": round(embeddings_s, 1),
        "judgements_in_report": runs["no_bootstrap_judgements"],
        "floor_cells": floor_cells,
        "floor_s": round(floor.seconds, 2),
        "no_bootstrap_s": round(runs["no_bootstrap"].seconds, 2),
        "ratio": round(runs["no_bootstrap"].seconds / floor.seconds, 2),
        "bootstrap_resamples": resamples,
        "bootstrap_s": round(runs["bootstrap"].seconds, 2),
        "floor_rss_mib": round(floor.max_rss_mib),
        "peak_rss_mib": round(max(runs["no_bootstrap"].max_rss_mib, runs["bootstrap"].max_rss_mib)),
    }
    result["targets"] = targets_check(result)
    return result


def likert_ratings_counted(report: dict) -> int:
    """The ratings the report's ``likert`` block counted ("cannot judge" included)."""
    return sum(
        system["n_ratings"] + system["n_cannot_judge"]
        for stages in report["likert"]["cells"].values()
        for dimensions in stages.values()
        for cell in dimensions.values()
        for system in cell["systems"].values()
    )


def pairwise_answers_counted(report: dict) -> int:
    """The pairwise answers the report's ``pairwise`` block counted (its chosen cells,
    not those a ranking implies)."""
    return sum(
        cell["n_answers"]
        for stages in report["pairwise"]["cells"].values()
        for cell in stages.values()
        if not cell.get("derived")
    )


def targets_check(result: dict) -> dict | None:
    """The targets, from 1,000,000 judgements (less one context, as the generator
    rounds to whole contexts); None below."""
    if result["size"] < TARGET_SIZE - JUDGEMENTS_PER_CONTEXT:
        return None
    return {
        "ratio_le_3": result["ratio"] <= MAX_RATIO,
        "bootstrap_le_60s": result["bootstrap_s"] <= MAX_BOOTSTRAP_SECONDS,
        "rss_le_2gib": result["peak_rss_mib"] <= MAX_RSS_MIB,
    }


def results_table(results: list[dict]) -> str:
    def mark(r, key):
        return "n/a" if r["targets"] is None else ("pass" if r["targets"][key] else "FAIL")

    return table(
        [
            "judgements",
            "floor s",
            "no-bootstrap s",
            "ratio",
            "≤3×",
            "bootstrap s",
            "≤60 s",
            "peak RSS MiB",
            "≤2 GiB",
        ],
        [
            [
                f"{r['judgements_in_report']:,}",
                f"{r['floor_s']:.1f}",
                f"{r['no_bootstrap_s']:.1f}",
                f"{r['ratio']:.2f}",
                mark(r, "ratio_le_3"),
                f"{r['bootstrap_s']:.1f}",
                mark(r, "bootstrap_le_60s"),
                r["peak_rss_mib"],
                mark(r, "rss_le_2gib"),
            ]
            for r in results
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/bench_analysis"
    )
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--agreement", type=float, default=0.7)
    parser.add_argument(
        "--likert",
        action="store_true",
        help="A study whose stages rate on two Likert dimensions; sizes count ratings.",
    )
    parser.add_argument(
        "--pairwise",
        action="store_true",
        help="A study whose stages compare pairs of candidates; sizes count choices.",
    )
    parser.add_argument(
        "--keep-db", action="store_true", help="Leave the benchmark database behind."
    )
    args = parser.parse_args(argv)

    database_recreate(args.database_url)
    django_setup(args.database_url)
    from bench.generate import LIKERT_DIMENSIONS, generate_study

    results = []
    per_answer = len(LIKERT_DIMENSIONS) if args.likert else 1
    for size in args.sizes:
        kind = "likert-" if args.likert else "pairwise-" if args.pairwise else ""
        slug = f"bench-{kind}{size}"
        generated = generate_study(
            slug=slug,
            n_judgements=size // per_answer,
            agreement=args.agreement,
            likert=args.likert,
            pairwise=args.pairwise,
        )
        what = "ratings" if args.likert else "choices" if args.pairwise else "judgements"
        print(
            f"generated {slug}: {generated.n_judgements * per_answer:,} {what} in "
            f"{generated.seconds:.1f} s",
            flush=True,
        )
        result = bench_analysis_size(
            database_url=args.database_url,
            slug=slug,
            n_judgements=generated.n_judgements * per_answer,
            resamples=args.resamples,
            likert=args.likert,
            pairwise=args.pairwise,
        )
        result["likert"] = args.likert
        result["pairwise"] = args.pairwise
        result["generate_s"] = round(generated.seconds, 1)
        results.append(result)
        print(results_table([result]).splitlines()[-1], flush=True)
    print()
    print(results_table(results))
    name = (
        "analysis-likert" if args.likert else "analysis-pairwise" if args.pairwise else "analysis"
    )
    path = results_write(name, {"results": results})
    print(f"\nResults written to {path}")
    if not args.keep_db:
        from django.db import connections

        connections.close_all()
        database_drop(args.database_url)
    failed = any(r["targets"] and not all(r["targets"].values()) for r in results)
    return 1 if failed else 0


def database_drop(database_url: str) -> None:
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    parts = urlsplit(database_url)
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


if __name__ == "__main__":
    sys.exit(main())
