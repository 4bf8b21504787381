"""Machinery of the fault drills: PRIVATE service instances that a drill may kill.

The shared PostgreSQL and Redis on this machine (and in CI) serve other test runs at
the same time, so no drill ever stops them. Each drill gets instead:

* ``private_postgres``: a throwaway PostgreSQL cluster (``initdb`` into a temp dir,
  trust auth, a free port on 127.0.0.1, its socket in the temp dir), migrated once
  into a template database; ``drill_db`` copies the template for each drill;
* ``private_redis``: a ``redis-server`` subprocess on a free port, stoppable and
  restartable on the same port;
* ``gunicorn_app``: gunicorn with production settings (DEBUG off) against those;
* ``celery_worker``: a Celery worker against those.

Teardown kills every process a drill started and removes the temp dirs. Without
the PostgreSQL server binaries or ``redis-server`` the drills are skipped with a
reason; in CI (CI=true) that is a failure (tests/conftest.py's rule).
"""

import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]


def _pg_bin() -> Path:
    """The newest installed PostgreSQL server binaries (Debian layout), or DRILL_PG_BIN."""
    if os.environ.get("DRILL_PG_BIN"):
        return Path(os.environ["DRILL_PG_BIN"])
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name.split(".")[0])
    )
    return found[-1] if found else Path("/usr/lib/postgresql/15/bin")


PG_BIN = _pg_bin()
SECRET_KEY = "drill-secret-key-not-for-production-0123456789abcdefghijklmnop"


def _missing(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI must run the fault drills: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, *, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def _stop(proc: subprocess.Popen | None, *, group: bool = False, timeout: float = 10) -> None:
    """Terminate, then kill, a process we started (its process group when ``group``)."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        if group:
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        proc.wait(timeout=timeout)


# --------------------------------------------------------------------------- PostgreSQL


@dataclass
class PrivatePostgres:
    """A PostgreSQL cluster of our own; ``stop``/``start``/``restart`` are the drill."""

    base: Path
    port: int
    as_postgres: list[str]  # ``runuser -u postgres --`` when we are root

    @property
    def data(self) -> Path:
        return self.base / "data"

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def pg_ctl(self, *args: str, timeout: float = 60) -> None:
        subprocess.run(
            [*self.as_postgres, str(PG_BIN / "pg_ctl"), "-D", str(self.data), *args],
            check=True,
            timeout=timeout,
            stdout=subprocess.DEVNULL,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1"
        self.pg_ctl("start", "-w", "-t", "60", "-l", str(self.base / "server.log"), "-o", options)

    def stop(self, mode: str = "fast") -> None:
        self.pg_ctl("stop", "-w", "-m", mode)

    def connect(self, dbname: str = "postgres", **kwargs) -> psycopg.Connection:
        return psycopg.connect(self.url(dbname), connect_timeout=5, **kwargs)

    def is_up(self) -> bool:
        try:
            with self.connect():
                return True
        except psycopg.OperationalError:
            return False


@pytest.fixture(scope="session")
def private_postgres():
    for binary in ("initdb", "pg_ctl", "postgres"):
        if not (PG_BIN / binary).exists():
            _missing(f"the drills need the PostgreSQL server binaries: no {PG_BIN / binary}")
    as_postgres: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="drill-pg-"))
    if os.geteuid() == 0:  # initdb refuses to run as root
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            _missing("running as root, the drills need the postgres OS user for initdb")
        os.chown(base, user.pw_uid, user.pw_gid)
        as_postgres = ["runuser", "-u", "postgres", "--"]
    cluster = PrivatePostgres(base=base, port=free_port(), as_postgres=as_postgres)
    try:
        subprocess.run(
            [
                *as_postgres,
                str(PG_BIN / "initdb"),
                "-D",
                str(cluster.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            check=True,
            timeout=120,
            stdout=subprocess.DEVNULL,
        )
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)


def base_env(**overrides) -> dict[str, str]:
    """The production-like environment of every drill process (DEBUG off)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "CELERY_", "ANALYSIS_", "DATABASE_URL", "CACHE_URL"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="annotation_site.settings",
        # Each process's own memory: the drills kill the private Redis to test the
        # broker's loss, not the cache's.
        CACHE_URL="locmemcache://",
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY=SECRET_KEY,
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        # Plain HTTP on loopback: secure-only cookies would never come back, and
        # neither the redirect to HTTPS nor HSTS applies.
        DJANGO_SECURE_COOKIES="false",
        DJANGO_SECURE_SSL_REDIRECT="false",
        DJANGO_HSTS_SECONDS="0",
        DJANGO_LOG_LEVEL="WARNING",
        ANALYSIS_AUTO_RUN="false",
        PYTHONUNBUFFERED="1",
    )
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def run_python(args: list[str], env: dict[str, str], timeout: float = 180) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="session")
def drill_static(tmp_path_factory) -> Path:
    """Collected static files (DEBUG off serves them through WhiteNoise's manifest)."""
    root = tmp_path_factory.mktemp("static")
    run_python(
        ["manage.py", "collectstatic", "--noinput", "-v0"],
        # Settings ask for the services with DEBUG off; collectstatic uses none of them.
        base_env(
            DJANGO_STATIC_ROOT=root,
            DATABASE_URL="postgres://unused@127.0.0.1:1/unused",
            CELERY_BROKER_URL="memory://",
        ),
    )
    return root


