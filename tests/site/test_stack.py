"""`make demo` and `make serve` run the web server, a Celery worker and beat
(annotation_site.stack) on the embedded servers: one Ctrl-C stops everything, a
``kill -9`` of the runner leaves nothing that blocks the next run, and a submission is
followed by an automatic analysis run (the demo's short debounce)."""

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import psutil
import psycopg

from annotation_site import embedded
from annotation_site.embedded import supervisor
from tests.site.embedded_helpers import ROOT, own_services_env, run, servers_stopped, wait_for

STOPS_WITHIN = supervisor.GRACE + 30


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=5)
    except urllib.error.HTTPError:
        return True  # an answer all the same
    except OSError:
        return False
    return True


# A parent that waits for the runner, as `make demo` does.
PARENT = [sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])"]


class Stack:
    def __init__(self, state, port: int, *, parent: list[str] = (), options: list[str] = ()):
        self.state, self.port = state, port
        self.log = state.parent / f"stack-{port}.log"
        command = ["-m", "annotation_site.stack", "--port", str(port), *options]
        self.process = subprocess.Popen(
            [*parent, sys.executable, *command],
            cwd=ROOT,
            env=own_services_env(state),
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group of its own, as a terminal gives it
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_until_up(self) -> list[psutil.Process]:
        def up() -> bool:
            assert self.process.poll() is None, self.output()
            out = self.output()
            return "celery@" in out and "beat: Starting" in out and _answers(self.port)

        wait_for(up, timeout=120, what=f"web, worker and beat up:\n{self.output()}")
        children = [
            c
            for c in psutil.Process(self.process.pid).children(recursive=True)
            if "annotation_site.stack" not in c.cmdline()
        ]
        started = {word for c in children for word in c.cmdline()}
        assert {"runserver", "worker", "beat"} <= started, started
        return children


def _migrate(state) -> None:
    done = run(state, "manage.py", "migrate", "-v0")
    assert done.returncode == 0, done.stderr


def _all_gone(processes: list[psutil.Process]) -> bool:
    def alive(process: psutil.Process) -> bool:
        try:
            return process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    return not any(alive(p) for p in processes)


def test_one_ctrl_c_stops_web_worker_beat_and_the_embedded_servers(tmp_path):
    state = tmp_path / "services"
    _migrate(state)
    stack = Stack(state, _free_port())
    children = stack.wait_until_up()
    os.killpg(stack.process.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends
    assert stack.process.wait(timeout=60) == 0, stack.output()
    assert _all_gone(children)
    assert not _answers(stack.port)
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")
    assert not (state / "stack.json").exists()


def test_a_second_runner_in_the_checkout_is_refused_and_stops_nothing(tmp_path):
    state = tmp_path / "services"
    _migrate(state)
    first = Stack(state, _free_port())
    children = first.wait_until_up()
    try:
        second = run(state, "-m", "annotation_site.stack", "--port", str(_free_port()))
        assert second.returncode == 1
        assert "already runs in this checkout" in second.stderr
        assert all(p.is_running() for p in children) and _answers(first.port)
    finally:
        os.killpg(first.process.pid, signal.SIGINT)
        first.process.wait(timeout=60)


def test_a_killed_runner_leaves_nothing_that_blocks_the_next_run(tmp_path):
    state = tmp_path / "services"
    _migrate(state)
    port = _free_port()
    stack = Stack(state, port)
    children = stack.wait_until_up()
    stack.process.kill()  # kill -9 of the runner alone
    stack.process.wait()
    wait_for(lambda: _all_gone(children), timeout=60, what="children gone")
    wait_for(lambda: not _answers(port), timeout=30, what="port free")
    again = Stack(state, port)
    try:
        again.wait_until_up()
    finally:
        os.killpg(again.process.pid, signal.SIGINT)
        again.process.wait(timeout=60)
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")


def test_a_killed_parent_of_the_runner_stops_everything(tmp_path):
    """`make demo` killed with kill -9: its runner is told and stops the rest."""
    state = tmp_path / "services"
    _migrate(state)
    stack = Stack(state, _free_port(), parent=PARENT)
    stack.wait_until_up()
    processes = psutil.Process(stack.process.pid).children(recursive=True)
    stack.process.kill()  # the parent only
    stack.process.wait()
    wait_for(lambda: _all_gone(processes), timeout=60, what="runner and children gone")
    assert not _answers(stack.port)
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")


# A newcomer of the demo does one batch through the services, as the pages would.
SUBMIT = """
import django; django.setup()
from django.utils import timezone
from studies.models import Annotator, Reflection
from studies.services import (Answer, annotator_complete_tutorial, annotator_consent,
    assignment_claim, assignment_submit, consent_version_current, judgement_record)
newcomer = Annotator.objects.get(study__slug="demo", consented_at__isnull=True)
annotator_consent(annotator=newcomer, version=consent_version_current(study=newcomer.study))
annotator_complete_tutorial(annotator=newcomer)
assignment = assignment_claim(annotator=newcomer)
for reflection in Reflection.objects.filter(pk__in=assignment.order):
    off = reflection.kind == Reflection.Kind.ATTENTION_CHECK
    answer = (Answer(coherent=False, categories=frozenset({"off_topic"})) if off
              else Answer(coherent=True, empathy=4))
    judgement_record(assignment=assignment, reflection=reflection, answer=answer)
print(timezone.now().isoformat())
assignment_submit(assignment=assignment)
"""


def test_a_submission_in_the_demo_is_followed_by_an_automatic_analysis(tmp_path):
    state = tmp_path / "services"
    _migrate(state)
    loaded = run(state, "manage.py", "load_demo")
    assert loaded.returncode == 0, loaded.stderr
    stack = Stack(state, _free_port(), options=["--demo"])  # as `make demo` runs it
    try:
        stack.wait_until_up()
        done = run(state, "-c", SUBMIT)
        assert done.returncode == 0, done.stderr
        dsn = {"host": str(embedded.socket_dir(state)), "user": "postgres", "dbname": "reflections"}

        def automatic_run_done() -> bool:
            with psycopg.connect(**dsn) as conn:
                return bool(
                    conn.execute(
                        "SELECT 1 FROM analysis_analysisrun WHERE trigger = 'auto'"
                        " AND status = 'done' AND data_through >= %s::timestamptz",
                        [done.stdout.strip()],
                    ).fetchone()
                )

        # The demo's promise: within two minutes of the submission.
        wait_for(automatic_run_done, timeout=120, what=f"automatic run:\n{stack.output()[-5000:]}")
    finally:
        os.killpg(stack.process.pid, signal.SIGINT)
        stack.process.wait(timeout=60)
