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
# The seeded chaos runs (assign-mode consumers, 90 s; a consumer group, 80 s) run in
# `make campaign` (the ci profile), not here: with them make test would pass its 35 minutes.
# Three findings-by-client runs that re-judge a finding on a client already known to keep or
# break it the same way as another here (HW-1 and HW-11 on confluent-kafka, HW-14 on java,
# ~45 s) bought kafkajs's place, and HW-16's Java run waits out Java's 60 s commit timeout while
# kafkajs's shows the finding in ~25 s: `make test DESELECT=` runs them too. HW-1 on java (~22 s;
# the broker's finding, every client) paid for the CI recipes' linters and the unit tests that
# came with the CLI, reports and sharding (~40 s): kafka-python shows it here.
# The groups suite's member-restart run (kafka-python, ~50 s) gave its place to member-faults on
# both group protocols: its kill and restart is member-faults' first step, and the client bisect
# plays member-restart itself. Transactions v1 against v2 (two Java runs, ~2 min) run in the nightly
# profile and campaigns: `make test DESELECT=` runs them too.
# The share-groups suite (KIP-932) runs its member-and-coordinator kill on Java (~60 s) and its
# share consumer's driver test (~16 s); they bought their place with durability's leader-partition
# (confluent-kafka's turn, ~42 s: a leader cut off, which the transactions suite's
# coordinators-cut-pause and the fetching suite's cut-off keep in make test). The share suite's
# freezes, coordinator cut-and-pause and leader kills (~3.5 min) run in the nightly profile and
# campaigns. The disk faults' integration tests (~17 s: a power loss on lossyfs, a full and a slow
# disk) bought their place with the report of a real seeded run's manifest (~42 s; the manifest's
# round trip is unit-tested, the report of a real run keeps its Chromium test here).
# The power-loss suite runs its leader case here (~57 s with its own cluster on lossyfs); its five
# correlated cases (~4 min) run in the nightly profile and campaigns, and so does the corrupted
# segments' integration test (~30 s; the corruption faults' file operations are unit-tested here).
# The clock suite (four jumps on a leader and the active controller, ~4 min) and HW-20's probe
# (~30 s, intermittent) run there too; the clock faults' integration test (~12 s) runs here. They and the leader's power loss bought their place
# with durability's leader-kill (~43 s: the power loss is a kill of the leader judged by the same
# checks), the fetching suite's cut-off and slowed replicas (~44 s each: its killed replica stays;
# cuts stay in the compose durability run and HW-1's tests, a slowed follower in KAFKA-4485's
# suite) and the transactions suite's coordinators-cut-pause (~46 s: coordinators-kill and
# exactly-once-copy stay). The groups suite's consumer protocol with KIP-848's range assignor
# (~45 s) runs in the nightly and campaigns; its uniform one and the classic protocol run here.
# So do the group's leader member killed then frozen, a majority of members killed at once, and
# member churn, and the seeded member faults (~45, ~45, ~100 and ~60 s a protocol).
# After a fresh-clone run at 34.7 min (pytest 32:09) three more went to the nightly, ~110 s: the
# durability suite's leader-pause (its promises through a leader failure stay in make test as the
# power-loss suite's leader case, a pause in HW-5's and HW-11's tests), the SASL cluster's
# conformance suite through pytest (every client's SASL authentication stays), and the report's
# second pass over cached runs (the cache has its unit tests).
# The fetching suite's quiet-rate follower latency (~60 s, KAFKA-14334 on 3.3.1) is new and
# nightly: the follower-latency check judges every make-test run of the suite already.
# The sweep spread over a standalone Spark cluster (~90 s: two real runs at once and a report)
# runs in make campaign; its pure parts (cells, retries, master URLs) are unit-tested here.
# The KIP-320 suite's scenario runs on kafkajs from the installed wheel instead
# (tests/integration/test_installed.py: the CI recipe's push job, read from its YAML, in a clean
# environment outside the checkout), the same tests the checkout ran here before.
FINDINGS := tests/integration/test_findings_by_client.py
DESELECT ?= --deselect suites/chaos/test_chaos.py \
  --deselect '$(FINDINGS)::test_hw1_consumer_cut_off_from_its_preferred_replica_keeps_reading[confluent-kafka]' \
  --deselect '$(FINDINGS)::test_hw1_consumer_cut_off_from_its_preferred_replica_keeps_reading[java]' \
  --deselect '$(FINDINGS)::test_hw11_consumer_reads_a_frozen_leader_s_partition_from_its_successor[confluent-kafka]' \
  --deselect '$(FINDINGS)::test_hw14_read_committed_never_returns_an_aborted_record[java]' \
  --deselect '$(FINDINGS)::test_hw16_a_commit_that_returned_is_committed[java]' \
  --deselect suites/conformance/test_groups.py::test_every_partition_is_read_through_a_member_restart \
  --deselect suites/conformance/test_transactions.py::test_transactions_v1_and_v2_through_faults_on_the_producer_s_links \
  --deselect 'suites/conformance/test_durability.py::test_no_loss_no_uncommitted_read_no_skip[leader-partition]' \
  --deselect 'suites/conformance/test_durability.py::test_consumers_keep_up_under_leader_faults[leader-partition]' \
  --deselect suites/conformance/test_share_groups.py::test_share_group_through_freezes_and_leader_kills \
  --deselect tests/integration/test_report_real.py::test_a_real_scheduled_runs_manifest_reaches_the_report \
  --deselect suites/conformance/test_power_loss.py::test_correlated_power_loss_is_detected_and_measured \
  --deselect tests/integration/test_disk_faults.py::test_corrupted_segments_after_a_crash_and_after_a_clean_stop \
  --deselect suites/conformance/test_clock.py \
  --deselect tests/integration/test_clock_faults.py::test_hw20_the_controller_s_clock_going_back_stalls_its_writes \
  --deselect tests/integration/test_external_security.py::test_a_conformance_suite_runs_on_a_sasl_cluster_through_pytest \
  --deselect tests/integration/test_report_e2e.py::test_second_report_reuses_cached_runs_and_agrees \
  --deselect 'suites/conformance/test_durability.py::test_no_loss_no_uncommitted_read_no_skip[leader-pause]' \
  --deselect 'suites/conformance/test_durability.py::test_consumers_keep_up_under_leader_faults[leader-pause]' \
  --deselect 'suites/conformance/test_groups.py::test_members_killed_and_frozen_lose_nothing[consumer-range]' \
  --deselect suites/conformance/test_groups.py::test_the_leader_member_killed_then_frozen_loses_nothing \
  --deselect suites/conformance/test_groups.py::test_a_majority_of_members_killed_then_restarted_loses_nothing \
  --deselect suites/conformance/test_groups.py::test_member_churn_loses_nothing \
  --deselect suites/conformance/test_groups.py::test_seeded_member_faults_lose_nothing \
  --deselect 'suites/conformance/test_durability.py::test_no_loss_no_uncommitted_read_no_skip[leader-kill]' \
  --deselect 'suites/conformance/test_durability.py::test_consumers_keep_up_under_leader_faults[leader-kill]' \
  --deselect 'suites/conformance/test_kip392_fetching.py::test_consumer_moves_when_its_replica_leaves_the_isr_and_returns[cut-off]' \
  --deselect 'suites/conformance/test_kip392_fetching.py::test_consumer_moves_when_its_replica_leaves_the_isr_and_returns[slowed]' \
  --deselect 'suites/conformance/test_transactions.py::test_read_committed_sees_only_whole_committed_transactions[coordinators-cut-pause]' \
  --deselect suites/conformance/test_kip392_fetching.py::test_follower_served_records_are_not_held_back_at_a_quiet_rate \
  --deselect tests/integration/test_spark_sweep.py \
  --deselect suites/conformance/test_kip320.py

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
	@# kafkajs under test: Node.js and npm (Debian's nodejs and npm where node is absent).
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
	  echo "== highwater: installing Debian's nodejs and npm (kafkajs worker)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  ( $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null ) \
	    || echo "== highwater: nodejs not installed; --client kafkajs will be refused"; }
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
	$(BIN)/pytest $(PYTEST_ARGS) $(TEST_PATHS) --profile $(PROFILE) --client-rotation $(CLIENT_ROTATION) $(DESELECT) --results results/make-test
	$(BIN)/highwater report results/make-test --out results/make-test-report --quiet; \
	  code=$$?; [ $$code -eq 0 ] || [ $$code -eq 3 ] || { echo "== highwater: the report of make test's runs exited $$code"; exit 1; }

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
