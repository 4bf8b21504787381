"""`make demo` and `make serve`: the web server, a Celery worker and Celery beat in one
terminal, as the production section of the README runs them, with their output
prefixed by their names.

One Ctrl-C (or a SIGTERM) stops all three. They also end when this runner ends, how
ever it ends: on Linux each is asked to stop when its parent dies (PR_SET_PDEATHSIG),
and everywhere the next run stops what an earlier one left running (``stack.json`` in
the embedded services' directory), so a ``kill -9`` leaves no server holding the port.
The embedded PostgreSQL and Redis stop a few seconds after the last of them exits
(``annotation_site.embedded``).

    python -m annotation_site.stack [--host 127.0.0.1] [--port 8000]
"""

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from annotation_site import embedded

STOP_TIMEOUT = 15


# Looked up here, not in the child between fork and exec (no loading there).
_PRCTL = ctypes.CDLL(None).prctl if sys.platform.startswith("linux") else None
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Linux: deliver SIGTERM to this process when its parent exits."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def commands(*, host: str, port: int, state: Path) -> dict[str, list[str]]:
    python = sys.executable
    return {
        "web": [python, "manage.py", "runserver", "--noreload", f"{host}:{port}"],
        "worker": [
            python, "-m", "celery", "-A", "annotation_site", "worker",
            "--loglevel=info", "--concurrency=2",
        ],
        "beat": [
            python, "-m", "celery", "-A", "annotation_site", "beat",
            "--loglevel=info", "--schedule", str(state / "celerybeat-schedule"),
        ],
    }  # fmt: skip


def _started_at(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _stop_leftovers(record: Path) -> None:
    """Stop the processes an earlier runner started and did not stop (it was killed)."""
    try:
        earlier = json.loads(record.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return
    for pid, started in earlier.items():
        if _started_at(int(pid)) == started:
            print(f"stopping process {pid}, left running by an earlier run", flush=True)
            os.kill(int(pid), signal.SIGKILL)
    record.unlink(missing_ok=True)


def _relay(name: str, stream) -> None:
    width = 6
    for line in iter(stream.readline, b""):
        sys.stdout.buffer.write(f"{name:<{width}} | ".encode() + line)
        sys.stdout.flush()


def run(*, host: str, port: int) -> int:
    _die_with_parent()
    state = embedded.state_dir()
    state.mkdir(parents=True, exist_ok=True)
    record = state / "stack.json"
    _stop_leftovers(record)
    if not all(os.environ.get(k) for k in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL")):
        embedded.sockets()  # up before the three start, and held while this runs
    processes: dict[str, subprocess.Popen] = {}
    stopping = threading.Event()

    def stop(*_):
        stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for name, command in commands(host=host, port=port, state=state).items():
        processes[name] = subprocess.Popen(
            command,
            cwd=embedded.CHECKOUT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
        threading.Thread(target=_relay, args=(name, processes[name].stdout), daemon=True).start()
    record.write_text(json.dumps({str(p.pid): _started_at(p.pid) for p in processes.values()}))
    status = 0
    while not stopping.wait(0.5):
        ended = {n: p.returncode for n, p in processes.items() if p.poll() is not None}
        if ended:
            print(f"{', '.join(ended)} exited; stopping the others", flush=True)
            status = max(ended.values()) or 1
            break
    for process in processes.values():
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT
    for process in processes.values():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    record.unlink(missing_ok=True)
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    return run(host=args.host, port=args.port)


if __name__ == "__main__":
    sys.exit(main())
