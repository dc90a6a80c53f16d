# The two commands: `make test` and `make campaign`. Both install everything first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: install test unit campaign clean-cache

$(STAMP): pyproject.toml
	@echo "== highwater: creating $(VENV) and installing Python packages"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# Python packages, then the Kafka distribution and the Toxiproxy server (cached, idempotent).
install: $(STAMP)
	$(BIN)/highwater setup

test: install
	$(BIN)/pytest $(PYTEST_ARGS) tests

unit: $(STAMP)
	$(BIN)/pytest -m "not integration" tests

campaign: install
	$(BIN)/highwater campaign
