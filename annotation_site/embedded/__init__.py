"""PostgreSQL and Redis for a checkout with nothing configured: the demo, the test suite
and a developer's server use them when ``DATABASE_URL``, ``CELERY_BROKER_URL`` or
``CACHE_URL`` is unset (README "The embedded services").

Both servers come from wheels that ``make install`` installs, keep their files in the
checkout (``.embedded/``, or ``EMBEDDED_SERVICES_DIR``) and listen on Unix sockets only.
They live as long as a process uses them: each process that reads the settings
registers itself as a *holder*; a supervisor process, started by the first holder,
starts the servers and stops them a few seconds after the last holder has exited, how
ever it exited (a Ctrl-C, ``kill -9``). Two checkouts have two sets of servers.
POSIX systems only (Linux, macOS): the locks are ``flock`` locks.
"""

import fcntl
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from annotation_site.embedded import postgres, redis

CHECKOUT = Path(__file__).resolve().parents[2]
# A server that takes longer than this to come up is reported with its log.
START_TIMEOUT = 120


class EmbeddedServicesError(RuntimeError):
    """The embedded servers could not be started; the message says why and where
    their logs are."""


def state_dir() -> Path:
    return Path(os.environ.get("EMBEDDED_SERVICES_DIR") or CHECKOUT / ".embedded").resolve()


def socket_dir(state: Path) -> Path:
    """Where the servers' sockets live: in the state directory when its path is short
    enough for a Unix socket (at most about 107 bytes, and a clone's path is not ours to
    choose), else a directory in the temporary directory named after it."""
    inside = state / "run"
    if len(os.fsencode(inside)) + len("/.s.PGSQL.5432") < 100:
        return inside
    digest = hashlib.sha256(os.fsencode(state)).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"rcs-{os.getuid()}-{digest}"


def _lock(path: Path, *, blocking: bool):
    """An open file holding an exclusive ``flock`` on ``path``, or None when another
    process holds it and ``blocking`` is false."""
    handle = path.open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        handle.close()
        return None
    return handle


def supervisor_running(state: Path) -> bool:
    handle = _lock(state / "supervisor.lock", blocking=False)
    if handle is None:
        return True
    handle.close()
    return False


def _started_at(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def holders_live(state: Path) -> list[int]:
    """The processes registered as holders that are still running, forgetting the others
    (a pid reused by another program does not count: its start time differs).
    Must be called holding ``holders.lock``."""
    live = []
    for entry in (state / "holders").glob("*"):
        pid = int(entry.name)
        started = _started_at(pid)
        if started is not None and abs(started - float(entry.read_text() or 0)) < 1:
            live.append(pid)
        else:
            entry.unlink(missing_ok=True)
    return live


def _hold(state: Path) -> None:
    holders = state / "holders"
    holders.mkdir(parents=True, exist_ok=True)
    entry = holders / str(os.getpid())
    lock = _lock(state / "holders.lock", blocking=True)
    try:
        entry.write_text(repr(_started_at(os.getpid())))
    finally:
        lock.close()

    import atexit

    atexit.register(entry.unlink, missing_ok=True)


def _ready(state: Path) -> dict | None:
    try:
        return json.loads((state / "ready.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


@functools.cache
def sockets() -> Path:
    """Register this process as a holder, start the servers if they are not running, and
    return the directory of their sockets. Raises :class:`EmbeddedServicesError`."""
    state = state_dir()
    state.mkdir(parents=True, exist_ok=True)
    _hold(state)
    log = state / "supervisor.log"
    spawned = None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if supervisor_running(state):
            ready = _ready(state)
            if ready:
                return Path(ready["socket_dir"])
        elif spawned is None or spawned.poll() is not None:
            if spawned is not None and spawned.returncode:
                raise EmbeddedServicesError(_failure(state, log))
            # Its own session: a Ctrl-C meant for the demo does not reach it; it stops
            # the servers once the demo's processes are gone.
            with log.open("a") as out:
                spawned = subprocess.Popen(
                    [sys.executable, "-m", "annotation_site.embedded.supervisor", str(state)],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    cwd=CHECKOUT,
                )
        time.sleep(0.05)
    raise EmbeddedServicesError(_failure(state, log))


def _failure(state: Path, log: Path) -> str:
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    return (
        f"The embedded PostgreSQL and Redis did not start (state in {state}). Set "
        "DATABASE_URL, CELERY_BROKER_URL and CACHE_URL to use servers of your own, or see "
        f"the logs in that directory.\n{tail}"
    )


def database_settings() -> dict:
    return postgres.settings(socket_dir=sockets())


def broker_url(*, db: int = redis.BROKER_DB) -> str:
    return redis.broker_url(socket_dir=sockets(), db=db)


def cache_settings(*, db: int = redis.CACHE_DB) -> dict:
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": redis.cache_location(socket_dir=sockets(), db=db),
    }
