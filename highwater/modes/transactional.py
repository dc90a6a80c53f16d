"""The transactional run (KIP-98, ``RunSpec.transactional``): each producer writes transactions
of ``txn_records`` sends under its own transactional id (``RunSpec.transactional_id``), a seeded
share of them aborted, on the cluster's ``transaction.version`` for the run (KIP-890)."""

from __future__ import annotations

from highwater.core.checks.verdict import Input
from highwater.core.history import HistoryWriter
from highwater.harness.backend import ClusterBackend
from highwater.harness.clients import transactions_refusal
from highwater.harness.clients.txnversion import TRANSACTION_VERSION
from highwater.harness.clients.txnversion import has_feature as has_transaction_version
from highwater.harness.workload import ProducerWorker
from highwater.harness.workload.transactions import (
    TransactionalProducerWorker,
    TransactionConfig,
    TransactionsUnsupported,
)
from highwater.modes.base import Extras, Features
from highwater.modes.plain import producer_config
from highwater.run_spec import RunSpec


def transaction_version(spec: RunSpec, kafka_version: str) -> Features:
    """The ``transaction.version`` a run with transactions holds, on a cluster with the feature."""
    if not has_transaction_version(kafka_version):
        return {}
    return {TRANSACTION_VERSION: ("transaction_version", spec.transaction_version)}


def refuse_without_transactions(client: str, version: str) -> None:
    """Raise ``TransactionsUnsupported`` (one line) when ``client``'s worker has no transactional
    producer (``harness.clients.transactions_refusal``)."""
    refused = transactions_refusal(client, version)
    if refused is not None:
        raise TransactionsUnsupported(refused)


class Transactional(Extras):
    """Producers that write transactions."""

    writes_transactions = True

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec

    def refuse(self, client: str, version: str, kafka: str) -> None:
        refuse_without_transactions(client, version)

    def features(self, kafka_version: str) -> Features:
        return transaction_version(self.spec, kafka_version)

    def inputs(self) -> set[Input]:
        return {Input.TXNS}

    def producers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[ProducerWorker]:
        spec, config = self.spec, producer_config(self.spec)
        return [
            TransactionalProducerWorker(
                f"producer-{i}",
                cluster.bootstrap(),
                history,
                config,
                TransactionConfig(
                    transactional_id=spec.transactional_id(i),
                    records=spec.txn_records,
                    abort_share=spec.txn_abort_share,
                    seed=seed or 0,
                ),
                client=spec.client,
                security=cluster.client_security,
            )
            for i in range(spec.producers)
        ]
