"""Report at scale: aggregate N generated runs of M events each; print wall time and peak memory.

    .venv/bin/python benchmarks/report_scale.py [--runs 1000] [--events 100000] [--master local[*]]
                                                [--repeat 3] [--cold-only]

Reports over the same store: "cold" (no per-run results cached: every history goes through the
Spark checks, fetch shares and timelines; ``--repeat N`` runs N of them and prints the median,
as this machine is shared and one run can be 10 % off) and "warm" (a second report, as a
nightly one over a store that grew by nothing: the per-run results come from
reports.run_cache and only the cross-run aggregation and rendering run again).

Generation is not timed. To keep it to a minute, ``--templates`` distinct histories are
generated (a few with a poll-skip or a lost write) and hard-linked into the N run directories;
Spark still reads, shuffles and checks every run's file as a separate run. Each template's
verdict.json comes from the Python checks, so the report also compares Spark with them.
Peak memory: this process (driver Python) and its children (the Spark JVM), from getrusage.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bulk_histories import generate  # noqa: E402  (beside this script)

from highwater.core.checks import overall, run_all_checks  # noqa: E402
from highwater.reports.aggregate import Options, build  # noqa: E402
from highwater.reports.junit import write_junit  # noqa: E402
from highwater.reports.render_html import write_html  # noqa: E402
from highwater.reports.spark_session import Progress  # noqa: E402
from highwater.reports.summary import write_summary  # noqa: E402


def make_store(root: Path, runs: int, events: int, templates: int) -> None:
    marker = root / f".complete-{runs}-{events}-{templates}"
    if marker.exists():
        print(f"reusing {root}")
        return
    shutil.rmtree(root, ignore_errors=True)
    tdir = root.parent / (root.name + "-templates")
    t0 = time.monotonic()
    tmark = tdir / f".complete-{events}-{templates}"
    if not tmark.exists():  # templates are shared by store sizes: --runs 50, 200, 1000 reuse them
        shutil.rmtree(tdir, ignore_errors=True)
        _make_templates(tdir, events, templates)
        tmark.touch()
    for i in range(runs):
        k = i % templates
        d = root / f"campaign-{i // 250:02d}" / f"run-{i:04d}"
        d.mkdir(parents=True)
        for name in ("history.parquet", "verdict.json"):
            os.link(tdir / f"t{k}" / name, d / name)
        (d / "run.json").write_text(
            json.dumps(
                {
                    "suite": "chaos",
                    "scenario": ["kill-follower", "partition-rack"][i % 2],
                    "kafka_version": ["4.3.1", "3.9.1"][(i // 2) % 2],
                    "client": "kafka-python 3.0.12",
                    "seed": i,
                    "repro": f"highwater campaign --seed {i}",
                    "started_at": f"2025-01-{1 + i // 250:02d}T00:00:00Z",
                }
            )
        )
    marker.touch()
    print(f"generated {runs} runs ({templates} templates of {events} events) in {time.monotonic() - t0:.1f}s")


def _make_templates(tdir: Path, events: int, templates: int) -> None:
    for k in range(templates):
        p = tdir / f"t{k}" / "history.parquet"
        generate(p, f"t{k}", events, skip=k % 5 == 1, lost=k % 5 == 3)
        verdicts = run_all_checks(p)
        (p.parent / "verdict.json").write_text(
            json.dumps({"valid": overall(verdicts), "verdicts": [v.to_json() for v in verdicts]}, default=str)
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--templates", type=int, default=10)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/highwater-report-scale"))
    ap.add_argument("--max-timelines", type=int, default=40)
    ap.add_argument("--cold-only", action="store_true", help="skip the second (warm-cache) report")
    ap.add_argument(
        "--repeat", type=int, default=1, help="cold reports to run (the machine is shared and noisy: quote the median)"
    )
    a = ap.parse_args()
    make_store(a.dir, a.runs, a.events, a.templates)
    out = a.dir.parent / (a.dir.name + "-report")
    out.mkdir(exist_ok=True)
    cache = a.dir / ".parquet-cache"
    total_events = a.runs * a.events
    print(
        f"runs={a.runs} events/run={a.events} total_events={total_events:,} master={a.master} on {os.cpu_count()} cores"
    )
    colds: list[float] = []
    warm: float | None = None
    labels = [f"cold {i + 1}/{a.repeat}" if a.repeat > 1 else "cold" for i in range(a.repeat)]
    for label in labels + ([] if a.cold_only else ["warm"]):
        if label.startswith("cold"):
            shutil.rmtree(cache / "runs", ignore_errors=True)  # no per-run result of an earlier report
        load0 = os.getloadavg()
        t0 = time.monotonic()
        data = build(a.dir, Options(master=a.master, max_timelines=a.max_timelines, cache_dir=cache), Progress())
        write_html(data, out / "report.html")
        s = write_summary(data, out / "summary.json")
        write_junit(data, out / "junit.xml")
        wall = time.monotonic() - t0
        if label == "warm":
            warm = wall
        else:
            colds.append(wall)
        print(
            f"{label}: wall={wall:.1f}s ({total_events / wall / 1e6:.2f} M events/s); load average "
            f"before {load0[0]:.1f}, after {os.getloadavg()[0]:.1f}; verdict={s['valid']} "
            f"totals={s['totals']} disagreements={len(s['spark_python_disagreements'])}",
            flush=True,
        )
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"peak RSS: driver python {me:.0f} MiB, largest child (Spark JVM) {kids:.0f} MiB")
    print(
        f"CPU: Spark JVMs {ru.ru_utime + ru.ru_stime:.0f}s, driver python "
        f"{sum(resource.getrusage(resource.RUSAGE_SELF)[:2]):.0f}s"
    )
    if len(colds) > 1:
        print(
            f"cold: median {statistics.median(colds):.1f}s of {len(colds)} "
            f"(min {min(colds):.1f}s, max {max(colds):.1f}s)"
        )
    if warm is not None:
        print(f"cold (median)/warm = {statistics.median(colds) / warm:.1f}x")
    print(f"report: {out / 'report.html'} ({(out / 'report.html').stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