@pytest.fixture(scope="session")
def migrated_template(private_postgres) -> str:
    """A migrated database that each drill copies (faster than migrating per drill)."""
    with private_postgres.connect(autocommit=True) as conn:
        conn.execute("CREATE DATABASE drill_template")
    run_python(
        ["manage.py", "migrate", "--noinput", "-v0"],
        base_env(
            DATABASE_URL=private_postgres.url("drill_template"), CELERY_BROKER_URL="memory://"
        ),
    )
    return "drill_template"


@dataclass
class DrillDatabase:
    cluster: PrivatePostgres
    name: str

    @property
    def url(self) -> str:
        return self.cluster.url(self.name)

    def query(self, sql: str, params=()) -> list[tuple]:
        with self.cluster.connect(self.name) as conn:
            return conn.execute(sql, params).fetchall()


def database_copy(cluster: PrivatePostgres, name: str, template: str) -> DrillDatabase:
    with cluster.connect(autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return DrillDatabase(cluster=cluster, name=name)


@pytest.fixture
def drill_db(private_postgres, migrated_template, request) -> DrillDatabase:
    """A fresh migrated database for one drill."""
    name = f"drill_{request.node.name.replace('test_', '')[:40].lower()}"
    return database_copy(private_postgres, name, migrated_template)


# --------------------------------------------------------------------------- Redis


@dataclass
class PrivateRedis:
    base: Path
    port: int
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def start(self) -> None:
        log = (self.base / "redis.log").open("a")
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                str(self.base),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        wait_until(self.ping, timeout=15, what="the private redis-server")

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None

    def kill(self) -> None:
        """``kill -9``: gone at once, with what it held (it keeps nothing on disk)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def private_redis(tmp_path):
    if shutil.which("redis-server") is None:
        _missing("the drills need redis-server on PATH")
    redis = PrivateRedis(base=tmp_path, port=free_port())
    try:
        redis.start()
        yield redis
    finally:
        redis.stop()


# --------------------------------------------------------------------------- the study


@pytest.fixture
def drill_env(drill_db, private_redis, drill_static) -> dict[str, str]:
    return base_env(
        DATABASE_URL=drill_db.url,
        CELERY_BROKER_URL=private_redis.url,
        DJANGO_STATIC_ROOT=drill_static,
    )


def scenario(env: dict[str, str], *args: str) -> dict:
    """Run ``tests/drills/scenario.py`` against the drill's private services."""
    out = run_python(["-m", "tests.drills.scenario", *args], env)
    return json.loads(out.strip().splitlines()[-1])


# --------------------------------------------------------------------------- gunicorn


@dataclass
class Gunicorn:
    proc: subprocess.Popen
    url: str
    log_path: Path

    def worker_pids(self) -> list[int]:
        try:
            return [c.pid for c in psutil.Process(self.proc.pid).children()]
        except psutil.NoSuchProcess:
            return []

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def gunicorn_app(tmp_path, drill_env):
    """``start(**env)`` runs gunicorn (2 sync workers unless told) on a free port."""
    started: list[Gunicorn] = []

    def start(workers: int = 2, **env) -> Gunicorn:
        port = free_port()
        log_path = tmp_path / f"gunicorn-{port}.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                [
                    *(sys.executable, "-m", "gunicorn", "annotation_site.wsgi"),
                    *("--bind", f"127.0.0.1:{port}", "--workers", str(workers)),
                    *("--timeout", "30", "--graceful-timeout", "2", "--error-logfile", "-"),
                    # Not the per-user control socket shared with any other gunicorn here.
                    "--no-control-socket",
                ],
                cwd=ROOT,
                env={**drill_env, **{k: str(v) for k, v in env.items()}},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        app = Gunicorn(proc=proc, url=f"http://127.0.0.1:{port}", log_path=log_path)
        started.append(app)

        def ready() -> bool:
            assert proc.poll() is None, f"gunicorn exited:\n{app.log()}"
            try:
                return httpx.get(app.url + "/", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout=60, what="gunicorn")
        return app

    try:
        yield start
    finally:
        for app in started:
            _stop(app.proc, group=True)
            print(f"--- gunicorn log (tail)\n{app.log()[-3000:]}")


