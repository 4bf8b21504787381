"""Shared plumbing of the benchmarks: a throwaway database, timed subprocesses with
their peak RSS, result files."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PYTHON = sys.executable


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


@dataclass(frozen=True)
class Measurement:
    seconds: float
    max_rss_mib: float
    stdout: str


def run_measured(args: list[str], *, env: dict[str, str]) -> Measurement:
    """Run ``args`` under ``/usr/bin/time`` and return its wall time and the peak
    resident set size of the process (GNU time's %M, in KiB). Raises on failure."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        started = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", report.name, *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        if done.returncode:
            raise RuntimeError(
                f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}"
            )
        max_rss_kib = int(report.read().strip().splitlines()[-1])
    return Measurement(seconds=seconds, max_rss_mib=max_rss_kib / 1024, stdout=done.stdout)


# The benchmarks measure the database paths: no broker (``analyze`` computes in-process,
# nothing is sent) and each process's own cache, rather than the checkout's embedded
# Redis.
NO_REDIS = {"CELERY_BROKER_URL": "memory://", "CACHE_URL": "locmemcache://"}


def child_env(database_url: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "annotation_site.settings",
        **NO_REDIS,
    }
    env.update(extra)
    return env


def database_url_of(settings_dict: dict) -> str:
    """postgres:// URL of a Django connection's settings (for subprocesses); a Unix
    socket directory (the embedded server's) goes in the ``host`` parameter."""
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    if host.startswith("/"):
        return f"postgres://{user}{password}@{port}/{settings_dict['NAME']}?host={quote(host)}"
    return f"postgres://{user}{password}@{host}{port}/{settings_dict['NAME']}"


def database_recreate(database_url: str) -> None:
    """Drop and create the database named in ``database_url`` (connecting to the
    server's maintenance database ``postgres`` to do so). Refuses shared names."""
    import psycopg

    parts = urlsplit(database_url)
    name = parts.path.lstrip("/")
    if name in ("postgres", "template0", "template1", "test_postgres") or not name.startswith(
        "bench"
    ):
        raise ValueError(
            f"Refusing to recreate database {name!r}: benchmark databases start with 'bench'."
        )
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def django_setup(database_url: str) -> None:
    """Point this process at ``database_url`` and migrate it."""
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.update(NO_REDIS)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def results_write(name: str, payload: dict, *, directory: Path = RESULTS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    payload = {"benchmark": name, "finished_at": stamp, "command": " ".join(sys.argv), **payload}
    path = directory / f"{name}-{stamp}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    (directory / f"{name}-latest.json").write_text(
        path.read_text(encoding="utf-8"), encoding="utf-8"
    )
    return path


def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)
