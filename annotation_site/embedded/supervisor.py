"""Runs the embedded PostgreSQL and Redis of a state directory while holders live.

Started by :func:`annotation_site.embedded.sockets` (``python -m`` with the state
directory), in a session of its own. It holds ``supervisor.lock`` for its whole life,
so at most one runs per directory; writes ``ready.json`` once both servers answer;
restarts a server that died; and stops both, then exits, once no holder has run for
``GRACE`` seconds (the commands of ``make demo`` follow one another within it).
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

from annotation_site.embedded import holders_live, lock_file, postgres, redis, socket_dir
from annotation_site.embedded.processes import record

GRACE = 5.0
POLL = 0.5


def _serve(state: Path) -> None:
    sockets = socket_dir(state)
    data, pidfile = state / "postgres", sockets / "redis.pid"
    ready = state / "ready.json"

    def start() -> None:
        ready.unlink(missing_ok=True)
        postgres.start(data=data, socket_dir=sockets, log=state / "postgres.log")
        redis.start(socket_dir=sockets, pidfile=pidfile, log=state / "redis.log")
        tmp = state / "ready.json.tmp"
        tmp.write_text(json.dumps({"socket_dir": str(sockets), "supervisor": record(os.getpid())}))
        tmp.replace(ready)
        print(f"embedded PostgreSQL and Redis ready on {sockets}", flush=True)

    try:
        start()
        idle_since = None
        while True:
            time.sleep(POLL)
            lock = lock_file(state / "holders.lock", blocking=True)
            try:
                if holders_live(state):
                    idle_since = None
                else:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since >= GRACE:
                        ready.unlink(missing_ok=True)
                        return
            finally:
                lock.close()
            if postgres.running_pid(data) is None or redis.running_pid(pidfile) is None:
                print("a server stopped; starting it again", flush=True)
                start()
    finally:
        # A second signal must not cut the stop short and leave the servers running.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        ready.unlink(missing_ok=True)
        redis.stop(pidfile=pidfile)
        postgres.stop(data=data)
        print("embedded PostgreSQL and Redis stopped", flush=True)


def main(state: Path) -> int:
    lock = lock_file(state / "supervisor.lock", blocking=False)
    if lock is None:
        return 0  # another supervisor serves this directory
    (state / "supervisor.pid").write_text(json.dumps(record(os.getpid())))
    # SIGTERM (a shutdown, `kill`) stops the servers as the last holder leaving does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    _serve(state)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
