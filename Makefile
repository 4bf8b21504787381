# Two commands on a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install demo test drills lint format migrate serve worker beat screenshots clean

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

demo: migrate
	$(BIN)/python manage.py load_demo --base-url http://$(HOST):$(PORT)
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

serve: migrate
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

worker: install
	$(BIN)/celery -A annotation_site worker --loglevel=info

beat: install
	$(BIN)/celery -A annotation_site beat --loglevel=info

# Uses DATABASE_URL and CELERY_BROKER_URL when set; otherwise SQLite, and tests that
# need PostgreSQL or a broker are skipped with a reason.
test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The fault drills (tests/drills, README "Fault drills"): they start private PostgreSQL,
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

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Re-captures docs/screenshots/*.png from a throwaway demo database (needs Debian's chromium).
screenshots: install
	rm -f /tmp/screenshots-demo.sqlite3
	DATABASE_URL=sqlite:////tmp/screenshots-demo.sqlite3 $(BIN)/python manage.py migrate -v0
	@# The demo as `make demo` serves it: simulated judgements and an analysis run included.
	DATABASE_URL=sqlite:////tmp/screenshots-demo.sqlite3 $(BIN)/python manage.py load_demo >/dev/null
	DATABASE_URL=sqlite:////tmp/screenshots-demo.sqlite3 $(BIN)/python docs/screenshots/coding_demo.py
	@# The crowd worker at the end of a stage and the free-text stage's annotator.
	DATABASE_URL=sqlite:////tmp/screenshots-demo.sqlite3 $(BIN)/python docs/screenshots/prepare.py /tmp/screenshots-links.json
	DATABASE_URL=sqlite:////tmp/screenshots-demo.sqlite3 $(BIN)/python manage.py runserver 127.0.0.1:8799 --noreload & \
	  server=$$!; sleep 3; \
	  $(BIN)/python docs/screenshots/capture.py --base-url http://127.0.0.1:8799 --prepared /tmp/screenshots-links.json; status=$$?; \
	  kill $$server; exit $$status

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles .pytest_cache .ruff_cache
