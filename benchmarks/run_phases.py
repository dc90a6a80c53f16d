#!/usr/bin/env python3
"""Where a campaign's time goes: the phases of its runs, and runs per hour.

Reads every ``run.json`` under the given results directories (a campaign, or a results root
with many) and prints, per phase (``setup``, ``workload``, ``heal``, ``settle``, ``final_read``,
``checks``; recorded by ``highwater.runner`` since the manifest's ``stats.phases``), the median,
the maximum and the share of all recorded time; then runs per hour of wall time (first start to
last end) and of run time (the sum of the runs' own durations: what a sweep of back-to-back runs
could reach if cluster boots and pytest cost nothing). Settling after faults is what sweeps pay
for most besides the workload itself; this is where to see it shrink.

    .venv/bin/python benchmarks/run_phases.py results/make-test [more dirs...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from highwater.core.manifest import ManifestError, RunManifest  # noqa: E402

PHASES = ("setup", "workload", "heal", "settle", "final_read", "checks")


def _time(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", type=Path)
    args = ap.parse_args()
    manifests: list[RunManifest] = []
    for d in args.dirs:
        for path in sorted(d.rglob("run.json")):
            try:
                manifests.append(RunManifest.read(path))
            except ManifestError as exc:
                print(f"skipped {path}: {exc}", file=sys.stderr)
    timed = [m for m in manifests if m.stats is not None and m.stats.phases]
    if not timed:
        print(f"no run with recorded phases among {len(manifests)} runs")
        return 1
    total = sum(sum(m.stats.phases.values()) for m in timed if m.stats is not None)
    print(f"{len(timed)} runs with phases (of {len(manifests)} found)")
    print(f"  {'phase':<11} {'median':>8} {'max':>8} {'share':>6}")
    for phase in PHASES:
        values = [m.stats.phases[phase] for m in timed if m.stats is not None and phase in m.stats.phases]
        if values:
            share = sum(values) / total
            print(f"  {phase:<11} {statistics.median(values):7.2f}s {max(values):7.2f}s {share:6.1%}")
    spans = [(_time(m.started_at), _time(m.ended_at)) for m in timed if m.started_at and m.ended_at]
    if spans:
        wall = max(e for _, e in spans) - min(s for s, _ in spans)
        own = sum(e - s for s, e in spans)
        print(f"runs per hour: {3600 * len(spans) / wall:.1f} of wall time, {3600 * len(spans) / own:.1f} of run time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
