"""The order auditor: reads every order of a topic with its own Kafka client (kafka-python) and
writes one audit line per order it processed to stdout, in the order it processed them.

The audit line is what highwater judges (docs/writing-scenarios.md, "Your own program"): a JSON
object with the record's topic, partition, offset and value. Run it by hand against any cluster:

    HIGHWATER_BOOTSTRAP_SERVERS=localhost:9092 HIGHWATER_TOPIC=orders python -m my_app.auditor

Under highwater the ``HIGHWATER_*`` variables name the cluster through the rack's proxies, the
consumer's rack and where to start; ``config_from_env`` maps them onto the auditor's settings.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import TextIO

from kafka import KafkaConsumer, TopicPartition


@dataclass(frozen=True)
class Config:
    bootstrap_servers: str
    topic: str
    client_id: str = "my-app"
    client_rack: str = ""
    partitions: tuple[int, ...] = (0,)
    start_offsets: dict[int, int] = field(default_factory=dict)
    isolation_level: str = "read_uncommitted"
    fetch_max_wait_ms: int = 500
    metadata_max_age_ms: int = 5000
    request_timeout_ms: int = 10000
    max_poll_records: int = 500
    # kafka-python's default is 30 s: after a 15 s network cut its backoff had grown so long that
    # it read nothing for 12.5 s after the heal, and highwater's progress check said no (the first
    # run of tests/test_my_scenario.py); the Java client's default is 1 s
    reconnect_backoff_max_ms: int = 1000


def config_from_env(env: dict[str, str] | os._Environ[str] = os.environ) -> Config:
    starts = json.loads(env.get("HIGHWATER_START_OFFSETS", "{}"))
    return Config(
        bootstrap_servers=env["HIGHWATER_BOOTSTRAP_SERVERS"],
        topic=env["HIGHWATER_TOPIC"],
        client_id=env.get("HIGHWATER_CLIENT_ID", "my-app"),
        client_rack=env.get("HIGHWATER_CLIENT_RACK", ""),
        partitions=tuple(int(p) for p in env.get("HIGHWATER_PARTITIONS", "0").split(",")),
        start_offsets={int(p): int(o) for p, o in starts.items()},
        isolation_level=env.get("HIGHWATER_ISOLATION_LEVEL", "read_uncommitted"),
        fetch_max_wait_ms=int(env.get("HIGHWATER_FETCH_MAX_WAIT_MS", "500")),
        metadata_max_age_ms=int(env.get("HIGHWATER_METADATA_MAX_AGE_MS", "5000")),
        request_timeout_ms=int(env.get("HIGHWATER_REQUEST_TIMEOUT_MS", "10000")),
        max_poll_records=int(env.get("HIGHWATER_MAX_POLL_RECORDS", "500")),
        reconnect_backoff_max_ms=int(env.get("MY_APP_RECONNECT_BACKOFF_MAX_MS", "1000")),  # its own setting
    )


class Auditor:
    """Reads orders and audits each one (here: counts them per partition) before writing its line."""

    def __init__(self, config: Config, out: TextIO) -> None:
        self.config = config
        self.out = out
        self.audited: dict[int, int] = {}
        self.stopping = False
        self.consumer = KafkaConsumer(
            bootstrap_servers=config.bootstrap_servers.split(","),
            client_id=config.client_id,
            client_rack=config.client_rack or None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=config.isolation_level,
            fetch_max_wait_ms=config.fetch_max_wait_ms,
            metadata_max_age_ms=config.metadata_max_age_ms,
            request_timeout_ms=config.request_timeout_ms,
            max_poll_records=config.max_poll_records,
            reconnect_backoff_max_ms=config.reconnect_backoff_max_ms,
        )

    def run(self) -> None:
        partitions = [TopicPartition(self.config.topic, p) for p in self.config.partitions]
        self.consumer.assign(partitions)
        for tp in partitions:
            self.consumer.seek(tp, self.config.start_offsets.get(tp.partition, 0))
        while not self.stopping:
            for records in self.consumer.poll(timeout_ms=200).values():
                for record in records:
                    self.audit(record.partition)
                    line = {
                        "topic": record.topic,
                        "partition": record.partition,
                        "offset": record.offset,
                        "value": record.value.decode("utf-8") if record.value is not None else None,
                    }
                    if record.leader_epoch is not None and record.leader_epoch >= 0:
                        line["leader_epoch"] = record.leader_epoch
                    self.out.write(json.dumps(line) + "\n")
            self.out.flush()
        self.consumer.close()

    def audit(self, partition: int) -> None:
        self.audited[partition] = self.audited.get(partition, 0) + 1

    def stop(self, *_: object) -> None:
        self.stopping = True


def main() -> None:
    auditor = Auditor(config_from_env(), sys.stdout)
    signal.signal(signal.SIGTERM, auditor.stop)
    print(f"auditing {auditor.config.topic} as {auditor.config.client_id}", file=sys.stderr, flush=True)
    auditor.run()
    print(f"audited {sum(auditor.audited.values())} orders: {auditor.audited}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
