"""``highwater campaign``: what ``make campaign`` runs.

Until the chaos campaign of the suites lands, this is a short, honest smoke round: start a
3-broker, 3-rack cluster, write records, read them back with one consumer per rack
(``client_rack`` set), and print which broker served each rack's consumer according to
Toxiproxy's byte counters, then tear down.
"""

from __future__ import annotations

import argparse
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from .cluster import Cluster
from .config import ClusterSpec


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("campaign", help="run the default campaign on a local multi-rack cluster")
    p.add_argument("--kafka-version", default=None)
    p.add_argument("--records", type=int, default=2000)
    p.set_defaults(func=run_smoke_round)


def run_smoke_round(args: argparse.Namespace) -> int:
    from .cli import progress

    topic, size = "highwater-smoke", 512
    with Cluster(ClusterSpec(brokers=3, racks=3, kafka_version=args.kafka_version), progress=progress) as cluster:
        progress(f"cluster up in {cluster.boot_seconds:.1f}s")
        cluster.create_topic(topic, partitions=1, replication_factor=3)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks="all", linger_ms=5)
        for i in range(args.records):
            producer.send(topic, value=(b"%08d" % i).ljust(size, b"."), partition=0)
        producer.flush(timeout=60)
        producer.close()
        state = cluster.partition_state(topic, 0)
        print(f"{topic}-0: leader {state.leader} ({cluster.rack_of(state.leader)}), ISR {list(state.isr)}, "
              f"HW {state.hw}, LEO {state.leo}")
        failures = 0
        for rack in cluster.topo.racks:
            before = cluster.client_bytes(rack)
            consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(rack), client_rack=rack,
                                     auto_offset_reset="earliest", enable_auto_commit=False)
            consumer.assign([TopicPartition(topic, 0)])
            seen, deadline = 0, time.monotonic() + 60
            while seen < args.records and time.monotonic() < deadline:
                seen += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
            consumer.close()
            after = cluster.client_bytes(rack)
            served = {b: after[b].downstream - before[b].downstream for b in after}
            top = max(served, key=lambda b: served[b])
            local = [b for b in state.isr if cluster.rack_of(b) == rack]
            ok = seen == args.records and (not local or top in local)
            failures += not ok
            print(f"consumer client_rack={rack}: read {seen}/{args.records}; bytes served per broker "
                  f"{served}; mostly by broker {top} ({cluster.rack_of(top)}) -> "
                  f"{'follower fetching OK' if ok else 'UNEXPECTED'}")
    return 1 if failures else 0
