#!/usr/bin/env python3
"""Compose boot beside local boot: the same 3-broker / 3-rack cluster started N times on each
backend, alternating (so drift on a shared machine hits both), with medians and their ratio:
  - boot:     from start() until every broker is registered and answers through every rack,
  - teardown: stop() (processes or containers gone).
Images (``highwater images build``), Kafka and Toxiproxy are ready before timing.

    flock /tmp/highwater-cluster.lock .venv/bin/python benchmarks/compose_boot.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from highwater.harness.compose.backend import ComposeCluster  # noqa: E402
from highwater.harness.compose.images import build_images  # noqa: E402
from highwater.harness.config import ClusterSpec  # noqa: E402
from highwater.harness.distribution import default_version, ensure_kafka  # noqa: E402
from highwater.harness.local.cluster import Cluster  # noqa: E402
from highwater.harness.toxiproxy import ensure_toxiproxy  # noqa: E402


def one_run(kind: type[Cluster], version: str) -> tuple[float, float]:
    cluster = kind(ClusterSpec(brokers=3, racks=3, kafka_version=version, name=f"bench-{kind.backend_name}"))
    t0 = time.monotonic()
    try:
        cluster.start()
        boot = time.monotonic() - t0
    finally:
        t1 = time.monotonic()
        cluster.stop()
        teardown = time.monotonic() - t1
    return boot, teardown


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kafka-version", default=None)
    args = ap.parse_args()
    version = args.kafka_version or default_version()
    ensure_kafka(version)
    ensure_toxiproxy()
    build_images(version)
    kinds: list[type[Cluster]] = [Cluster, ComposeCluster]
    boots: dict[str, list[float]] = {k.backend_name: [] for k in kinds}
    downs: dict[str, list[float]] = {k.backend_name: [] for k in kinds}
    print(f"Kafka {version}, 3 brokers / 3 racks, {args.runs} runs per backend (alternating)")
    for i in range(args.runs):
        for kind in kinds:
            b, d = one_run(kind, version)
            boots[kind.backend_name].append(b)
            downs[kind.backend_name].append(d)
            print(f"  run {i + 1} {kind.backend_name:8s} boot {b:6.2f}s  teardown {d:5.2f}s", flush=True)
    for name in boots:
        bs, ds = boots[name], downs[name]
        print(
            f"{name:8s} boot median {statistics.median(bs):6.2f}s (min {min(bs):.2f}, max {max(bs):.2f})"
            f"  teardown median {statistics.median(ds):5.2f}s"
        )
    ratio = statistics.median(boots["compose"]) / statistics.median(boots["local"])
    print(f"compose/local boot median ratio: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
