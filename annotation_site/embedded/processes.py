"""Which process a recorded pid still is: a pid plus the start time of its process, so
that a pid the system has since given to another program is never taken for it."""

import psutil


def started_at(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def record(pid: int) -> dict:
    return {"pid": pid, "started": started_at(pid)}


def same_process(entry: dict) -> bool:
    """Whether ``entry`` (a :func:`record`) names a process that still runs; a damaged
    entry names none."""
    pid, started = entry.get("pid"), entry.get("started")
    return isinstance(pid, int) and started is not None and started_at(pid) == started


def running_as(pid: int, *, executable: str, argument: str) -> bool:
    """Whether ``pid`` runs the program named ``executable`` with ``argument`` among
    its arguments (e.g. a server with its data directory): a stale pid file's pid
    that now belongs to another program is not signalled."""
    try:
        # Servers may rewrite their title (Redis shows "redis-server unixsocket:…").
        command = " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return False
    return executable in command and argument in command
