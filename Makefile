# The two commands: `make test` and `make campaign`. Both install everything first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?= --durations=60
PROFILE ?= ci
# What `make test` runs. The sweep suites (suites/sweep: the replication-rule scenarios, ~3 min,
# and KAFKA-15583's, a strict xfail from 3.7.0 on) run in sweeps (`highwater sweep`, docs/suites.md: a
# recorded sweep), not here: with the transactions suite, make test would pass its 35 minutes.
TEST_PATHS ?= tests suites/conformance suites/chaos
# The clients share the scenarios of the KIP-392 fetching, KIP-320, durability and transactions
# suites in turn (each scenario runs on one of them: the suites on every client for the price of
# one; a suite of three scenarios leaves one client out, the fetching suite java, which its own
# tests cover, and durability and transactions kafkajs; KIP-320's one scenario runs on kafkajs;
# the full matrix is `--client kafka-python,confluent-kafka,java,kafkajs`, e.g. in a campaign).
CLIENT_ROTATION ?= kafka-python,confluent-kafka,java,kafkajs
# What make test leaves out for its 35 minutes: the tests marked nightly(reason, seconds), each
# with its reason where it is (docs/contributing.md lists them). `make test MARKS=` runs them too;
# `make nightly SHARD=I/N` runs slice I of N of them, which .ci/run does after make test.
MARKS ?= not nightly
NIGHTLY_RESULTS := results/nightly-slice

.PHONY: install system-packages lint test nightly unit suites campaign

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
	@# kafkajs under test: Node.js and npm (Debian's nodejs and npm where node is absent).
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
	  echo "== highwater: installing Debian's nodejs and npm (kafkajs worker)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null ) \
	    || echo "== highwater: nodejs not installed; --client kafkajs will be refused"; }
	@# @confluentinc/kafka-javascript under test (--client ckjs) is built from source against
	@# Debian's OpenSSL, SASL, zlib and zstd development files (harness/clients/ckjs.py says why).
	@missing=; for p in libsasl2-dev libzstd-dev libssl-dev zlib1g-dev; do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "== highwater: installing Debian's$$missing (the ckjs build)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null ) \
	    || echo "== highwater:$$missing not installed; --client ckjs may not build"; fi
	@# The compose backend: Debian's docker engine, debootstrap (local images, no registry) and
	@# docker-compose (the rendered file is validated with it); dockerd is started, detached, when
	@# no daemon answers (bridge and iptables off: containers use host networking on 127.x).
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	missing=; for p in docker:docker.io debootstrap:debootstrap docker-compose:docker-compose; do \
	  command -v $${p%%:*} >/dev/null 2>&1 || [ -x /usr/sbin/$${p%%:*} ] || missing="$$missing $${p#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "== highwater: installing Debian's$$missing (compose backend)"; \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null ) \
	    || echo "== highwater:$$missing not installed; the compose tests will be skipped"; fi; \
	if command -v dockerd >/dev/null 2>&1 && ! docker version >/dev/null 2>&1; then \
	  echo "== highwater: starting dockerd (log: /tmp/highwater-dockerd.log)"; \
	  $$SUDO setsid dockerd --bridge=none --iptables=false --ip6tables=false </dev/null >/tmp/highwater-dockerd.log 2>&1 & \
	  for i in $$(seq 1 60); do docker version >/dev/null 2>&1 && break; sleep 0.5; done; \
	  docker version >/dev/null 2>&1 || echo "== highwater: dockerd did not start; the compose tests will be skipped"; fi
	@# The CI recipes' shell steps are linted with Debian's shellcheck where it installs (optional).
	@command -v shellcheck >/dev/null 2>&1 || { \
	  echo "== highwater: installing Debian's shellcheck (CI recipes)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq shellcheck >/dev/null ) \
	    || echo "== highwater: shellcheck not installed; the recipes' shellcheck test will be skipped"; }
	@# The clock faults (ClusterSpec(clock="faked")): Debian's libfaketime, preloaded into the node
	@# JVMs (harness/clock.py); without it a faked clock is refused in one line.
	@ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || { \
	  echo "== highwater: installing Debian's libfaketime (clock faults)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq libfaketime >/dev/null ) \
	    || echo "== highwater: libfaketime not installed; the clock fault tests will be skipped"; }

# The CI recipes' GitHub workflow linter (tests/unit/test_ci_recipes.py), built once from its Go
# module into the cache; without it that test is skipped and says so.
HIGHWATER_HOME ?= $(HOME)/.cache/highwater
ACTIONLINT := $(HIGHWATER_HOME)/tools/actionlint
$(ACTIONLINT):
	@echo "== highwater: building actionlint (the CI recipes' linter) from its Go module"
	@GOBIN=$(HIGHWATER_HOME)/tools go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 \
	  || echo "== highwater: actionlint not built; the CI recipes' actionlint test will be skipped"

# Python packages, then the Kafka distribution and the Toxiproxy server (cached, idempotent).
install: $(STAMP) system-packages $(ACTIONLINT)
	$(BIN)/highwater setup

# Lint (ruff), format check (ruff format) and types (mypy on every product package).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Lint, unit tests, integration tests on real clusters, and the conformance + chaos suites (ci
# profile); then the report of the suites' runs, which fails make test only on a new violation
# (exit 1: one no known finding explains) or when it cannot be built (4); known findings are
# listed, unknown (3) passes. The runs of an earlier make test are cleared first.
test: install lint
	rm -rf results/make-test results/make-test-report
	$(BIN)/pytest $(PYTEST_ARGS) $(TEST_PATHS) --profile $(PROFILE) --client-rotation $(CLIENT_ROTATION) -m "$(MARKS)" --results results/make-test
	$(BIN)/highwater report results/make-test --out results/make-test-report --quiet; \
	  code=$$?; [ $$code -eq 0 ] || [ $$code -eq 3 ] || { echo "== highwater: the report of make test's runs exited $$code"; exit 1; }

# One slice of the nightly tests (SHARD=I/N: --shard, weighted by their marks' seconds) on the
# clients of make test's rotation, then the report of its runs, judged as make test's are.
SHARD ?= 1/1
nightly: install
	rm -rf $(NIGHTLY_RESULTS) $(NIGHTLY_RESULTS)-report
	$(BIN)/pytest $(PYTEST_ARGS) $(TEST_PATHS) --profile $(PROFILE) --client-rotation $(CLIENT_ROTATION) -m nightly --shard $(SHARD) --results $(NIGHTLY_RESULTS)
	@if [ -d $(NIGHTLY_RESULTS) ]; then $(BIN)/highwater report $(NIGHTLY_RESULTS) --out $(NIGHTLY_RESULTS)-report --quiet; \
	  code=$$?; [ $$code -eq 0 ] || [ $$code -eq 3 ] || { echo "== highwater: the report of the nightly slice's runs exited $$code"; exit 1; }; fi

unit: $(STAMP)
	$(BIN)/pytest -m "not integration" tests

suites: install
	$(BIN)/highwater run --profile $(PROFILE)

# The chaos campaign on a local 3-broker / 3-rack cluster, then the HTML report in report/.
campaign: install
	@# first the sweep spread over a standalone Spark cluster (a master and two workers on
	@# loopback, two real runs at once, ~90 s; make test's budget has no room for it), so a
	@# campaign that finds a violation (exit 1, a verdict) does not skip it
	$(BIN)/pytest tests/integration/test_spark_sweep.py -p no:cacheprovider -q
	$(BIN)/highwater campaign --profile $(PROFILE)
