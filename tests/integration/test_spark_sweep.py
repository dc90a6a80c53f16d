"""``highwater sweep --master spark://...`` on a real standalone Spark cluster (a master and two
workers of one core each, on 127.0.0.1) with real Kafka runs: two cells of the shortest real
scenario (KIP-392's rack-local reads, 20 s of workload in the ci profile), one per client, run
at once on the two workers into one campaign; one cell's first attempt is refused with the
harness-error code (``HIGHWATER_SWEEP_REFUSE_FIRST``) and tried again, the other runs once.

The standalone cluster (``highwater.spark_standalone``) is ours like a Kafka cluster is: an owner
lock and a registry of its processes, reaped by the next start if the test is killed, and dying
with the test process. Every process of it (and whatever it starts: executors, Python workers,
the runs) carries its owner's mark in its environment, which is how the test proves that none is
left and that none listens beyond loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from highwater.harness.lifecycle import address_free
from highwater.harness.procs import proc_cmdline, spawn
from highwater.harness.waiting import wait_until
from highwater.spark_standalone import owned_pids, standalone
from highwater.suites.nightly import nightly
from highwater.sweep_cells import REFUSE_FIRST_ENV

SCENARIO = "suites/conformance/test_kip392_fetching.py::test_each_rack_reads_from_its_own_replica"
KAFKA = "4.4.0"
CLIENTS = ("kafka-python", "confluent-kafka")
RETRIED = "confluent-kafka"  # the cell whose first attempt the knob refuses


def listening_addresses(pids: list[int]) -> set[str]:
    """The local addresses of the TCP sockets these processes listen on (/proc/net/tcp{,6})."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = set()
    for name in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN, one of ours
                found.add(fields[1].split(":")[0])
    return found


def is_loopback(hex_address: str) -> bool:
    if len(hex_address) == 8:  # IPv4, little-endian: the first octet is the last byte
        return hex_address[6:8] == "7F"
    raw = bytes.fromhex(hex_address)  # IPv6 in four little-endian words
    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]
    addr = b"".join(words)
    return addr == bytes(15) + b"\x01" or (addr[:12] == bytes(10) + b"\xff\xff" and addr[12] == 127)


@nightly("make campaign runs it; the sweep's cells, retries and master URLs are unit-tested in make test", 95)
def test_a_sweep_spread_over_a_standalone_cluster_retries_a_harness_error_only(tmp_path: Path) -> None:
    results = tmp_path / "results"
    campaign = "spread"
    phases: dict[str, float] = {}  # printed, never asserted: the test's time goes to make test's budget
    t = time.monotonic()
    with standalone() as spark:
        phases["standalone up"] = time.monotonic() - t
        owner, port = spark.owner, spark.port
        assert listening_addresses(owned_pids(owner)), "the master and workers listen somewhere"
        log = tmp_path / "sweep.log"
        sweep = spawn(  # dies with this process, so a killed test leaves no driver behind
            [sys.executable, "-m", "highwater.cli", "sweep", "--master", spark.url, "--versions", KAFKA]
            + ["--client", ",".join(CLIENTS), "--profile", "ci", "--campaign", campaign]
            + ["--results", str(results), "--progress", "plain", SCENARIO],
            log_path=log,
            env={**spark.env, REFUSE_FIRST_ENV: RETRIED},
        )
        try:
            # while both cells run (executors, their Python workers, the runs' brokers and
            # proxies): nothing of ours listens beyond loopback
            wait_until(
                lambda: (
                    sum("CoarseGrainedExecutorBackend" in proc_cmdline(p) for p in owned_pids(owner)) == 2
                    or sweep.poll() is not None
                ),
                60,
                "an executor on each worker",
            )
            wide = {a for a in listening_addresses(owned_pids(owner)) if not is_loopback(a)}
            sweep.wait(timeout=600)
        finally:
            if sweep.poll() is None:
                sweep.kill()
                sweep.wait()
        out = log.read_text()
        print(out)
        phases["sweep"] = time.monotonic() - t - phases["standalone up"]
        assert wide == set(), f"listening beyond loopback: {wide}"
        assert sweep.returncode == 0, out
        t_down = time.monotonic()
    phases["standalone down"] = time.monotonic() - t_down

    # no Spark JVM of ours is left (the block proved every marked process gone) and no port taken
    assert not owned_pids(owner)
    assert address_free("127.0.0.1", port)

    campaign_dir = results / campaign
    state = json.loads((campaign_dir / "sweep.cells.json").read_text())
    outcomes = state["outcomes"]
    assert sorted(outcomes) == sorted(f"{KAFKA} {c} {SCENARIO}" for c in CLIENTS), outcomes
    attempts = {key.split()[1]: o["attempts"] for key, o in outcomes.items()}
    assert attempts == {"kafka-python": 1, "confluent-kafka": 2}, outcomes
    assert all(o["status"] in ("passed", "failed") for o in outcomes.values()), outcomes  # verdicts, no error
    cell_log = next((campaign_dir / "cells").glob("*confluent-kafka*.log")).read_text()
    assert "unknown backend 'refused-first-attempt'" in cell_log, cell_log[-2000:]

    runs = sorted(p.parent for p in campaign_dir.rglob("verdict.json"))
    assert len(runs) == 2, runs
    clients = sorted(json.loads((r / "run.json").read_text())["client"].split()[0] for r in runs)
    assert clients == sorted(CLIENTS)

    report = subprocess.run(
        [sys.executable, "-m", "highwater.cli", "report", str(campaign_dir), "--no-spark-checks", "--quiet"],
        capture_output=True,
        text=True,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    phases["report"] = time.monotonic() - t - sum(phases.values())
    print("phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in phases.items()))
    assert report.returncode in (0, 1, 3), report.stderr[-3000:]
    summary = json.loads((campaign_dir / "report" / "summary.json").read_text())
    assert summary["totals"]["runs"] == 2, summary["totals"]
