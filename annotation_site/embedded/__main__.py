"""``python -m annotation_site.embedded [status|stop]``: whether the checkout's embedded
servers run, or stop them now (``make clean`` does, before it removes their data)."""

import os
import signal
import sys
import time

from annotation_site.embedded import state_dir, supervisor_record, supervisor_running


def main(argv: list[str]) -> int:
    state = state_dir()
    command = argv[0] if argv else "status"
    if command not in ("status", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    running = state.exists() and supervisor_running(state)
    if command == "status":
        print(f"embedded PostgreSQL and Redis {'running' if running else 'stopped'} ({state})")
        return 0
    signalled = None
    deadline = time.monotonic() + 60
    while running and supervisor_running(state):
        supervisor = supervisor_record(state)  # None while one is starting: ask again
        if supervisor is not None and supervisor != signalled:
            os.kill(supervisor["pid"], signal.SIGTERM)
            signalled = supervisor
        if time.monotonic() > deadline:
            print("the embedded servers did not stop within 60 s", file=sys.stderr)
            return 1
        time.sleep(0.1)
    print(f"embedded PostgreSQL and Redis stopped ({state})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
