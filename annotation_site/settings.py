"""Settings for the reflection-coherence annotation platform.

One module, driven by the environment (see ``.env.example``). With nothing set it
runs the zero-setup demo: DEBUG on, and the checkout's embedded PostgreSQL and Redis
(annotation_site.embedded) as database, Celery broker and cache. Production sets
DJANGO_DEBUG=false, DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS, DATABASE_URL (PostgreSQL,
the only database engine), CELERY_BROKER_URL and CACHE_URL (Redis).
"""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from annotation_site import embedded
from studies.csp import content_security_policy

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
# A local .env file is optional; the real environment always wins.
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = env(
    "DJANGO_SECRET_KEY",
    default="insecure-demo-key-only-for-local-development" if DEBUG else environ.Env.NOTSET,
)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "csp",
    # The project itself: its management commands (build_docs).
    "annotation_site",
    "studies",
    "analysis",
]

# Django's database sessions on studies.AnnotatorSession, whose row also names the
# signed-in annotators (studies/sessions.py).
# https://docs.djangoproject.com/en/5.2/topics/http/sessions/#using-database-backed-sessions
SESSION_ENGINE = "studies.sessions"

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # A NUL character (%00) in the path, a query or a form: 404 or 400 before any view
    # looks anything up with it; a cookie holding one is ignored (studies/unstorable.py).
    "studies.unstorable.UnstorableValues",
    # Before the session and CSRF middleware (MTurk's frame: studies/middleware.py).
    "studies.middleware.CrowdFrame",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

# Content-Security-Policy on every response: built in one place (studies/csp.py).
CONTENT_SECURITY_POLICY = content_security_policy()

if not DEBUG:
    # Serves collected static files in production (gunicorn has no static server);
    # with DEBUG on, runserver serves them. https://whitenoise.readthedocs.io/
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "annotation_site.urls"
WSGI_APPLICATION = "annotation_site.wsgi.application"
ASGI_APPLICATION = "annotation_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Which of the three are unset (or empty), so served by the embedded servers. Those (no
# fsync, started on demand) are for the demo, tests and development: a deployment
# (DEBUG off) names its own.
EMBEDDED_SERVICES = [
    name for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL") if not env(name, default="")
]
if not DEBUG and EMBEDDED_SERVICES:
    raise ImproperlyConfigured(
        f"With DJANGO_DEBUG=false, set {', '.join(EMBEDDED_SERVICES)}: the embedded PostgreSQL "
        "and Redis are for the demo, tests and development only (docs/operators/deployment.md, "
        "Running the full stack)."
    )

# PostgreSQL 15 to 18, the only engine: DATABASE_URL, else the embedded server.
# https://django-environ.readthedocs.io/en/latest/types.html#environ-env-db-url
if "DATABASE_URL" not in EMBEDDED_SERVICES:
    DATABASES = {"default": env.db("DATABASE_URL")}
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            f"DATABASE_URL names the database engine {DATABASES['default']['ENGINE']}; this "
            "platform runs on PostgreSQL only (postgres://user:password@host:port/name). "
            "Unset DATABASE_URL to use the embedded PostgreSQL server."
        )
else:
    DATABASES = {"default": embedded.database_settings()}
# Reuse connections between requests; health checks drop dead ones after a DB restart.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DJANGO_CONN_MAX_AGE", default=60))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if env.bool("DJANGO_DB_PREPARED_STATEMENTS", default=True):
    # Lets studies.hot_path.prepared_cursor prepare the annotator's hot-path
    # statements (Django's own cursors bind on the client and never prepare).
    # Turn off behind a pooler that cannot keep prepared statements.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 5)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = env("DJANGO_TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env("DJANGO_STATIC_ROOT", default=str(BASE_DIR / "staticfiles"))
