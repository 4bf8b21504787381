"""Processes on embedded servers of their own (a directory of the test's), so that the
tests of starting and stopping them never touch the servers the suite runs on."""

import os
import subprocess
import sys
import time
from pathlib import Path

from annotation_site import embedded
from annotation_site.embedded import postgres

ROOT = Path(__file__).resolve().parents[2]


def own_services_env(state: Path, **extra: str) -> dict[str, str]:
    """The environment of a process that uses the embedded servers of ``state``: the
    three settings empty (which a checkout's .env does not override) mean embedded."""
    return {
        **os.environ,
        "DATABASE_URL": "",
        "CELERY_BROKER_URL": "",
        "CACHE_URL": "",
        "EMBEDDED_SERVICES_DIR": str(state),
        **extra,
    }


def run(state: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``python *args`` on the servers of ``state``, to its end (at most 5 minutes)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=own_services_env(state, **env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def python(state: Path, code: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, env=own_services_env(state), **kwargs
    )


def wait_for(condition, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.1)


def servers_stopped(state: Path) -> bool:
    return (
        not embedded.supervisor_running(state) and postgres.running_pid(state / "postgres") is None
    )
