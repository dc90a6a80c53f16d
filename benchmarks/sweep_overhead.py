#!/usr/bin/env python3
"""What spreading a sweep through Spark costs, runs per hour, and the nightly on N machines.

Runs the same cells (one short scenario on each ``--clients`` client, one Kafka release, the
``ci`` profile) three ways, ``--repeats`` times each: directly one after another; directly
``--slots`` at a time (the very task body a Spark executor runs, ``highwater.spark_sweep.run_cell``:
``highwater setup``, then the ``highwater run`` child, in a process of its own per slot); and
through ``highwater sweep --master`` on a local standalone cluster of ``--slots`` one-core
workers (``highwater.spark_standalone``). Prints the median walls, Spark's overhead against the
direct run at the same concurrency (the sweep's own preparation, listing releases and installing
clients, is left out: a sweep without Spark does it too), and runs per hour.

Then the nightly (``docs/ci-recipes.md``: the conformance and sweep suites on every release from
3.3.1 to the newest, and the chaos suite's eight 300 s runs) on 1..N machines of this size, from
measured times: per cell (a suite module on one release) the cell's fixed cost (fresh
``highwater run``, pytest, cluster boot and teardown: a measured cell's wall minus its runs'),
plus per test its nightly workload (the nightly profile's 60 s; most scenario plans are that long
at the nightly profile, a few longer or shorter: ``suites/scenario.py``) and the measured per-run cost
beyond the workload (set-up, settle, final read, checks: ``run.json`` phases), stretched by the
slowdown measured when --slots cells share a machine. With ``--campaign DIR`` (repeatable: a real
nightly's results) each module's run times are read from its ``run.json`` files instead.
Cells are placed longest first on the least loaded slot.

    flock /tmp/hw-cluster.lock .venv/bin/python benchmarks/sweep_overhead.py --repeats 3
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from highwater.harness.distribution import published_versions  # noqa: E402
from highwater.profiles import PROFILES  # noqa: E402
from highwater.spark_standalone import standalone  # noqa: E402
from highwater.spark_sweep import run_cell  # noqa: E402
from highwater.sweep import releases_in_range  # noqa: E402
from highwater.sweep_cells import Cell, CellResult, CellSettings  # noqa: E402

SCENARIO = "suites/conformance/test_kip392_fetching.py::test_each_rack_reads_from_its_own_replica"
NIGHTLY_SUITES = ("suites/conformance", "suites/sweep")
#: the chaos suite's nightly runs: five seeds and three group seeds at the chaos length
CHAOS_RUNS = 5 + 3


def _iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def run_spans(campaign: Path) -> list[tuple[str, float, float]]:
    """(the run's test module, its span in s, its workload in s) of every run.json under ``campaign``."""
    out = []
    for path in sorted(campaign.rglob("run.json")):
        m = json.loads(path.read_text())
        if not (m.get("started_at") and m.get("ended_at")):
            continue
        module = m.get("repro", "").split()[-1].split("::")[0].rsplit("/", 1)[-1]
        workload = float((m.get("stats") or {}).get("phases", {}).get("workload") or m["spec"]["duration"])
        out.append((module, _iso(m["ended_at"]) - _iso(m["started_at"]), workload))
    return out


# --- measuring ---------------------------------------------------------------------------------


def direct(cells: Sequence[Cell], settings: CellSettings, slots: int) -> tuple[float, list[CellResult]]:
    """The cells' task bodies without Spark, ``slots`` processes at a time."""
    t = time.monotonic()
    with ProcessPoolExecutor(max_workers=slots) as pool:
        results = list(pool.map(run_cell, cells, [settings] * len(cells)))
    return time.monotonic() - t, results


def through_spark(url: str, clients: Sequence[str], kafka: str, results: Path, campaign: str) -> tuple[float, float]:
    """``highwater sweep --master``: (seconds from its first cell line to its exit, Spark's start-up)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "highwater.cli", "sweep", "--master", url, "--versions", kafka]
        + ["--client", ",".join(clients), "--campaign", campaign, "--results", str(results)]
        + ["--progress", "plain", SCENARIO],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    began, up = None, float("nan")
    for line in proc.stderr:
        if began is None and " cells, " in line and "to run through Spark" in line:
            began = time.monotonic()  # the sweep's own preparation is done: Spark's part begins
        if " up in " in line:
            up = float(line.split(" up in ", 1)[1].split("s:", 1)[0])
    if proc.wait() != 0 or began is None:
        raise SystemExit(f"the sweep through Spark failed (exit {proc.returncode}); see {results / campaign}")
    return time.monotonic() - began, up


# --- the nightly -------------------------------------------------------------------------------


def nightly_tests() -> dict[str, int]:
    """Tests per module of the nightly's sweep suites (pytest's collection, nightly profile)."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *NIGHTLY_SUITES]
        + ["--profile", "nightly"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    per: dict[str, int] = defaultdict(int)
    for line in out.splitlines():
        if "::" in line:
            per[line.split("::")[0].rsplit("/", 1)[-1]] += 1
    return dict(per)


def makespan(cells: list[float], slots: int) -> float:
    """Longest first, each on the least loaded slot."""
    load = [0.0] * slots
    heapq.heapify(load)
    for c in sorted(cells, reverse=True):
        heapq.heappush(load, heapq.heappop(load) + c)
    return max(load)


def clock(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", default="kafka-python,confluent-kafka", help="one cell per client")
    ap.add_argument("--kafka-version", default="4.4.0")
    ap.add_argument("--slots", type=int, default=2, help="cells at once on this machine (and Spark workers)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--machines", default="1,2,4,8", help="machine counts for the nightly's wall time")
    ap.add_argument("--campaign", action="append", type=Path, default=[], help="a real nightly's results")
    ap.add_argument("--work", type=Path, default=None, help="where the benchmark's campaigns go (default: a temp dir)")
    args = ap.parse_args()
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    work = args.work or Path(tempfile.mkdtemp(prefix="hw-sweep-overhead-"))
    results = (work / "results").resolve()
    cells = [Cell(args.kafka_version, c, SCENARIO) for c in clients]

    walls: dict[str, list[float]] = defaultdict(list)
    cell_seconds: dict[str, list[float]] = defaultdict(list)
    ups: list[float] = []
    with standalone(workers=args.slots) as spark:
        for r in range(args.repeats):
            for name, slots in (("direct, one at a time", 1), (f"direct, {args.slots} at a time", args.slots)):
                settings = CellSettings(f"direct-{slots}-{r}", str(results), cwd=str(Path.cwd()))
                wall, done = direct(cells, settings, slots)
                walls[name].append(wall)
                cell_seconds[name] += [d.seconds for d in done]
                print(f"repeat {r + 1}: {name}: {wall:.1f} s ({', '.join(f'{d.seconds:.1f}' for d in done)})")
            name = f"Spark standalone, {args.slots} workers"
            wall, up = through_spark(spark.url, clients, args.kafka_version, results, f"spark-{r}")
            walls[name].append(wall)
            ups.append(up)
            state = json.loads((results / f"spark-{r}" / "sweep.cells.json").read_text())
            cell_seconds[name] += [o["seconds"] for o in state["outcomes"].values()]
            print(f"repeat {r + 1}: {name}: {wall:.1f} s (Spark up in {up:.1f} s)")

    n = len(cells)
    print(f"\n{n} cells ({', '.join(clients)} x {SCENARIO}), Kafka {args.kafka_version}, {args.repeats} repeats")
    print(f"  {'how':<32} {'median wall':>11} {'median cell':>11} {'runs/hour':>9}")
    for name, values in walls.items():
        wall = statistics.median(values)
        print(f"  {name:<32} {wall:10.1f}s {statistics.median(cell_seconds[name]):10.1f}s {3600 * n / wall:9.0f}")
    spark_name, same = f"Spark standalone, {args.slots} workers", f"direct, {args.slots} at a time"
    spark_wall, direct_wall = statistics.median(walls[spark_name]), statistics.median(walls[same])
    extra = spark_wall - direct_wall
    print(
        f"Spark against direct at {args.slots} at a time: +{extra:.1f} s ({spark_wall / direct_wall - 1:+.1%} for "
        f"these {n} cells; SparkContext up in {statistics.median(ups):.1f} s of it, then executors and Python workers)"
    )

    # the nightly, from the measured figures
    alone = statistics.median(cell_seconds["direct, one at a time"])
    shared = statistics.median(cell_seconds[same])
    stretch = shared / alone  # how much slower a cell is when --slots share the machine
    spans = [s for r in range(args.repeats) for s in run_spans(results / f"direct-1-{r}")]  # runs alone
    run_extra = statistics.median(s - w for _, s, w in spans)  # per run: set-up, settle, final read, checks
    run_span = statistics.median(s for _, s, _ in spans)
    fixed = alone - run_span  # per cell: highwater run, pytest, cluster boot and teardown
    measured: dict[str, list[float]] = defaultdict(list)
    for campaign in args.campaign:
        for module, span, _ in run_spans(campaign):
            measured[module].append(span)
    tests = nightly_tests()
    profile = PROFILES["nightly"]
    per_release = []
    for module, count in sorted(tests.items()):
        if measured.get(module):
            per_release.append(fixed + sum(measured[module]) * count / len(measured[module]))
        else:
            per_release.append(fixed + count * (profile.run_seconds + run_extra))
    releases = releases_in_range(published_versions(), "3.3.1", None)
    chaos = fixed + CHAOS_RUNS * (profile.chaos_seconds + run_extra)
    nightly = per_release * len(releases) + [chaos]
    print(
        f"\nthe nightly: {len(releases)} releases ({releases[0]}..{releases[-1]}) x {len(tests)} modules "
        f"({sum(tests.values())} tests) + the chaos suite = {len(nightly)} cells, "
        f"{clock(sum(nightly))} of cells run alone"
    )
    print(
        f"  measured: a cell's fixed cost {fixed:.1f} s, a run's cost beyond its workload {run_extra:.1f} s, "
        f"{stretch:.2f}x slower with {args.slots} cells on one machine; "
        + (
            f"modules measured in --campaign: {len(measured)}"
            if measured
            else f"workload per test: the nightly profile's {profile.run_seconds:.0f} s"
        )
    )
    spread_cost = extra  # the Spark part's cost, once per sweep
    for m in (int(x) for x in args.machines.split(",")):
        one = makespan(nightly, m)
        both = makespan([c * stretch for c in nightly], m * args.slots)
        best = min(one, both)
        print(
            f"  {m} machine{'s' if m > 1 else ''}: {clock(one)} with 1 cell per machine, {clock(both)} with "
            f"{args.slots}; through Spark +{spread_cost:.0f} s ({spread_cost / best:.2%})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
