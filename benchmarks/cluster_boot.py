#!/usr/bin/env python3
"""How long a cluster takes to come up and to go away.

For each shape (3 brokers / 3 racks and 6 brokers / 3 racks) it starts a cluster N times and
prints, as medians (and min/max) over the runs:
  - boot:     from Cluster.start() until every broker is registered and unfenced,
  - in sync:  boot plus creating an RF=3 topic until every replica is in its ISR,
  - teardown: Cluster.stop() (every process gone, the directory removed).
Kafka and Toxiproxy are set up before timing (``highwater setup``), so downloads are not counted.

    .venv/bin/python benchmarks/cluster_boot.py [--runs 5] [--kafka-version V]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from highwater.harness.config import ClusterSpec  # noqa: E402
from highwater.harness.distribution import default_version, ensure_kafka  # noqa: E402
from highwater.harness.local.cluster import Cluster  # noqa: E402
from highwater.harness.toxiproxy import ensure_toxiproxy  # noqa: E402


def one_run(brokers: int, racks: int, version: str) -> tuple[float, float, float]:
    cluster = Cluster(ClusterSpec(brokers=brokers, racks=racks, kafka_version=version))
    t0 = time.monotonic()
    try:
        cluster.start()
        boot = time.monotonic() - t0
        cluster.create_topic("bench", partitions=3, replication_factor=3)
        in_sync = time.monotonic() - t0
    finally:
        t1 = time.monotonic()
        cluster.stop()
        teardown = time.monotonic() - t1
    return boot, in_sync, teardown


def fmt(values: list[float]) -> str:
    return f"median {statistics.median(values):6.2f}s  (min {min(values):.2f}, max {max(values):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kafka-version", default=None)
    ap.add_argument("--shapes", default="3x3,6x3", help="BROKERSxRACKS,... (default 3x3,6x3)")
    args = ap.parse_args()
    version = args.kafka_version or default_version()
    ensure_kafka(version)
    ensure_toxiproxy()
    print(f"Kafka {version}, {args.runs} runs per shape")
    for shape in args.shapes.split(","):
        brokers, racks = (int(x) for x in shape.split("x"))
        boots, syncs, downs = [], [], []
        for i in range(args.runs):
            b, s, d = one_run(brokers, racks, version)
            boots.append(b)
            syncs.append(s)
            downs.append(d)
            print(f"  {brokers}b/{racks}r run {i + 1}: boot {b:.2f}s, in sync {s:.2f}s, teardown {d:.2f}s", flush=True)
        print(f"{brokers} brokers / {racks} racks:")
        print(f"  boot (all brokers registered):  {fmt(boots)}")
        print(f"  boot + RF=3 topic in sync:      {fmt(syncs)}")
        print(f"  teardown:                       {fmt(downs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
