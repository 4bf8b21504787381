"""Published-format export of a large study, against a same-run ``psql \\copy`` floor.

    python -m bench.export.run --judgements 1000000

Generates the study (:mod:`bench.generate`) into a fresh database, then times:

* the floor: ``psql -c "\\copy (SELECT ...) to FILE csv header"``, a SELECT with the
  export's joins, filters, columns and ORDER BY (:func:`floor_sql`);
* ``manage.py export_annotations SLUG --out FILE`` (wall time and peak RSS);
* the streaming endpoint ``/exports/SLUG/annotations.csv`` served by gunicorn (one
  sync worker, DEBUG off, loopback), downloaded by a streaming client as a staff
  user, while the worker's RSS is sampled every 20 ms.

Targets: each export ≤ 2 × floor; the serving worker's RSS grows ≤ 100 MB during the
download. The three files must hold the same rows (the endpoint's file is
byte-identical to the command's; the floor's rows equal them cell by cell). Exit
status 1 when a target fails.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import http.client
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from itertools import zip_longest
from pathlib import Path

from bench.common import (
    PYTHON,
    ROOT,
    child_env,
    database_recreate,
    django_setup,
    results_write,
    run_measured,
    table,
)

MAX_RATIO = 2.0
MAX_RSS_GROWTH_MB = 100.0


def floor_sql(*, study_id: int) -> str:
    """The published export (default options) as one SELECT: same joins, filters,
    columns (contexts rendered once each, as the export does) and row order."""
    from studies.exports import ExportOptions, export_header
    from studies.exports.rows import _categories
    from studies.models import Study

    study = Study.objects.get(pk=study_id)
    header = export_header(study=study, options=ExportOptions())
    categories = dict(_categories(study))
    flag_columns = [
        f"CASE WHEN j.error_flags & {1 << categories[slug]} <> 0 THEN 'Yes' END AS {slug}"
        for slug in header[7:]
    ]
    return f"""
        WITH ctx AS (
            SELECT c.id, (SELECT jsonb_agg(jsonb_build_object(t->>'role', t->>'text') ORDER BY n)
                          FROM jsonb_array_elements(c.turns) WITH ORDINALITY AS x(t, n))::text AS turns
            FROM studies_dialoguecontext c WHERE c.study_id = {study_id}
        )
        SELECT c.external_id AS annomi_dialogue_id, st.name AS stage,
               ctx.turns AS dialogue_context, r.source AS reflection_source,
               r.text AS reflection, an.pseudonym AS annotator,
               CASE WHEN j.coherent THEN 'Yes' ELSE 'No' END AS coherent_and_context_consistent,
               {", ".join(flag_columns)}
        FROM studies_judgement j
        JOIN studies_assignment a ON a.id = j.assignment_id
        JOIN studies_stage st ON st.id = a.stage_id
        JOIN studies_batch b ON b.id = a.batch_id
        JOIN studies_dialoguecontext c ON c.id = b.context_id
        JOIN ctx ON ctx.id = c.id
        JOIN studies_reflection r ON r.id = j.reflection_id
        JOIN studies_annotator an ON an.id = a.annotator_id
        JOIN studies_annotatorgroup g ON g.id = a.group_id
        WHERE st.study_id = {study_id} AND a.status = 'submitted' AND r.kind <> 'attention_check'
        ORDER BY st.position, c.external_id, g.name, an.number, j.reflection_id
    """


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _staff_session_cookie(*, secret_key: str) -> tuple[str, str]:
    """A logged-in superuser session made through the ORM for a server running with
    ``secret_key`` (it signs the session data and the auth hash): (cookie name, value)."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.test import override_settings

    user_model = get_user_model()
    user = user_model.objects.filter(username="bench-staff").first()
    if user is None:
        user = user_model.objects.create_superuser(
            "bench-staff", password=secrets.token_urlsafe(16)
        )
    with override_settings(SECRET_KEY=secret_key):
        store = import_module(settings.SESSION_ENGINE).SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
    return settings.SESSION_COOKIE_NAME, store.session_key


def _rss(pid: int) -> int:
    import psutil

    return psutil.Process(pid).memory_info().rss


def download_endpoint(*, database_url: str, slug: str, target: Path) -> dict:
    """Serve the site with gunicorn and download the study's published export."""
    import psutil

    secret_key = secrets.token_urlsafe(50)
    cookie_name, cookie = _staff_session_cookie(secret_key=secret_key)
    port = _free_port()
    env = child_env(
        database_url,
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY=secret_key,
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        # Plain HTTP on loopback: no secure-only cookies, no redirect to HTTPS, no HSTS.
        DJANGO_SECURE_COOKIES="false",
        DJANGO_SECURE_SSL_REDIRECT="false",
        DJANGO_HSTS_SECONDS="0",
        DJANGO_LOG_LEVEL="WARNING",
    )
    server = subprocess.Popen(
        [
            str(Path(PYTHON).parent / "gunicorn"),
            "annotation_site.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--timeout",
            "900",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "gunicorn did not start: " + server.stderr.read().decode()[-2000:]
                    ) from None
                time.sleep(0.2)
        headers = {"Cookie": f"{cookie_name}={cookie}", "Host": "127.0.0.1"}
        path = f"/exports/{slug}/annotations.csv"

        def get(query: str = ""):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
            conn.request("GET", path + query, headers=headers)
            return conn, conn.getresponse()

        # Warm-up: a refused option makes the worker load the app, connect and check
        # the session, without exporting.
        conn, response = get("?stage=no-such-stage")
        response.read()
        conn.close()
        if response.status != 400:
            raise RuntimeError(f"warm-up answered {response.status}, expected 400")
        workers = psutil.Process(server.pid).children()
        if len(workers) != 1:
            raise RuntimeError(f"expected one gunicorn worker, found {len(workers)}")
        worker = workers[0].pid
        baseline = _rss(worker)
        peak = [baseline]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], _rss(worker))
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.perf_counter()
        conn, response = get()
        if response.status != 200:
            raise RuntimeError(f"export answered {response.status}: {response.read()[:500]!r}")
        size = 0
        with target.open("wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
                size += len(chunk)
        seconds = time.perf_counter() - started
        conn.close()
        done.set()
        sampler.join()
        peak[0] = max(peak[0], _rss(worker))
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {
        "seconds": seconds,
        "bytes": size,
        "worker_rss_baseline_mb": baseline / 1e6,
        "worker_rss_peak_mb": peak[0] / 1e6,
        "worker_rss_growth_mb": (peak[0] - baseline) / 1e6,
    }


def _data_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b"")) - 1


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def rows_differing(a: Path, b: Path) -> int:
    """How many CSV rows (header included) differ between two files, cell by cell."""
    with a.open(newline="", encoding="utf-8") as fa, b.open(newline="", encoding="utf-8") as fb:
        return sum(ra != rb for ra, rb in zip_longest(csv.reader(fa), csv.reader(fb)))


