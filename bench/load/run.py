"""Annotator save path under load: gunicorn (production settings, DEBUG off) against
PostgreSQL on 127.0.0.1, driven by virtual annotators (bench/load/driver.py).

    python -m bench.load.run --concurrency 10 50 100 --duration 30

Recreates its own database (default ``bench_load``), migrates, builds a study with
enough contexts and invited annotators, collects static files, starts gunicorn with
the bench-only floor view (``BENCH_FLOOR_VIEW=true``), waits until it answers, then
for each concurrency level, ``--duration`` seconds each: the two save loops
(annotators answering as fast as the server answers: the save alone, and the htmx
save that also renders the next item) and the floor (one INSERT per POST,
``annotation_site/bench_views.py``) at the same concurrency on the same server,
taking turns in ``--slices`` slices, then the journey with think time. Prints one table, checks that every acknowledged save is
in the database, and checks the targets: no errors; at 50 annotators, the save's
throughput at least half the floor's, and journey save p95 at most 100 ms. Exits 1
when a target fails. See bench/load/README.md.
"""

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psutil

from bench.annotator_study import study_build
from bench.common import NO_REDIS, database_recreate, django_setup
from bench.load.driver import (
    DRAFT,
    FLOOR,
    SAVE,
    SAVE_LOOP,
    SAVE_ONLY,
    SHOW,
    Stats,
    VirtualAnnotator,
    run_floor,
    run_level,
    run_save_loop,
    warm_up,
)

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SLUG = "load"
TARGET_LEVEL, TARGET_RATIO, TARGET_P95_MS = 50, 0.5, 100.0
KINDS = ("sign-up", "home", "claim batch", "open batch", SHOW, DRAFT, SAVE, "review + submit")
ACKED = "acknowledged saves stored"
# --compare: a second server without one of the save path's optimisations, on the same
# database (same secret key, so the annotators' sessions work on both); its save loop
# takes its turn with the others. The row's name, the server's environment and app.
COMPARE = {
    "prepared": (
        "save only, unprepared",
        {"DJANGO_DB_PREPARED_STATEMENTS": "false"},
        "annotation_site.wsgi",
    ),
    "session-column": (
        "save only, no column",
        {},
        "bench.load.without_session_column:application",
    ),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(database_url: str, static_root: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(40),
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=database_url,
        DJANGO_STATIC_ROOT=static_root,
        # Plain HTTP on loopback: secure-only cookies would never come back, and
        # neither the redirect to HTTPS nor HSTS applies.
        DJANGO_SECURE_COOKIES="false",
        DJANGO_SECURE_SSL_REDIRECT="false",
        DJANGO_HSTS_SECONDS="0",
        ANALYSIS_AUTO_RUN="false",
        BENCH_FLOOR_VIEW="true",
        DJANGO_LOG_LEVEL="WARNING",
        **NO_REDIS,
    )
    return env


class Gunicorn:
    """``gunicorn annotation_site.wsgi`` on a free loopback port, until closed."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        workers: int,
        worker_class: str,
        threads: int,
        app: str = "annotation_site.wsgi",
    ):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [
            str(BIN / "gunicorn"), app,
            "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(workers),
            "--worker-class", worker_class,
            "--threads", str(threads),
            "--backlog", "2048",
            "--log-level", "warning",
        ]  # fmt: skip
        self.env = env
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "Gunicorn":
        self.process = subprocess.Popen(self.args, cwd=ROOT, env=self.env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}")
            try:
                if httpx.get(self.url + "/", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.__exit__()
        raise RuntimeError("gunicorn did not answer within 60 s")

    def processes(self) -> list[psutil.Process]:
        master = psutil.Process(self.process.pid)
        return [master, *master.children(recursive=True)]

    def __exit__(self, *exc) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for p in processes:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def prepare(
    database_url: str,
    *,
    levels: list[int],
    duration: float,
    instrument: str = "coherence",
    log=print,
):
    """Fresh database, migrations, the floor's table and a study sized for the run."""
    database_recreate(database_url)
    django_setup(database_url)

    from annotation_site.bench_views import floor_table_create
    from studies.models import Annotator

    logging.getLogger("httpx").setLevel(logging.WARNING)
    floor_table_create()
    # Every virtual annotator needs a fresh identity after 10 batches (5 per stage);
    # allow ~5 finished identities per second of run, which is more than 2 CPUs serve.
    per_group = math.ceil((sum(levels) + 5 * duration * len(levels)) / 2)
    contexts = math.ceil(1.1 * per_group * 5 / 3)
    study_build(
        slug=SLUG,
        n_contexts=contexts,
        per_group=per_group,
        k=3,
        m=5,
        instrument=instrument,
        log=log,
    )
    tokens = list(Annotator.objects.order_by("-pk").values_list("access_token", flat=True))
    from django.db import connections

    connections.close_all()
    return tokens


def collectstatic(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        check=True,
    )


def fmt(value, spec=".1f") -> str:
    return "-" if value is None else format(value, spec)


HEADER = f"{'annotators':>10}  {'request':<26}  {'count':>6}  {'errors':>6}  {'req/s':>7}  {'p50 ms':>7}  {'p95 ms':>7}  {'p99 ms':>7}"


def format_row(level: int, row: dict) -> str:
    return (
        f"{level:>10}  {row['request']:<26}  {row['count']:>6}  {row['errors']:>6}  "
        f"{fmt(row['rps']):>7}  {fmt(row['p50_ms']):>7}  {fmt(row['p95_ms']):>7}  "
        f"{fmt(row['p99_ms']):>7}"
    )


def level_cpu(server: Gunicorn):
    return cpu_seconds(server.processes()), cpu_seconds([psutil.Process()]), psutil.cpu_times()


def cpu_used(before, after, seconds: float) -> dict:
    def busy_seconds(times) -> float:
        # guest time is counted in user time too (Linux), so it is left out once.
        not_busy = ("idle", "iowait", "guest", "guest_nice")
        return sum(times) - sum(getattr(times, name, 0.0) for name in not_busy)

    busy = busy_seconds(after[2]) - busy_seconds(before[2])
    return {
        "gunicorn_cores": (after[0] - before[0]) / seconds,
        "driver_cores": (after[1] - before[1]) / seconds,
        "machine_busy_cores": busy / seconds,
    }


def cpu_average(parts: list[tuple[dict, float]]) -> dict:
    """``cpu_used`` of several slices, weighted by their seconds."""
    total = sum(seconds for _, seconds in parts)
    return {
        key: sum(used[key] * seconds for used, seconds in parts) / total if total else 0.0
        for key in parts[0][0]
    }


def print_cpu(phase: str, cpu: dict) -> None:
    print(
        f"{'':>10}  {phase}: CPU (cores busy) gunicorn {cpu['gunicorn_cores']:.2f}, driver "
        f"{cpu['driver_cores']:.2f}, whole machine {cpu['machine_busy_cores']:.2f} of "
        f"{psutil.cpu_count()}",
        flush=True,
    )


def error_rows(stats: Stats, kinds) -> list[dict]:
    return [
        {"request": kind, "count": 0, "errors": n, "rps": 0.0}
        | {"p50_ms": None, "p95_ms": None, "p99_ms": None}
        for kind, n in stats.errors.items()
        if kind not in kinds or not stats.latencies.get(kind)
    ]


def point(annotators, url: str) -> None:
    """Send these annotators' next requests to the server at ``url``."""
    for a in annotators:
        a.base = url
        if a.client is not None:
            a.client.base_url = url


async def drive(
    server: Gunicorn, tokens, args, acknowledged: dict, other: Gunicorn | None = None
) -> list[dict]:
    """Per level: the save loop (after a warm-up), the floor, then the journey with
    think time; the same virtual annotators throughout (the journey carries on in the
    batch the save loop left open). With ``other`` (``--compare``), the save alone is
    also timed against that server, in the same turns."""
    stats_ref = [Stats()]
    annotators = [
        VirtualAnnotator(
            server.url,
            SLUG,
            tokens,
            stats_ref,
            args.mode,
            seed=i,
            instrument=args.instrument,
        )
        for i in range(max(args.concurrency))
    ]
    think = tuple(args.think) if args.think and max(args.think) > 0 else None
    levels = []
    try:
        for level in args.concurrency:
            group = annotators[:level]
            for a in group:
                a.think = None
            warm = await warm_up(group, stats_ref)
            rows = [
                {**row, "request": f"warm-up: {row['request']}"} for row in error_rows(warm, ())
            ]
            samples = list(warm.error_samples)
            # The save loops and the floor take turns, slice by slice, so a machine
            # that speeds up or slows down during the run (shared, noisy) weighs on
            # each alike.
            phases = {SAVE_ONLY: "plain", SAVE_LOOP: "htmx", FLOOR: None}
            without = COMPARE[args.compare][0] if other is not None else None
            if without:
                phases[without] = "plain"
            stats = {kind: Stats() for kind in phases}
            seconds_of = dict.fromkeys(phases, 0.0)
            cpu_parts: dict[str, list] = {kind: [] for kind in phases}
            for _ in range(args.slices):
                for kind, mode in phases.items():
                    target = other if kind == without else server
                    point(group, target.url)
                    cpu0, piece = level_cpu(target), args.duration / args.slices
                    if kind == FLOOR:
                        _, took = await run_floor(group, stats_ref, piece, stats[kind])
                    else:
                        took = await run_save_loop(group, stats_ref, piece, mode, stats[kind])
                    cpu_parts[kind].append((cpu_used(cpu0, level_cpu(target), took), took))
                    seconds_of[kind] += took
                point(group, server.url)
            cpu = {kind: cpu_average(parts) for kind, parts in cpu_parts.items()}
            for kind in phases:
                # The compared save loop records its requests as the save alone does.
                recorded = SAVE_ONLY if kind == without else kind
                rows.append({**stats[kind].row(recorded, seconds_of[kind]), "request": kind})
                rows += error_rows(stats[kind], {recorded})
                if kind != FLOOR:
                    samples += stats[kind].error_samples
            floor_stats, floor_seconds = stats[FLOOR], seconds_of.pop(FLOOR)

            for a in group:
                a.think = think
            cpu0 = level_cpu(server)
            seconds = await run_level(group, stats_ref, args.duration)
            cpu["journey"] = cpu_used(cpu0, level_cpu(server), seconds)
            journey = stats_ref[0]
            rows += [journey.row(kind, seconds) for kind in KINDS if journey.latencies.get(kind)]
            rows += error_rows(journey, KINDS)

            result = {
                "annotators": level,
                "seconds": {**seconds_of, FLOOR: floor_seconds, "journey": seconds},
                "rows": rows,
                "cpu": cpu,
                "load_average": os.getloadavg()[0],
                "error_samples": samples + floor_stats.error_samples + journey.error_samples,
            }
            levels.append(result)
            for row in rows:
                print(format_row(level, row), flush=True)
            for phase, used in result["cpu"].items():
                print_cpu(phase, used)
            print(f"{'':>10}  load average {result['load_average']:.1f}", flush=True)
    finally:
        for a in annotators:
            acknowledged.update({key: n for key, n in a.acknowledged.items() if n})
            await a.close()
    return levels


def run(server: Gunicorn, tokens, args, other: Gunicorn | None = None) -> list[dict]:
    """``drive`` every level, then check the acknowledged saves against the database
    (a row of the last level)."""
    acknowledged: dict[tuple[int, int], int] = {}
    levels = asyncio.run(drive(server, tokens, args, acknowledged, other))
    integrity = acknowledged_check(acknowledged)
    if levels:
        levels[-1]["rows"].append(integrity)
        print(format_row(levels[-1]["annotators"], integrity), flush=True)
    return levels


def acknowledged_check(acknowledged: dict[tuple[int, int], int]) -> dict:
    """Every save the server acknowledged is in the database: each answer's stored
    revision equals the number of acknowledged saves of it (one more would be a save
    acknowledged twice, one less a lost one). One row, its errors the mismatches."""
    from studies.models import Assignment, Judgement
    from studies.protocol import order_key

    orders = dict(
        Assignment.objects.filter(pk__in={k[0] for k in acknowledged}).values_list("pk", "order")
    )
    stored = {
        (assignment_id, reflection_id, opponent_id): revision
        for assignment_id, reflection_id, opponent_id, revision in Judgement.objects.filter(
            assignment_id__in=orders
        ).values_list("assignment_id", "reflection_id", "opponent_id", "revision")
    }
    mismatches = sum(
        1
        for (assignment_id, number), n in acknowledged.items()
        if stored.get((assignment_id, *order_key(orders[assignment_id][number - 1]))) != n
    )
    return {
        "request": ACKED,
        "count": len(acknowledged),
        "errors": mismatches,
        "rps": 0.0,
        "p50_ms": None,
        "p95_ms": None,
        "p99_ms": None,
    }


def check_targets(levels: list[dict]) -> list[tuple[str, bool]]:
    checks = []
    errors = sum(row["errors"] for level in levels for row in level["rows"])
    checks.append((f"errors: {errors} (0 required; acknowledged saves all stored)", errors == 0))
    for level in levels:
        if level["annotators"] != TARGET_LEVEL:
            continue
        rows = {row["request"]: row for row in level["rows"]}
        only, floor, save = rows.get(SAVE_ONLY), rows.get(FLOOR), rows.get(SAVE)
        ratio = only["rps"] / floor["rps"] if only and floor and floor["rps"] else 0.0
        checks.append(
            (
                f"at {TARGET_LEVEL}: save {fmt(only and only['rps'])} req/s / floor "
                f"{fmt(floor and floor['rps'])} req/s = {ratio:.2f} (≥ {TARGET_RATIO} required)",
                ratio >= TARGET_RATIO,
            )
        )
        p95 = save["p95_ms"] if save else None
        checks.append(
            (
                f"at {TARGET_LEVEL}: journey save p95 {fmt(p95)} ms "
                f"(≤ {TARGET_P95_MS:.0f} ms required)",
                p95 is not None and p95 <= TARGET_P95_MS,
            )
        )
    return checks


def compare_lines(levels: list[dict], without: str) -> list[str]:
    """Per level, the save alone / floor with and without the compared optimisation."""
    lines = []
    for level in levels:
        rows = {row["request"]: row for row in level["rows"]}
        floor = rows.get(FLOOR, {}).get("rps") or 0
        if floor:
            with_, without_ = (rows.get(k, {}).get("rps") or 0 for k in (SAVE_ONLY, without))
            lines.append(
                f"at {level['annotators']}: save / floor {with_ / floor:.2f} with, "
                f"{without_ / floor:.2f} {without.removeprefix('save only, ')}"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--duration", type=float, default=30, help="seconds per level")
    parser.add_argument("--mode", choices=("htmx", "plain"), default="htmx")
    parser.add_argument(
        "--instrument",
        choices=("coherence", "likert", "pairwise", "ranking"),
        default="coherence",
        help="What both stages ask: the coherence protocol, two Likert dimensions (5 "
        "points, a slider), pairs of candidates (A, B or Tie), or a ranking of each "
        "context's candidates (saved whole).",
    )
    parser.add_argument(
        "--think",
        type=float,
        nargs=2,
        default=[1.0, 3.0],
        metavar=("MIN", "MAX"),
        help="the journey's think time before each request, seconds (0 0: none)",
    )
    parser.add_argument(
        "--workers", type=int, default=5, help="gunicorn workers (2 × cores + 1 on 2 cores)"
    )
    parser.add_argument("--worker-class", default="sync")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/bench_load",
        help="recreated by the run (its name must start with bench)",
    )
    parser.add_argument(
        "--slices",
        type=int,
        default=4,
        help="the save loops and the floor take turns in this many slices of each level",
    )
    parser.add_argument(
        "--compare",
        choices=sorted(COMPARE),
        help="also time the save alone on a second server without prepared statements, "
        "or without the session row's annotators column",
    )
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    if args.slices < 1:
        parser.error("--slices must be at least 1")
    if args.duration > 120 or max(args.concurrency) > 200:
        parser.error("keep runs bounded: --duration ≤ 120 s and ≤ 200 annotators")

    command = "python -m bench.load.run " + " ".join(sys.argv[1:] if argv is None else argv)
    tokens = prepare(
        args.database_url,
        levels=args.concurrency,
        duration=args.duration,
        instrument=args.instrument,
    )
    with tempfile.TemporaryDirectory(prefix="bench-load-static-") as static_root:
        env = server_env(args.database_url, static_root)
        collectstatic(env)
        servers = contextlib.ExitStack()
        with servers:
            server = servers.enter_context(
                Gunicorn(
                    env, workers=args.workers, worker_class=args.worker_class, threads=args.threads
                )
            )
            other = None
            if args.compare:
                _, variant_env, app = COMPARE[args.compare]
                other = servers.enter_context(
                    Gunicorn(
                        {**env, **variant_env},
                        workers=args.workers,
                        worker_class=args.worker_class,
                        threads=args.threads,
                        app=app,
                    )
                )
            print(
                f"{command}\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs; "
                f"gunicorn {args.workers} × {args.worker_class} (threads {args.threads}), "
                f"mode {args.mode}"
                f"{'' if args.instrument == 'coherence' else ', ' + args.instrument}, "
                f"{args.duration:.0f} s per phase (save loops and floor in "
                f"turns, {args.slices} slices each); journey think time "
                f"{args.think[0]:g}–{args.think[1]:g} s\n{HEADER}",
                flush=True,
            )
            levels = run(server, tokens, args, other)
    checks = check_targets(levels)
    if args.compare:
        for text in compare_lines(levels, COMPARE[args.compare][0]):
            print(text)
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    for level in levels:
        for sample in level["error_samples"]:
            print(f"  error at {level['annotators']}: {sample}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "command": command,
                    "date": datetime.now(UTC).isoformat(),
                    "levels": levels,
                    "checks": [{"check": t, "pass": ok} for t, ok in checks],
                },
                f,
                indent=2,
            )
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
