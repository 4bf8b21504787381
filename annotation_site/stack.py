"""`make demo` and `make serve`: the web server, a Celery worker and Celery beat in one
terminal, as production runs them (docs/operators/deployment.md), with their output
prefixed by their names.

One Ctrl-C (or a SIGTERM) stops all three. They also end when this runner ends, how
ever it ends: on Linux each is asked to stop when its parent dies (PR_SET_PDEATHSIG),
and everywhere the next run stops what an earlier one left running (``stack.json`` in
the embedded services' directory), so a ``kill -9`` leaves no server holding the port.
One runner at a time per checkout (``stack.lock``). The embedded PostgreSQL and Redis
stop a few seconds after the last of them exits (``annotation_site.embedded``).

    python -m annotation_site.stack [--host 127.0.0.1] [--port 8000] [--demo]
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
from annotation_site.embedded.processes import record, same_process

STOP_TIMEOUT = 15
# `make demo`: an automatic analysis within about a minute of a submission (debounce and
# beat interval, in seconds); the environment's own values win.
DEMO_ENV = {"ANALYSIS_AUTO_DELAY": "30", "ANALYSIS_AUTO_INTERVAL": "15"}


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


def _stop_leftovers(path: Path) -> None:
    """Stop the processes an earlier runner started and did not stop (it was killed).
    Called holding ``stack.lock``, so that runner is gone."""
    try:
        earlier = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return
    for entry in earlier:
        if same_process(entry):
            print(f"stopping process {entry['pid']}, left running by an earlier run", flush=True)
            os.kill(entry["pid"], signal.SIGKILL)
    path.unlink(missing_ok=True)


def _relay(name: str, stream) -> None:
    width = 6
    for line in iter(stream.readline, b""):
        sys.stdout.buffer.write(f"{name:<{width}} | ".encode() + line)
        sys.stdout.flush()


def run(*, host: str, port: int, demo: bool = False) -> int:
    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:
        return 1  # the parent died before it could be watched
    state = embedded.state_dir()
    state.mkdir(parents=True, exist_ok=True)
    lock = embedded.lock_file(state / "stack.lock", blocking=False)
    if lock is None:
        print(
            "`make demo` or `make serve` already runs in this checkout: stop it first "
            "(Ctrl-C in its terminal).",
            file=sys.stderr,
        )
        return 1
    children = state / "stack.json"
    _stop_leftovers(children)
    processes: dict[str, subprocess.Popen] = {}
    stopping = threading.Event()

    def stop(*_):
        stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    env = {**DEMO_ENV, **os.environ} if demo else None
    for name, command in commands(host=host, port=port, state=state).items():
        processes[name] = subprocess.Popen(
            command,
            cwd=embedded.CHECKOUT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
    children.write_text(json.dumps([record(p.pid) for p in processes.values()]))
    # Started after every fork: no thread runs while a child is between fork and exec.
    for name, process in processes.items():
        threading.Thread(target=_relay, args=(name, process.stdout), daemon=True).start()
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
    children.unlink(missing_ok=True)
    lock.close()
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--demo", action="store_true", help="short automatic-analysis delays (make demo)"
    )
    args = parser.parse_args()
    return run(host=args.host, port=args.port, demo=args.demo)


if __name__ == "__main__":
    sys.exit(main())