# --------------------------------------------------------------------------- Celery


@dataclass
class CeleryWorker:
    proc: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def pool_pids(self) -> list[int]:
        try:
            return [c.pid for c in psutil.Process(self.proc.pid).children()]
        except psutil.NoSuchProcess:
            return []

    def kill_all(self) -> None:
        """``kill -9`` the worker and its pool at once, as a lost machine would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)


@pytest.fixture
def celery_worker(tmp_path, drill_env):
    """``start(**env)`` runs a prefork worker (one child) and waits until it is ready."""
    started: list[CeleryWorker] = []

    def start(**env) -> CeleryWorker:
        log_path = tmp_path / f"worker-{len(started)}.log"
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "annotation_site",
                    "worker",
                    "--pool=prefork",
                    "--concurrency=1",
                    "--without-heartbeat",
                    "--without-gossip",
                    "--without-mingle",
                    "--loglevel=info",
                ],
                cwd=ROOT,
                env={**drill_env, "DJANGO_CONN_MAX_AGE": "0", **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        worker = CeleryWorker(proc=proc, log_path=log_path)
        started.append(worker)

        def ready() -> bool:
            assert proc.poll() is None, f"worker exited:\n{worker.log()}"
            return "ready." in worker.log()

        wait_until(ready, timeout=60, what="the Celery worker")
        return worker

    try:
        yield start
    finally:
        for worker in started:
            _stop(worker.proc, group=True)
            print(f"--- worker log (tail)\n{worker.log()[-3000:]}")


# --------------------------------------------------------------------------- a browser


@dataclass
class Annotator:
    """An annotator's browser: htmx saves, so an acknowledged save is a 2xx."""

    base_url: str
    slug: str
    token: str
    client: httpx.Client = field(init=False)
    assignment: int | None = None

    def __post_init__(self):
        # Longer than gunicorn's worker timeout (30 s): a request left unanswered means
        # its worker died. A client that gave up earlier while the server went on
        # could see a later save acknowledged and then overwritten by the abandoned
        # one (the server keeps the last write it *processed*).
        self.client = httpx.Client(base_url=self.base_url, timeout=60)

    def _csrf(self) -> dict:
        return {"csrfmiddlewaretoken": self.client.cookies.get("csrftoken", "")}

    def sign_in(self) -> None:
        assert self.client.get(f"/i/{self.token}/").status_code == 302
        assert self.client.get(f"/s/{self.slug}/").status_code == 200  # sets the CSRF cookie

    def start(self) -> int:
        response = self.client.post(f"/s/{self.slug}/start/", data=self._csrf())
        assert response.status_code == 302, response.text[:500]
        self.assignment = int(response.headers["location"].rstrip("/").split("/")[-1])
        return self.assignment

    def save(self, number: int, answer: dict) -> httpx.Response:
        return self.client.post(
            f"/s/{self.slug}/b/{self.assignment}/{number}/",
            data={**answer, **self._csrf(), "form_mode": "js"},
            headers={"HX-Request": "true"},
        )

    def resume(self) -> httpx.Response:
        """Open the batch again: it goes to the first unanswered item (or the review)."""
        return self.client.get(f"/s/{self.slug}/b/{self.assignment}/", follow_redirects=True)

    def submit(self) -> httpx.Response:
        return self.client.post(
            f"/s/{self.slug}/b/{self.assignment}/review/", data=self._csrf(), follow_redirects=True
        )

    def close(self) -> None:
        self.client.close()


def answer_for(annotator: int, number: int, attempt: int) -> tuple[dict, tuple]:
    """A valid answer that differs between attempts, and its expected database row
    (coherent, empathy): an unacknowledged save that did land is then overwritten."""
    empathy = 1 + (annotator + number + attempt) % 5
    return {"coherent": "yes", "empathy": str(empathy)}, (True, empathy)


def judgements_by_item(db: DrillDatabase) -> dict[tuple[int, int], list[tuple]]:
    """{(assignment id, item number): [(coherent, empathy), ...]} from the database."""
    rows = db.query(
        'SELECT a.id, a."order", j.reflection_id, j.coherent, j.empathy '
        "FROM studies_judgement j JOIN studies_assignment a ON a.id = j.assignment_id"
    )
    found: dict[tuple[int, int], list[tuple]] = {}
    for assignment_id, order, reflection_id, coherent, empathy in rows:
        number = order.index(reflection_id) + 1
        found.setdefault((assignment_id, number), []).append((coherent, empathy))
    return found
