#!/usr/bin/env python3
"""What the disk fault layer (lossyfs, ``harness.diskfs``) costs a broker: produce throughput and
latency with the brokers' log directories on it, next to the same cluster shape without it.

Each run starts a 3-broker cluster (local backend, 3 racks), ``plain`` or ``lossy``
(``ClusterSpec.disk``), creates an RF=3 topic of 3 partitions and produces N records of
``--value-bytes`` with acks=all from kafka-python (linger 2 ms), timing the whole send-to-last-ack
span (records/s) and each record's send-to-ack latency (p99). The runs alternate plain and lossy,
so the machine's drift falls on both. Prints every run, the medians, and the ratios lossy/plain
(the goal: records/s no worse than 1/1.5 of plain, p99 no more than 1.5x). The page cache is the
same for both: lossyfs passes every write through to the real directory, so what is measured is
the FUSE round trips of the writes and fsyncs Kafka makes.

    .venv/bin/python benchmarks/disk_layer.py [--records 50000] [--runs 3] [--value-bytes 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka import KafkaProducer  # noqa: E402

from highwater.harness.backends import start_backend  # noqa: E402
from highwater.harness.config import ClusterSpec  # noqa: E402


def one_run(disk: str, records: int, value_bytes: int) -> tuple[float, float]:
    """(records/s, p99 ms) of one produce run on a fresh cluster with ``disk``."""
    cluster = start_backend("local", ClusterSpec(brokers=3, racks=3, disk=disk))
    try:
        cluster.create_topic("bench", 3, 3)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks="all", linger_ms=2)
        latencies: list[float] = []
        value = b"x" * value_bytes

        def done(sent: float) -> object:
            return lambda _md: latencies.append(time.perf_counter() - sent)

        started = time.perf_counter()
        for i in range(records):
            producer.send("bench", value, partition=i % 3).add_callback(done(time.perf_counter()))
        producer.flush(120)
        elapsed = time.perf_counter() - started
        producer.close(10)
        if len(latencies) != records:
            raise SystemExit(f"{disk}: only {len(latencies)} of {records} records acknowledged")
        p99 = statistics.quantiles(latencies, n=100)[98] * 1000
        return records / elapsed, p99
    finally:
        cluster.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--value-bytes", type=int, default=100)
    args = ap.parse_args()
    got: dict[str, list[tuple[float, float]]] = {"plain": [], "lossy": []}
    for run in range(args.runs):
        for disk in ("plain", "lossy"):
            rate, p99 = one_run(disk, args.records, args.value_bytes)
            got[disk].append((rate, p99))
            print(f"run {run + 1} {disk:5}: {rate:9.0f} records/s  p99 {p99:7.1f} ms", flush=True)
    med = {d: (statistics.median(r for r, _ in v), statistics.median(p for _, p in v)) for d, v in got.items()}
    for d, (rate, p99) in med.items():
        print(f"median {d:5}: {rate:9.0f} records/s  p99 {p99:7.1f} ms")
    print(
        f"lossy/plain: throughput {med['lossy'][0] / med['plain'][0]:.2f}x  "
        f"p99 {med['lossy'][1] / med['plain'][1]:.2f}x  (goal: >= 0.67x and <= 1.5x)"
    )


if __name__ == "__main__":
    main()
