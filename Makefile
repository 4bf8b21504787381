# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
# Without DATABASE_URL, CELERY_BROKER_URL and CACHE_URL every target uses the checkout's
# embedded PostgreSQL and Redis (annotation_site/embedded, data in .embedded/), started
# on first use and stopped a few seconds after the last process using them exits.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

# The address every absolute link names (crowd join links, invitation links, e-mails):
# the server's own unless DJANGO_SITE_URL is set in the environment.
demo serve: export DJANGO_SITE_URL ?= http://$(HOST):$(PORT)

.PHONY: install demo test drills lint format migrate docs docs-serve serve worker beat screenshots clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-installs only when pyproject.toml changed since the last install.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(BIN)/python manage.py migrate --noinput

# The demo study, then the web server, a Celery worker and beat (annotation_site/stack.py);
# an automatic analysis follows a submission within about a minute. Ctrl-C stops all.
demo: migrate docs
	$(BIN)/python manage.py load_demo
	@# exec: the runner's parent is make itself, so it stops when make is killed.
	exec $(BIN)/python -m annotation_site.stack --host $(HOST) --port $(PORT) --demo

serve: migrate docs
	exec $(BIN)/python -m annotation_site.stack --host $(HOST) --port $(PORT)

worker: install
	$(BIN)/celery -A annotation_site worker --loglevel=info

beat: install
	$(BIN)/celery -A annotation_site beat --loglevel=info

# A fresh test database on the server (test_<name>); works beside a running `make demo`.
# The suite runs in as many processes as the machine has cores (pytest-xdist), each
# module's tests in one of them; TEST_PROCESSES=0 runs it all in one process.
TEST_PROCESSES ?= auto
test: install
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist loadfile $(PYTEST_ARGS)

# The fault drills (tests/drills, docs/operators/fault-drills.md): they start private PostgreSQL,
# Redis, gunicorn and Celery processes and kill them; never the shared services.
drills: install
	$(BIN)/python -m pytest tests/drills -m drill $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@# The layers and no import cycles: the [tool.importlinter] contracts in pyproject.toml.
	$(BIN)/lint-imports
	$(BIN)/python manage.py check
	$(BIN)/python manage.py makemigrations --check --dry-run
	@# The OpenAPI schema of /api/: generated and validated, warnings count as errors.
	schema=$$(mktemp --suffix=.yml) && \
	  $(BIN)/python manage.py spectacular --validate --fail-on-warn --file $$schema; \
	  status=$$?; rm -f $$schema; exit $$status
	@# The documentation site (mkdocs.yml): strict, so a broken link or #anchor fails
	@# (not --quiet: MkDocs counts only the warnings it prints).
	site=$$(mktemp -d) && \
	  NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $$site; \
	  status=$$?; rm -rf $$site; exit $$status

# The documentation site into site/ (or DJANGO_DOCS_ROOT), which the application serves
# under /docs/; `make demo` and `make serve` build it first. docs-serve: a live preview
# while writing (http://127.0.0.1:8001/).
docs: install
	$(BIN)/python manage.py build_docs

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8001

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Re-captures docs/screenshots/*.png from a throwaway demo on embedded servers of its own
# (a temporary directory, removed afterwards; empty settings mean embedded, whatever .env
# says; needs Debian's chromium).
screenshots: install
	set -e; state=$$(mktemp -d); export EMBEDDED_SERVICES_DIR=$$state/services; \
	  trap '$(BIN)/python -m annotation_site.embedded stop >/dev/null; rm -rf "$$state"' EXIT; \
	  export DATABASE_URL= CELERY_BROKER_URL= CACHE_URL=; \
	  $(BIN)/python manage.py migrate -v0; \
	  $(BIN)/python manage.py load_demo >/dev/null; \
	  $(BIN)/python docs/screenshots/coding_demo.py; \
	  $(BIN)/python docs/screenshots/prepare.py $$state/links.json; \
	  $(BIN)/python -m annotation_site.stack --port 8799 >$$state/stack.log 2>&1 & \
	  stack=$$!; \
	  for i in $$(seq 90); do $(BIN)/python -c "import socket; socket.create_connection(('127.0.0.1', 8799), 1)" 2>/dev/null && break; sleep 1; done; \
	  status=0; $(BIN)/python docs/screenshots/capture.py --base-url http://127.0.0.1:8799 \
	    --prepared $$state/links.json || status=$$?; \
	  kill $$stack; wait $$stack || true; exit $$status

# Stops the embedded servers (a running `make demo` loses them) and removes their data.
clean:
	if [ -x $(BIN)/python ]; then $(BIN)/python -m annotation_site.embedded stop; fi
	rm -rf $(VENV) .embedded staticfiles site .pytest_cache .ruff_cache
