"""Claims under contention: many annotators ask for a batch of one study at the same
instant, over several rounds, and the assignment rules are checked after each.

    python -m bench.claims.run --annotators 200 --rounds 5 --private-postgres 5433

Each claimer is a thread with its own database connection; all of a round's claims
are released together by a barrier and call ``assignment_claim`` (the one path by
which annotators get work). Between rounds, claimed batches are answered and
submitted (every fifth is left to expire), and the clock moves on two hours, so later
rounds claim again: more stage-1 batches, then stage-2 batches once the stage's
3-hour wait has passed, with ``StageLocked`` for those still waiting. After each round
a few other annotators claim one at a time: the uncontended floor of the same run.

Reports per round: outcomes, claim latency p50/p95/p99/max, the round's makespan and
the rule violations (``tests/studies/assignment_rules.py``); exits 1 on any violation
or unexpected error. See bench/claims/README.md.
"""

import argparse
import json
import math
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta

from bench.annotator_study import study_build
from bench.common import database_recreate, django_setup, percentile

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
ROUND_GAP = timedelta(hours=2)
STAGE_WAIT = timedelta(hours=3)
PG_BIN = "/usr/lib/postgresql/15/bin"


@dataclass
class RoundResult:
    round: int
    claims: int
    outcomes: dict[str, int]
    errors: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    makespan_s: float
    solo_p50_ms: float | None
    violations: dict[str, int]
    error_samples: list[str] = field(default_factory=list)

    @property
    def n_violations(self) -> int:
        return sum(self.violations.values())


def _outcome_name(outcome) -> str:
    from studies.errors import ErrorCode
    from studies.models import Assignment
    from studies.services import NoWorkAvailable, StageLocked

    if isinstance(outcome, Assignment):
        return "claimed"
    if isinstance(outcome, StageLocked):
        return "stage_locked"
    if isinstance(outcome, NoWorkAvailable):
        if outcome.code == ErrorCode.STAGES_COMPLETED:
            return "finished"
        return "busy" if outcome.code == ErrorCode.CLAIMS_BUSY else "no_work"
    return "error"


@dataclass
class Claim:
    """One claim's outcome, as plain data (it crosses process boundaries)."""

    name: str  # claimed, stage_locked, no_work, busy, finished or error
    seconds: float
    assignment_id: int | None = None
    owner_id: int | None = None  # the returned assignment's annotator
    error: str = ""


def _claim(annotator, now: datetime, barrier) -> Claim:
    from django.db import connection

    from studies.services import assignment_claim

    started = 0.0
    try:
        try:
            connection.ensure_connection()  # connect first: the claims start together
        except BaseException:
            barrier.abort()  # the others must not wait for a claimer that cannot come
            raise
        barrier.wait(timeout=120)
        started = time.perf_counter()
        outcome = assignment_claim(annotator=annotator, now=now)
    except BaseException as exc:
        outcome = exc
    finally:
        connection.close()
    seconds = time.perf_counter() - started if started else 0.0
    name = _outcome_name(outcome)
    return Claim(
        name=name,
        seconds=seconds,
        assignment_id=outcome.pk if name == "claimed" else None,
        owner_id=outcome.annotator_id if name == "claimed" else None,
        error="".join(traceback.format_exception(outcome))[-1500:] if name == "error" else "",
    )