# The built documentation site, served under /docs/ (`manage.py build_docs` writes it;
# docs/operators/deployment.md, "The documentation site").
DOCS_ROOT = env("DJANGO_DOCS_ROOT", default=str(BASE_DIR / "site"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Materials and annotation uploads can be large; keep them out of memory.
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

EMAIL_BACKEND = env(
    "DJANGO_EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend"
)
DEFAULT_FROM_EMAIL = env("DJANGO_DEFAULT_FROM_EMAIL", default="studies@localhost")
# Absolute address of the site, for links in e-mails sent by background jobs.
SITE_URL = env("DJANGO_SITE_URL", default="http://127.0.0.1:8000").rstrip("/")

# HTTPS (docs/operators/security.md); `manage.py check --deploy` is clean with the
# production defaults. Plain-HTTP runs on loopback (the fault drills, the benchmarks)
# turn the redirect, HSTS and secure cookies off through the environment.
# https://docs.djangoproject.com/en/5.2/ref/middleware/#http-strict-transport-security
if not DEBUG:
    SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
    CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=0 if DEBUG else 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_HSTS_PRELOAD", default=False)
if not SECURE_HSTS_PRELOAD:
    # Asking browsers to preload HSTS for the whole domain is the domain owner's
    # decision (hard to undo), not this application's: off unless asked for.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]
# Behind a reverse proxy that terminates TLS, Django sees plain HTTP: trust the
# proxy's X-Forwarded-Proto header, which it must set on every request and never pass
# on from clients. Only then is a request known to be HTTPS (redirect, secure cookies).
# https://docs.djangoproject.com/en/5.2/ref/settings/#secure-proxy-ssl-header
if env.bool("DJANGO_BEHIND_PROXY", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# The REST API under /api/ (docs/developers/api.md): researchers only, JSON in and out.
# https://www.django-rest-framework.org/api-guide/settings/
REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header makes DRF answer 401, not 403, to
    # requests without credentials.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Views add model permissions on top (studies.api_framework.ResearcherPermission).
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["studies.api_parsing.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "studies.api_framework.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "studies.api_framework.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

# OpenAPI 3 schema at /api/schema/, Swagger UI at /api/docs/, Redoc at /api/redoc/.
# Their JavaScript comes from drf-spectacular-sidecar (served locally, no CDN).
# https://drf-spectacular.readthedocs.io/en/latest/settings.html
SPECTACULAR_SETTINGS = {
    "TITLE": "Reflection coherence studies API",
    "DESCRIPTION": "Read studies, materials, assignments, judgements, progress and analysis "
    "reports; import materials, start analyses and reject assignments. Researchers (staff "
    "with a role in a study) only: send `Authorization: Token <key>`. A token acts as its "
    "user: what their role in a study allows, and a 404 for studies where they have none. "
    "Annotators are identified by pseudonyms; no personal data is served.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and the docs pages describe the API and contain no study data: public,
    # so client generators and the docs page work before signing in.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ErrorCodeEnum": "studies.api_framework.API_ERROR_CHOICES",
        "AssignmentStatusEnum": "studies.models.Assignment.Status",
        "AnalysisRunStatusEnum": "analysis.models.AnalysisRun.Status",
        "StudyStatusEnum": "studies.models.Study.Status",
        "ReflectionKindEnum": "studies.models.Reflection.Kind",
    },
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -----------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html
# Tasks run on a Celery worker (`make demo` and `make serve` start one); the broker is
# CELERY_BROKER_URL, else the embedded Redis. Tests that want a task run in-process
# turn CELERY_TASK_ALWAYS_EAGER on themselves.
CELERY_BROKER_URL = (
    embedded.broker_url() if "CELERY_BROKER_URL" in EMBEDDED_SERVICES else env("CELERY_BROKER_URL")
)
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
# Late acknowledgement: a task whose worker dies is redelivered, so tasks are idempotent.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=20 * 60)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=25 * 60)
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_TASK_DEFAULT_QUEUE", default="celery")
# Broker restarts (https://docs.celeryq.dev/en/stable/userguide/configuration.html#broker-settings):
# a worker that loses Redis retries for ever (max retries None; kombu waits 2 s more
# after each failed attempt, at most 30 s), at start-up too, so it consumes again at
# most ~30 s after Redis is back. A task it is computing when the connection drops
# runs to its end (its message, not acknowledgeable any more, is handed back and
# computed again or skipped: tasks are idempotent) rather than being cancelled.
# Tasks are never sent with a countdown or an ETA (annotation_site.celery).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# A task taken by a worker that then vanished (killed with its whole machine, so it
# could not hand the message back) goes to another worker after this many seconds.
# Must exceed the hard time limit, or a long run would be handed out twice; the
# fault drills (tests/drills) make it short. kombu's default is one hour.
# https://docs.celeryq.dev/en/stable/getting-started/backends-and-brokers/redis.html#visibility-timeout
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600),
    # How soon a task of a worker that vanished is handed out again: Redis is swept
    # for unacknowledged tasks past the visibility timeout every
    # ``unacked_restore_interval`` seconds (kombu's default throttle would make that
    # every 10th sweep, ~100 s); the sweep's lock expires after 60 s if a worker dies
    # holding it (kombu's default: 5 minutes). Documented in kombu.transport.redis.
    "unacked_restore_interval": env.int("CELERY_RESTORE_INTERVAL", default=10),
    "unacked_restore_throttle": 1,
    "unacked_mutex_expire": 60,
    # A Redis that vanished without closing the connection (failover, a firewall
    # dropping it) is noticed: connections idle this long are checked with a PING
    # before use, and the worker's blocking read is dropped and reconnected when
    # its reply is overdue by this long; no command waits for ever on a dead socket.
    "health_check_interval": 10,
    "socket_timeout": 30,
    "socket_connect_timeout": 5,
    "socket_keepalive": True,
}

# --- Analysis ---------------------------------------------------------------
# New submissions ask for a fresh report through a beat job (analysis.request_auto_runs,
# every ANALYSIS_AUTO_INTERVAL seconds), debounced: a run is asked for once the oldest
# submission it is for is ANALYSIS_AUTO_DELAY seconds old, and covers those made
# meanwhile.
ANALYSIS_AUTO_RUN = env.bool("ANALYSIS_AUTO_RUN", default=True)
# Sentence-embedding models the admin's candidate selection offers besides the packaged
# default (folders or hub names this server can load; comma-separated). The command
# select_candidates takes any.
CANDIDATE_EMBEDDING_MODELS = env.list("CANDIDATE_EMBEDDING_MODELS", default=[])
ANALYSIS_AUTO_DELAY = env.int("ANALYSIS_AUTO_DELAY", default=300)
ANALYSIS_AUTO_INTERVAL = env.int("ANALYSIS_AUTO_INTERVAL", default=60)
# A run sent to the queue that no worker started this many seconds later was lost (a
# broker restarted without its data): the recovery job sends it again, at most
# analysis.services.MAX_DISPATCHES times in all, then fails it with a message. Above
# the hard time limit, so that a run merely waiting behind a long one is not resent.
ANALYSIS_DISPATCH_TIMEOUT = env.int(
    "ANALYSIS_DISPATCH_TIMEOUT", default=CELERY_TASK_TIME_LIMIT + 5 * 60
)

# https://docs.celeryq.dev/en/stable/userguide/periodic-tasks.html
CELERY_BEAT_SCHEDULE = {
    "expire-overdue-assignments": {
        "task": "studies.expire_overdue_assignments",
        "schedule": 60.0,
    },
    "decide-gates": {
        "task": "studies.decide_gates",
        "schedule": 60.0,
    },
    "send-unlock-notifications": {
        "task": "studies.send_unlock_notifications",
        "schedule": 600.0,
    },
    "recover-analysis-runs": {
        "task": "analysis.recover_runs",
        "schedule": 120.0,
    },
    "request-automatic-analysis-runs": {
        "task": "analysis.request_auto_runs",
        "schedule": float(ANALYSIS_AUTO_INTERVAL),
        # A tick still undelivered when the next one is due is dropped: the next one
        # does the same work.
        "options": {"expires": ANALYSIS_AUTO_INTERVAL},
    },
}

# A claimed batch with no answer for this many seconds expires and frees its slot
# (studies.models.Assignment.overdue_q), like a batch whose time ran out.
ASSIGNMENT_UNANSWERED_RELEASE = env.int("ASSIGNMENT_UNANSWERED_RELEASE", default=10 * 60)

# --- Crowd platforms (docs/researchers/crowd.md) ---------------------------------
# Django's cache, shared by every web process: CACHE_URL (e.g. redis://127.0.0.1:6379/1),
# else the embedded Redis.
# https://django-environ.readthedocs.io/en/latest/types.html#environ-env-cache-url
if "CACHE_URL" in EMBEDDED_SERVICES:
    CACHES = {"default": embedded.cache_settings()}
else:
    CACHES = {"default": env.cache_url("CACHE_URL")}
# A Redis that stops answering fails within seconds (the crowd join's rate limit then
# lets joins through, studies.views.common.join_rate_allows) instead of holding a web
# worker until its timeout. Options of redis-py's connection pool, which Django's Redis
# cache passes on: https://docs.djangoproject.com/en/5.2/topics/cache/#redis
# https://redis-py.readthedocs.io/en/stable/connections.html
CACHE_TIMEOUT_SECONDS = env.float("CACHE_TIMEOUT_SECONDS", default=2.0)
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    CACHES["default"].setdefault("OPTIONS", {}).update(
        socket_connect_timeout=CACHE_TIMEOUT_SECONDS, socket_timeout=CACHE_TIMEOUT_SECONDS
    )
# Joins through crowd links per client address: at most this many per window (seconds).
CROWD_JOIN_LIMIT = env.int("CROWD_JOIN_LIMIT", default=30)
CROWD_JOIN_WINDOW = env.int("CROWD_JOIN_WINDOW", default=600)
# A crowd worker who joined the first stage holds a place for this many seconds before
# claiming a batch (consent, tutorial): admission counts them against the open slots.
CROWD_JOIN_HOLD = env.int("CROWD_JOIN_HOLD", default=30 * 60)
# The client's address: REMOTE_ADDR, or behind a reverse proxy you trust the header it
# sets, as a META key (e.g. HTTP_X_FORWARDED_FOR: its last address is used). Never set
# it without such a proxy: clients could then choose their address.
CROWD_CLIENT_ADDRESS_HEADER = env("CROWD_CLIENT_ADDRESS_HEADER", default="")
# Who may frame the annotator pages of a study shown in MTurk's frame (Study.mturk_frame).
CROWD_FRAME_ORIGINS = env.list(
    "CROWD_FRAME_ORIGINS", default=["https://www.mturk.com", "https://workersandbox.mturk.com"]
)

# Benchmarks only (bench/load): mounts /bench/floor/, one INSERT per POST, CSRF-exempt.
BENCH_FLOOR_VIEW = env.bool("BENCH_FLOOR_VIEW", default=False)


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("DJANGO_LOG_LEVEL", default="INFO")},
}
