"""The exactly-once copy (``RunSpec.copiers``, ``harness.workload.copy``): beside the run's
producers and consumers, ``copiers`` copiers read the topic in one group (read_committed) and
write its copy, the sink topic, in transactions with the offsets inside (``txn_abort_share`` of
copies abort); a read_committed ``copy-reader`` reads the copy. ``copy-exactly-once`` judges it
from the header's ``config.copy``."""

from __future__ import annotations

from typing import Any

from highwater.core.checks.verdict import Input
from highwater.core.history import HistoryWriter
from highwater.harness.backend import ClusterBackend
from highwater.harness.workload import ConsumerConfig, ConsumerWorker
from highwater.harness.workload.copy import CopyConfig, CopyWorker
from highwater.harness.workload.transactions import TransactionConfig
from highwater.modes.base import Consumer, Extras, Features
from highwater.modes.transactional import refuse_without_transactions, transaction_version
from highwater.run_spec import RunSpec

#: the process reading an exactly-once copy's sink topic (read_committed, assign mode)
COPY_READER = "copy-reader"


class Copy(Extras):
    """The copiers and the copy's reader; the copiers write transactions."""

    writes_transactions = True

    def __init__(self, spec: RunSpec, cluster: ClusterBackend) -> None:
        self.spec = spec
        #: the copy's topic as the cluster names it
        self.sink = cluster.topic_name(f"{spec.topic}-copy")

    def refuse(self, client: str, version: str, kafka: str) -> None:
        refuse_without_transactions(client, version)

    def copier_names(self) -> list[str]:
        return [f"copier-{i}" for i in range(self.spec.copiers)]

    def topics(self) -> list[str]:
        return [self.sink]

    def features(self, kafka_version: str) -> Features:
        return transaction_version(self.spec, kafka_version)

    def consumers_header(self, racks: int) -> dict[str, dict[str, str | bool]]:
        out: dict[str, dict[str, str | bool]] = {
            name: {"isolation_level": "read_committed", "group": self.spec.copy_group(), "copier": True}
            for name in self.copier_names()
        }
        out[COPY_READER] = {"isolation_level": "read_committed"}
        return out

    def header(self) -> dict[str, Any]:
        """``config.copy``: what ``copy-exactly-once`` judges."""
        return {"copy": {"source": self.spec.topic, "sink": self.sink, "group": self.spec.copy_group()}}

    def inputs(self) -> set[Input]:
        return {Input.TXNS, Input.COMMITS}

    def consumers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[Consumer]:
        """``spec.copiers`` copiers of one group, and the copy's reader."""
        spec = self.spec
        copy = CopyConfig(spec.topic, self.sink, spec.partitions, spec.copy_group())
        workers: list[Consumer] = []
        for i, name in enumerate(self.copier_names()):
            txn = TransactionConfig(
                transactional_id=spec.copier_transactional_id(i), abort_share=spec.txn_abort_share, seed=seed or 0
            )
            workers.append(
                CopyWorker(name, cluster.bootstrap(), history, copy, txn, spec.client, cluster.client_security)
            )
        reader = ConsumerConfig(self.sink, spec.partitions, isolation_level="read_committed")
        workers.append(
            ConsumerWorker(COPY_READER, cluster.bootstrap(), history, reader, spec.client, cluster.client_security)
        )
        return workers