def _claims_in_threads(indexed: list, now: datetime, barrier) -> list[tuple[int, Claim]]:
    results: list[tuple[int, Claim]] = []

    def run(index: int, annotator) -> None:
        results.append((index, _claim(annotator, now, barrier)))

    threads = [threading.Thread(target=run, args=pair) for pair in indexed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    if any(thread.is_alive() for thread in threads):
        raise RuntimeError("a claim thread hangs")
    return results


def _claims_process(indexed: list, now: datetime, barrier, queue) -> None:
    try:
        queue.put(_claims_in_threads(indexed, now, barrier))
    except BaseException as exc:
        queue.put(exc)


def claims_at_once(annotators: list, now: datetime, *, processes: int = 1) -> list[Claim]:
    """Every annotator claims in its own thread and connection, released together by
    one barrier; the threads are spread over ``processes`` forked processes, so the
    Python part of the claims is not serialised by one interpreter lock. Returns one
    ``Claim`` per annotator, in order."""
    from django.db import connections

    indexed = list(enumerate(annotators))
    if processes <= 1:
        results = _claims_in_threads(indexed, now, threading.Barrier(len(annotators)))
    else:
        context = multiprocessing.get_context("fork")
        barrier, queue = context.Barrier(len(annotators)), context.Queue()
        connections.close_all()  # children must not share the parent's connection
        children = [
            context.Process(
                target=_claims_process, args=(indexed[p::processes], now, barrier, queue)
            )
            for p in range(processes)
        ]
        for child in children:
            child.start()
        results = []
        for _ in children:
            part = queue.get(timeout=600)
            if isinstance(part, BaseException):
                raise RuntimeError("a claims process failed") from part
            results.extend(part)
        for child in children:
            child.join(timeout=60)
    by_index = dict(results)
    return [by_index[i] for i in range(len(annotators))]


def answer_and_submit(assignments: list, now: datetime) -> None:
    """Answer every item (attention checks passed) and submit, minutes after ``now``;
    every fifth batch is left to expire instead."""
    from studies.models import Assignment, ErrorCategory, Judgement, Reflection
    from studies.services import assignment_expire, assignment_submit

    if not assignments:
        return
    study_id = assignments[0].stage.study_id
    off_topic = ErrorCategory.objects.get(study_id=study_id, slug="off_topic")
    ids = {rid for a in assignments for rid in a.order}
    kinds = dict(Reflection.objects.filter(pk__in=ids).values_list("pk", "kind"))
    to_submit = [a for i, a in enumerate(assignments) if i % 5]
    for a in assignments[::5]:
        assignment_expire(assignment=a, now=now + timedelta(minutes=40))
    judgements = []
    for a in to_submit:
        for rid in a.order:
            if kinds[rid] == Reflection.Kind.ATTENTION_CHECK:
                judgements.append(
                    Judgement(
                        assignment=a,
                        reflection_id=rid,
                        coherent=False,
                        error_flags=off_topic.mask,
                        most_evident_bit=off_topic.bit,
                    )
                )
            else:
                judgements.append(
                    Judgement(assignment=a, reflection_id=rid, coherent=True, empathy=4)
                )
    Judgement.objects.bulk_create(judgements, ignore_conflicts=True)
    # Answered, as the save path marks a batch on its first answer (a claimed batch
    # with no answer is released after ASSIGNMENT_UNANSWERED_RELEASE).
    Assignment.objects.filter(pk__in=[a.pk for a in to_submit]).update(
        status=Assignment.Status.IN_PROGRESS, started_at=now + timedelta(minutes=1)
    )
    for i, a in enumerate(to_submit):
        assignment_submit(assignment=a, now=now + timedelta(minutes=5 + i % 20))


def run_rounds(
    study, *, claimers: list, solo: list, rounds: int, processes: int = 1, log=print
) -> list[RoundResult]:
    """The benchmark proper, on the current database (the smoke test calls it)."""
    from studies.models import Assignment
    from tests.studies.assignment_rules import assignment_rule_violations

    results = []
    for r in range(rounds):
        now = T0 + r * ROUND_GAP
        started = time.perf_counter()
        claims = claims_at_once(claimers, now, processes=processes)
        makespan = time.perf_counter() - started
        solo_claims = [_claim(annotator, now, _NO_BARRIER) for annotator in solo]
        everyone = [*claims, *solo_claims]
        names = [c.name for c in everyone]
        counts = {name: names.count(name) for name in sorted(set(names))}
        violations = assignment_rule_violations(study, k=study.overlap_k, m=study.batches_per_stage)
        wrong_owner = sum(
            1
            for claim, annotator in zip(everyone, [*claimers, *solo], strict=True)
            if claim.name == "claimed" and claim.owner_id != annotator.pk
        )
        latencies = [c.seconds * 1000 for c in claims]
        errors = [c for c in everyone if c.name == "error"]
        result = RoundResult(
            round=r + 1,
            claims=len(everyone),
            outcomes=counts,
            errors=len(errors) + wrong_owner,
            p50_ms=percentile(latencies, 50),
            p95_ms=percentile(latencies, 95),
            p99_ms=percentile(latencies, 99),
            max_ms=max(latencies) if latencies else None,
            makespan_s=makespan,
            solo_p50_ms=percentile([c.seconds * 1000 for c in solo_claims], 50),
            violations={rule: len(rows) for rule, rows in violations.items()},
            error_samples=[c.error for c in errors[:3]],
        )
        results.append(result)
        log(format_row(result))
        assignments = list(
            Assignment.objects.filter(
                pk__in=[c.assignment_id for c in everyone if c.name == "claimed"],
                status__in=Assignment.OPEN,
            )
            .select_related("stage")
            .order_by("pk")
        )
        answer_and_submit(assignments, now)
    return results


class _NoBarrier:
    """The solo claims (one at a time) wait for nobody."""

    def wait(self, timeout=None) -> None:
        return None


_NO_BARRIER = _NoBarrier()


def fmt(value, spec=".0f") -> str:
    return "-" if value is None else format(value, spec)


HEADER = (
    "round  claims  claimed  locked  no_work  busy  finished  errors   p50 ms   p95 ms"
    "   p99 ms   max ms  makespan s  solo p50 ms  violations"
)


def format_row(r: RoundResult) -> str:
    o = r.outcomes
    return (
        f"{r.round:>5}  {r.claims:>6}  {o.get('claimed', 0):>7}  {o.get('stage_locked', 0):>6}  "
        f"{o.get('no_work', 0):>7}  {o.get('busy', 0):>4}  {o.get('finished', 0):>8}  "
        f"{r.errors:>6}  {fmt(r.p50_ms):>7}  {fmt(r.p95_ms):>7}  {fmt(r.p99_ms):>7}  "
        f"{fmt(r.max_ms):>7}  {fmt(r.makespan_s, '.2f'):>10}  {fmt(r.solo_p50_ms, '.1f'):>11}  "
        f"{r.n_violations:>10}"
    )


def summary(results: list[RoundResult]) -> dict:
    return {
        "violations": sum(r.n_violations for r in results),
        "errors": sum(r.errors for r in results),
        "claimed": sum(r.outcomes.get("claimed", 0) for r in results),
        "p50_ms_median_of_rounds": statistics.median(
            [r.p50_ms for r in results if r.p50_ms is not None] or [0]
        ),
        "p95_ms_max_of_rounds": max([r.p95_ms for r in results if r.p95_ms is not None] or [0]),
    }


# --- a private PostgreSQL instance -------------------------------------------------------


class PrivatePostgres:
    """A throwaway PostgreSQL 15 cluster on its own port with room for the claimers'
    connections, so the shared server (max_connections=100, used by others' tests) is
    neither exhausted nor restarted. Same binaries and default settings as the shared
    server; only max_connections differs."""

    def __init__(self, port: int, max_connections: int):
        self.port, self.max_connections = port, max_connections
        self.directory = tempfile.mkdtemp(prefix="bench-claims-pg-")
        shutil.chown(self.directory, "postgres")
        self.data = os.path.join(self.directory, "data")

    def _as_postgres(self, *args: str) -> None:
        subprocess.run(
            ["su", "postgres", "-c", " ".join(args)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def __enter__(self) -> str:
        self._as_postgres(f"{PG_BIN}/initdb", "-D", self.data, "--auth=trust", "-U", "postgres")
        options = (
            f"-p {self.port} -c max_connections={self.max_connections} "
            f"-c listen_addresses=127.0.0.1 -c unix_socket_directories={self.directory}"
        )
        self._as_postgres(
            f"{PG_BIN}/pg_ctl", "-D", self.data, "-w", "-l", f"{self.directory}/log",
            "-o", f"'{options}'", "start",
        )  # fmt: skip
        return f"postgres://postgres@127.0.0.1:{self.port}/bench_claims"

    def __exit__(self, *exc) -> None:
        try:
            self._as_postgres(f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotators", type=int, default=200, help="concurrent claimers")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--solo", type=int, default=10, help="one-at-a-time claimers per round")
    parser.add_argument(
        "--processes",
        type=int,
        default=8,
        help="processes the claimers' threads are spread over (1: one process)",
    )
    parser.add_argument(
        "--study-annotators",
        type=int,
        default=0,
        help="annotators in the study (default: claimers + solo); more are idle",
    )
    parser.add_argument("--contexts", type=int, default=0, help="default: enough for everyone")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--m", type=int, default=3)
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/bench_claims",
        help="recreated by the run (its name must start with bench)",
    )
    parser.add_argument(
        "--private-postgres",
        type=int,
        metavar="PORT",
        help="run on a throwaway PostgreSQL cluster on PORT with room for the connections",
    )
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)

    if args.private_postgres:
        with PrivatePostgres(args.private_postgres, args.annotators + 50) as url:
            return _main(args, url)
    return _main(args, args.database_url)


def _main(args, url: str) -> int:
    database_recreate(url)
    django_setup(url)
    from django.db import connection

    from studies.models import Annotator

    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections")
        (max_connections,) = cursor.fetchone()
    if int(max_connections) < args.annotators + 10:
        print(
            f"PostgreSQL allows {max_connections} connections; {args.annotators} claimers need "
            "more: use --private-postgres PORT or fewer --annotators",
            file=sys.stderr,
        )
        return 2
    wanted = args.annotators + args.solo
    total = max(args.study_annotators, wanted)
    per_group = math.ceil(total / 2)
    contexts = args.contexts or math.ceil(1.2 * per_group * args.m / args.k) + 10
    study = study_build(
        slug="claims",
        n_contexts=contexts,
        per_group=per_group,
        k=args.k,
        m=args.m,
        stage_wait=STAGE_WAIT,
        consented_at=T0 - timedelta(days=1),
    )
    # Claimers alternate between the groups; the rest of the study stays idle.
    by_group = [
        list(Annotator.objects.filter(group=g).select_related("study").order_by("number"))
        for g in study.groups.order_by("name")
    ]
    chosen = [a for pair in zip(*by_group, strict=False) for a in pair][:wanted]
    claimers, solo = chosen[: args.annotators], chosen[args.annotators :]
    command = "python -m bench.claims.run " + " ".join(sys.argv[1:])
    print(
        f"{command}\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs, "
        f"PostgreSQL max_connections={max_connections}; {len(claimers)} concurrent claimers, "
        f"{len(solo)} solo claimers per round; claimers in {args.processes} processes\n{HEADER}"
    )
    results = run_rounds(
        study, claimers=claimers, solo=solo, rounds=args.rounds, processes=args.processes
    )
    total_summary = summary(results)
    print(
        f"violations: {total_summary['violations']} (0 required), "
        f"unexpected errors: {total_summary['errors']} (0 required), "
        f"batches claimed: {total_summary['claimed']}"
    )
    for r in results:
        for sample in r.error_samples:
            print(sample, file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "command": command,
                    "date": datetime.now(UTC).isoformat(),
                    "study": {
                        "annotators": 2 * per_group,
                        "contexts": contexts,
                        "k": args.k,
                        "m": args.m,
                    },
                    "rounds": [asdict(r) for r in results],
                    "summary": total_summary,
                },
                f,
                indent=2,
            )
    return 1 if total_summary["violations"] or total_summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
