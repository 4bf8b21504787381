"""The embedded PostgreSQL and Redis: started by the first process that reads the
settings with nothing configured, shared by every process of the checkout, stopped
once the last of them has exited, however it exited."""

import os
import signal
import subprocess

import psycopg
import redis

from annotation_site import embedded
from annotation_site.embedded import postgres, supervisor
from tests.site.embedded_helpers import (
    python,
    run,
    servers_stopped,
    wait_for,
)

# Connects as Django would, then waits to be told to exit (a line on stdin).
HOLDER = (
    "import sys, django; django.setup()\n"
    "from django.db import connection\n"
    "from django.core.cache import cache\n"
    "with connection.cursor() as c: c.execute('SHOW server_version')\n"
    "cache.set('k', 'v')\n"
    "print(connection.settings_dict['HOST'], flush=True)\n"
    "sys.stdin.readline()\n"
)
STOPS_WITHIN = supervisor.GRACE + 30


def _holder(state):
    process = python(state, HOLDER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    sockets = process.stdout.readline().strip()
    assert sockets, "the holder did not connect"
    return process, sockets


def test_the_first_process_starts_both_servers_and_a_second_shares_them(tmp_path):
    state = tmp_path / "services"
    first, sockets = _holder(state)
    second, sockets_again = _holder(state)
    try:
        assert sockets == sockets_again == str(embedded.socket_dir(state))
        with psycopg.connect(host=sockets, user="postgres", dbname="reflections") as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
        assert version.startswith("18.")
        assert redis.Redis(unix_socket_path=f"{sockets}/redis.sock").ping()
        assert (state / "postgres" / "PG_VERSION").exists()  # data in the state directory
    finally:
        first.communicate("\n", timeout=30)
        assert not servers_stopped(state)  # the second still uses them
        second.communicate("\n", timeout=30)
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")
    assert not (state / "ready.json").exists()


def test_a_holder_killed_with_sigkill_lets_the_servers_stop(tmp_path):
    state = tmp_path / "services"
    holder, _ = _holder(state)
    holder.kill()
    holder.wait()
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")


def test_data_survive_a_restart_and_a_killed_supervisor_blocks_nothing(tmp_path):
    state = tmp_path / "services"
    holder, sockets = _holder(state)
    with psycopg.connect(host=sockets, user="postgres", dbname="reflections") as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (7)")
    # The supervisor dies without stopping anything: PostgreSQL and Redis run on.
    os.kill(embedded.supervisor_record(state)["pid"], signal.SIGKILL)
    wait_for(lambda: not embedded.supervisor_running(state), timeout=10, what="lock free")
    holder.communicate("\n", timeout=30)
    assert postgres.running_pid(state / "postgres") is not None
    # The next process starts a supervisor that restarts them, data included.
    again, sockets = _holder(state)
    try:
        with psycopg.connect(host=sockets, user="postgres", dbname="reflections") as conn:
            assert conn.execute("SELECT n FROM kept").fetchone() == (7,)
    finally:
        again.communicate("\n", timeout=30)
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")


def test_a_long_checkout_path_keeps_the_sockets_in_a_short_directory(tmp_path):
    state = tmp_path / ("a-rather-long-directory-name-" * 4) / "services"
    sockets = embedded.socket_dir(state)
    assert not sockets.is_relative_to(state)
    assert len(os.fsencode(sockets / ".s.PGSQL.5432")) < 100
    assert embedded.socket_dir(state) == sockets  # the same for every process


def test_stop_command_stops_running_servers(tmp_path):
    state = tmp_path / "services"
    holder, _ = _holder(state)
    try:
        done = run(state, "-m", "annotation_site.embedded", "stop")
        assert done.returncode == 0, done.stderr
        assert "stopped" in done.stdout
        assert servers_stopped(state)
    finally:
        holder.communicate("\n", timeout=30)


def test_a_database_url_of_another_engine_is_refused_naming_postgresql(tmp_path):
    sqlite = f"sqlite:///{tmp_path}/db.sqlite3"
    done = run(tmp_path / "services", "manage.py", "check", DATABASE_URL=sqlite)
    assert done.returncode != 0
    assert "PostgreSQL only" in done.stderr
    assert "django.db.backends.sqlite3" in done.stderr
    assert not (tmp_path / "db.sqlite3").exists()
    assert not (tmp_path / "services").exists()  # nothing embedded was started either


def test_a_deployment_without_its_servers_is_refused_naming_what_to_set(tmp_path):
    done = run(
        tmp_path / "services",
        "manage.py",
        "check",
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY="x" * 50,
        CACHE_URL="locmemcache://",
    )
    assert done.returncode != 0
    assert "With DJANGO_DEBUG=false, set DATABASE_URL, CELERY_BROKER_URL:" in done.stderr
    assert not (tmp_path / "services").exists()  # nothing embedded was started


def test_stale_pid_files_naming_another_process_neither_block_nor_signal_it(tmp_path):
    """After a crash the servers' pid files may name a pid the system has given to
    another program (here this test's own): it is left alone and the servers start."""
    state = tmp_path / "services"
    holder, _ = _holder(state)
    holder.communicate("\n", timeout=30)
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")
    sockets = embedded.socket_dir(state)
    (state / "postgres" / "postmaster.pid").write_text(f"{os.getpid()}\n{state / 'postgres'}\n")
    (sockets / "redis.pid").write_text(f"{os.getpid()}\n")
    again, _ = _holder(state)  # this process would have had a SIGTERM
    again.communicate("\n", timeout=30)
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")


def test_servers_that_cannot_start_are_reported_with_their_log_and_nothing_runs(tmp_path):
    state = tmp_path / "services"
    done = run(state, "manage.py", "check", REDIS_SERVER=str(tmp_path / "no-redis-server"))
    assert done.returncode != 0
    assert "The embedded PostgreSQL and Redis did not start" in done.stderr
    assert "no-redis-server" in done.stderr  # the supervisor's log says what failed
    wait_for(lambda: servers_stopped(state), timeout=STOPS_WITHIN, what="servers stopped")


def test_an_unknown_command_is_refused_with_the_usage_and_starts_nothing(tmp_path):
    state = tmp_path / "services"
    done = run(state, "-m", "annotation_site.embedded", "restart")
    assert done.returncode == 2
    assert "[status|stop]" in done.stderr
    assert not state.exists()
