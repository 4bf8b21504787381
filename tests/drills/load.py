"""The load of the web drills: annotators in threads revising their batch's answers
through gunicorn, each remembering what the server acknowledged."""

import threading
import time
from dataclasses import dataclass, field

import httpx

from .conftest import Annotator, answer_for


@dataclass
class Outcome:
    """What one annotator's browser saw."""

    acknowledged: dict[int, tuple] = field(default_factory=dict)  # item -> last 2xx value
    statuses: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # connection errors, timeouts
    error_pages: list[str] = field(default_factory=list)  # bodies of 5xx answers
    slowest: float = 0.0
    gave_up: list[int] = field(default_factory=list)  # items never acknowledged
    history: list[tuple] = field(default_factory=list)  # (item, value, outcome, seconds)


def _saves(annotator: Annotator, index: int, n_items: int, stop: threading.Event, out: Outcome):
    attempt = 0
    while not stop.is_set():
        for number in range(1, n_items + 1):
            # Like a person pressing Save again: retry an item until it is acknowledged
            # (bounded, so a drill that never recovers still ends).
            for _ in range(200):
                attempt += 1
                answer, expected = answer_for(index, number, attempt)
                started = time.monotonic()
                try:
                    response = annotator.save(number, answer)
                except httpx.HTTPError as exc:  # worker killed mid-request, server down
                    out.failures.append(type(exc).__name__)
                    out.history.append(
                        (number, expected, type(exc).__name__, time.monotonic() - started)
                    )
                    time.sleep(0.05)
                    continue
                finally:
                    out.slowest = max(out.slowest, time.monotonic() - started)
                out.statuses.append(response.status_code)
                out.history.append(
                    (number, expected, response.status_code, time.monotonic() - started)
                )
                if 200 <= response.status_code < 300:
                    out.acknowledged[number] = expected
                    break
                if response.status_code >= 500:
                    out.error_pages.append(response.text)
                time.sleep(0.05)
            else:
                out.gave_up.append(number)


def run_load(annotators: list[Annotator], n_items: int, during) -> list[Outcome]:
    """Keep every annotator saving while ``during()`` runs (the fault); then let each
    finish the item it is on (its last save acknowledged)."""
    stop = threading.Event()
    outcomes = [Outcome() for _ in annotators]
    threads = [
        threading.Thread(target=_saves, args=(a, i, n_items, stop, outcomes[i]), daemon=True)
        for i, a in enumerate(annotators)
    ]
    for thread in threads:
        thread.start()
    try:
        during()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a load thread hangs"
    return outcomes