def bench_export(*, database_url: str, study_id: int, slug: str, workdir: Path) -> dict:
    """Time the floor, the command and the endpoint; check they agree."""
    floor_file, command_file, endpoint_file = (
        workdir / f"{n}.csv" for n in ("floor", "command", "endpoint")
    )
    sql = " ".join(floor_sql(study_id=study_id).split())
    env = child_env(database_url)
    floor = run_measured(
        [
            "psql",
            database_url,
            "-v",
            "ON_ERROR_STOP=1",
            "-qc",
            f"\\copy ({sql}) to '{floor_file}' csv header",
        ],
        env=env,
    )
    command = run_measured(
        [PYTHON, "manage.py", "export_annotations", slug, "--out", str(command_file)], env=env
    )
    endpoint = download_endpoint(database_url=database_url, slug=slug, target=endpoint_file)
    rows = {
        name: _data_lines(p)
        for name, p in (
            ("floor", floor_file),
            ("command", command_file),
            ("endpoint", endpoint_file),
        )
    }
    result = {
        "rows": rows,
        "endpoint_identical_to_command": _digest(endpoint_file) == _digest(command_file),
        "floor_rows_differing": rows_differing(floor_file, command_file),
        "bytes": command_file.stat().st_size,
        "floor_s": round(floor.seconds, 2),
        "command_s": round(command.seconds, 2),
        "command_ratio": round(command.seconds / floor.seconds, 2),
        "command_rss_mib": round(command.max_rss_mib),
        "endpoint_s": round(endpoint["seconds"], 2),
        "endpoint_ratio": round(endpoint["seconds"] / floor.seconds, 2),
        "worker_rss_baseline_mb": round(endpoint["worker_rss_baseline_mb"], 1),
        "worker_rss_growth_mb": round(endpoint["worker_rss_growth_mb"], 1),
    }
    result["consistent"] = (
        len(set(rows.values())) == 1
        and result["endpoint_identical_to_command"]
        and result["floor_rows_differing"] == 0
    )
    result["targets"] = {
        "command_le_2x_floor": result["command_ratio"] <= MAX_RATIO,
        "endpoint_le_2x_floor": result["endpoint_ratio"] <= MAX_RATIO,
        "worker_rss_growth_le_100mb": result["worker_rss_growth_mb"] <= MAX_RSS_GROWTH_MB,
    }
    return result


def results_table(r: dict) -> str:
    def mark(key):
        return "pass" if r["targets"][key] else "FAIL"

    return table(
        ["path", "rows", "seconds", "× floor", "≤2×", "peak RSS", "RSS growth", "≤100 MB"],
        [
            [
                "psql \\copy (floor)",
                f"{r['rows']['floor']:,}",
                f"{r['floor_s']:.1f}",
                "1.00",
                "",
                "",
                "",
                "",
            ],
            [
                "export_annotations",
                f"{r['rows']['command']:,}",
                f"{r['command_s']:.1f}",
                f"{r['command_ratio']:.2f}",
                mark("command_le_2x_floor"),
                f"{r['command_rss_mib']} MiB",
                "",
                "",
            ],
            [
                "GET endpoint (gunicorn)",
                f"{r['rows']['endpoint']:,}",
                f"{r['endpoint_s']:.1f}",
                f"{r['endpoint_ratio']:.2f}",
                mark("endpoint_le_2x_floor"),
                "",
                f"{r['worker_rss_growth_mb']:.1f} MB",
                mark("worker_rss_growth_le_100mb"),
            ],
        ],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgements", type=int, default=1_000_000)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_export")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="Where the CSV files go (default: a temp dir)."
    )
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args(argv)

    database_recreate(args.database_url)
    django_setup(args.database_url)
    from bench.generate import generate_study

    slug = f"bench-export-{args.judgements}"
    generated = generate_study(slug=slug, n_judgements=args.judgements)
    print(
        f"generated {slug}: {generated.n_judgements:,} judgements in {generated.seconds:.1f} s",
        flush=True,
    )
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        result = bench_export(
            database_url=args.database_url,
            study_id=generated.study_id,
            slug=slug,
            workdir=Path(tmp),
        )
    result["size"] = generated.n_judgements
    print(results_table(result))
    print(f"files: {result['bytes'] / 1e6:,.0f} MB each; consistent: {result['consistent']}")
    path = results_write("export", result)
    print(f"Results written to {path}")
    if not args.keep_db:
        from django.db import connections

        from bench.analysis.run import database_drop

        connections.close_all()
        database_drop(args.database_url)
    return 0 if result["consistent"] and all(result["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
