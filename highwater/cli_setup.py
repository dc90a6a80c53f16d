"""``highwater setup``: assemble Kafka distributions, build Toxiproxy and the Java client worker
(for the default Kafka release's ``kafka-clients``), install the pinned kafkajs and build the
pinned @confluentinc/kafka-javascript (where Node.js is found) and build the Go workers (franz-go's, Sarama's; where Go is found) into the cache."""

from __future__ import annotations

import argparse

from highwater.console import progress
from highwater.core.errors import SetupError
from highwater.harness.clients import ckjs
from highwater.harness.clients.franz_go import WORKER as FRANZ_GO
from highwater.harness.clients.go_worker import ensure_worker as ensure_go_worker
from highwater.harness.clients.go_worker import find_go
from highwater.harness.clients.java import ensure_worker
from highwater.harness.clients.kafkajs import ensure_tree, find_node, pinned_version
from highwater.harness.clients.sarama import WORKER as SARAMA
from highwater.harness.distribution import default_version, ensure_kafka, installed_versions
from highwater.harness.java_runtime import find_java
from highwater.harness.paths import home
from highwater.harness.toxiproxy import ensure_toxiproxy


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "setup",
        help="assemble Kafka (Maven Central) and Toxiproxy (Go) into the cache",
        description="Put into the cache (docs/setup.md) what runs need: the Kafka distribution(s) from "
        "Maven Central with a Java for each, the Java client worker, kafkajs and @confluentinc/kafka-javascript "
        "(where Node.js is found), "
        "Toxiproxy and lossyfs. Idempotent: what is there already is kept. Exit 0: ready, 4: it "
        "could not be done (one line says why).",
    )
    p.add_argument(
        "--kafka-version",
        action="append",
        metavar="V",
        help="Kafka version to assemble (repeatable); default: the newest stable release",
    )
    p.set_defaults(func=cmd_setup)


def cmd_setup(args: argparse.Namespace) -> int:
    from highwater.harness.diskfs import ensure_lossyfs

    versions = args.kafka_version or [default_version(progress)]
    for version in versions:
        dist = ensure_kafka(version, progress)
        java = find_java(version)
        progress(f"Kafka {version} ready ({dist.libs}); Java {java.major} at {java.executable}")
    # the Java client under test (--client java) is the default release's kafka-clients
    worker = ensure_worker(default_version(progress), progress)
    progress(f"Java client worker ready ({worker})")
    try:  # kafkajs under test (--client kafkajs): its pinned version's tree, when Node.js is here
        find_node()
        progress(f"kafkajs {pinned_version()} ready ({ensure_tree(pinned_version(), progress)})")
    except SetupError as exc:
        progress(f"{exc}: --client kafkajs will be refused")
    try:  # @confluentinc/kafka-javascript (--client ckjs): its pinned version, built from source
        progress(f"ckjs {ckjs.PINNED} ready ({ckjs.ensure_tree(ckjs.PINNED, progress)})")
    except SetupError as exc:
        progress(f"{exc}: --client ckjs will be refused")
    for go in (FRANZ_GO, SARAMA):  # the Go clients: each worker built against its pinned version, when Go is here
        try:
            find_go()
            pinned = go.pinned_version()
            progress(f"{go.name} {pinned} worker ready ({ensure_go_worker(go, pinned, progress)})")
        except SetupError as exc:
            progress(f"{exc}: --client {go.name} will be refused")
    binary = ensure_toxiproxy(progress)
    progress(f"Toxiproxy ready ({binary})")
    progress(f"lossyfs (the disk fault layer) ready ({ensure_lossyfs(progress)})")
    progress(f"cache: {home()}; installed Kafka versions: {', '.join(installed_versions())}")
    return 0
