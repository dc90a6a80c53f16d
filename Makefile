# The two commands: `make test` and `make campaign`. Both install everything first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
PROFILE ?= ci

.PHONY: install system-packages lint test unit suites campaign

$(STAMP): pyproject.toml
	@echo "== highwater: creating $(VENV) and installing Python packages"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# Debian's Chromium, for the test that opens the HTML report headless (skipped when it cannot
# be installed, e.g. without root: the test says so).
system-packages:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "== highwater: installing Debian's chromium (report browser test)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null ) \
	    || echo "== highwater: chromium not installed; the browser test will be skipped"; }

# Python packages, then the Kafka distribution and the Toxiproxy server (cached, idempotent).
install: $(STAMP) system-packages
	$(BIN)/highwater setup

# Lint (ruff), format check (ruff format) and types (mypy on every product package).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Lint, unit tests, integration tests on real clusters, and the conformance + chaos suites (ci profile).
test: install lint
	$(BIN)/pytest $(PYTEST_ARGS) tests suites --profile $(PROFILE) --results results/make-test

unit: $(STAMP)
	$(BIN)/pytest -m "not integration" tests

suites: install
	$(BIN)/highwater run --profile $(PROFILE)

# The chaos campaign on a local 3-broker / 3-rack cluster, then the HTML report in report/.
campaign: install
	$(BIN)/highwater campaign --profile $(PROFILE)
