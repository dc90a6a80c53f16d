"""Client-version bisects on real clusters. make test runs the franz-go one (two builds of the Go
worker, HW-30); the nightly the kafka-python one: ``highwater bisect --over client`` over two
kafka-python releases, each installed into its own virtual environment and judged by a real run
of the group scenario (``suites/conformance/test_groups.py``), finds where kafka-python #3131
(a member's retained partitions never fetched again after an eager rebalance) was fixed: 3.0.8
fails, 3.0.9 passes. The bisect prints its boundary on stdout and writes its campaign.

Two releases, not three (3.0.7 too, as it was until 2026-11-26): each probe is a cluster and a
28 s scenario, and make test's budget paid for HW-16 with the third; the search between the ends
is the unit tests' (``tests/unit/test_bisect.py``), the machinery end to end (a virtual
environment per release, runs, verdicts, the boundary) is this test's. Nightly since 2026-12-07
(make test's budget)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from highwater.suites.nightly import nightly

SCENARIO = "suites/conformance/test_groups.py::test_every_partition_is_read_through_a_member_restart"
ROOT = Path(__file__).resolve().parents[2]


def _bisect(results: Path, scenario: str, client: str, good: str, bad: str) -> subprocess.CompletedProcess[str]:
    """``highwater bisect scenario --over client`` between two releases of ``client``, one run
    each, into ``results``; asserts it ended 0 (a boundary found)."""
    argv = [sys.executable, "-m", "highwater.cli", "bisect", scenario, "--over", "client"]
    argv += ["--client", client, "--good", good, "--bad", bad, "--runs", "1"]
    argv += ["--results", str(results)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _runs(results: Path) -> dict[str, Path]:
    """The bisect's run folders by their manifest's client label (one campaign, bisect-<time>)."""
    (campaign,) = results.iterdir()
    return {json.loads(p.read_text())["client"]: p.parent for p in campaign.glob("*/run.json")}


@nightly(
    "the bisect's search, verdicts and report are unit-tested (test_bisect, test_bisect_report); this installs "
    "and runs kafka-python releases end to end",
    95,
)
def test_bisect_over_kafka_python_releases_finds_the_fix(tmp_path: Path) -> None:
    done = _bisect(tmp_path, SCENARIO, "kafka-python", "3.0.9", "3.0.8")
    lines = done.stdout.splitlines()  # the probes' pytest lines, then the bisect's report
    assert "first release with the bad verdict: 3.0.8 (last good: 3.0.9)" in lines, done.stdout
    assert "probed 2 of 2 versions" in done.stdout, done.stdout
    assert "3.0.8: bad (1 of 1 runs failed" in done.stderr and "3.0.9: good (0 of 1 runs failed" in done.stderr
    runs = _runs(tmp_path)
    assert sorted(runs) == ["kafka-python 3.0.8", "kafka-python 3.0.9"], runs


#: the rack-local reads with franz-go's preferred replica rechecked every second
FRANZ_SCENARIO = (
    "suites/conformance/test_kip392_fetching.py::test_rack_consumers_asking_the_leader_again_every_second_read_on"
)


def test_bisect_over_franz_go_releases_finds_the_fix_of_its_recheck(tmp_path: Path) -> None:
    """``highwater bisect --over client`` over two franz-go releases, each its own build of the Go
    worker, finds where HW-30 was fixed: 1.20.2's rack consumers crash at their first
    preferred-replica recheck (their worker logs show the panic), 1.20.3's read on. The Go module
    proxy's list leaves 1.20.3 out; named as an end, it is asked for by itself. (The whole range,
    1.19.0-1.20.3, 6 versions, 4 probes, 2.7 min, is in docs/findings.md.)"""
    done = _bisect(tmp_path, FRANZ_SCENARIO, "franz-go", "1.20.3", "1.20.2")
    assert "first release with the bad verdict: 1.20.2 (last good: 1.20.3)" in done.stdout.splitlines(), done.stdout
    assert "1.20.2: bad (1 of 1 runs failed" in done.stderr and "1.20.3: good (0 of 1 runs failed" in done.stderr
    runs = _runs(tmp_path)
    assert sorted(runs) == ["franz-go 1.20.2", "franz-go 1.20.3"], runs
    logs = runs["franz-go 1.20.2"] / "logs" / "clients"
    assert any("panic: runtime error" in log.read_text() for log in logs.glob("consumer-*.log")), (
        "1.20.2 failed, but no consumer's log shows franz-go's panic"
    )
    clean = runs["franz-go 1.20.3"] / "logs" / "clients"
    assert not any("panic:" in log.read_text() for log in clean.glob("consumer-*.log"))
