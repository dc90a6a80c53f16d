"""Which clients speak transactions v2 (KIP-890 part 2, ``transaction.version`` 2: the broker
bumps the producer epoch at every transaction end and adds partitions implicitly), and the one
line that refuses a run asking a client for a version it cannot exercise, before anything starts.

A cluster finalizes ``transaction.version`` (a KRaft feature, Kafka 4.0+; 2 by default on a new
4.x cluster); a client uses v2 only if it implements it *and* the cluster has finalized 2, and
falls back to v1 otherwise (so on a v2 cluster a v1-only client tests v1). Kafka's Java client
implements it from 4.0, franz-go from 1.19 (its changelog: 1.19.3 fixed how it reads the
feature; highwater names 1.20, the first minor line with it whole); kafka-python 3.0 sends EndTxn
at most v3, kafkajs likewise, and librdkafka has no KIP-890 part 2 yet
(confluentinc/librdkafka#5423): they speak v1 only.
"""

from __future__ import annotations

from highwater.core.errors import HighwaterError
from highwater.core.versions import major_minor, release_at_least

TRANSACTION_VERSION = "transaction.version"  # the KRaft feature
TRANSACTION_VERSIONS = (1, 2)
#: the client release from which each client speaks transactions v2 (absent: never)
TRANSACTIONS_V2_SINCE: dict[str, tuple[int, int]] = {"java": (4, 0), "franz-go": (1, 20)}
#: the Kafka release from which the cluster has the transaction.version feature
KAFKA_TRANSACTION_VERSION_SINCE = (4, 0)


class TransactionVersionError(HighwaterError):
    """A transaction version the client or the Kafka release does not have."""


def transaction_version_refusal(client: str, client_version: str, kafka_version: str, version: int) -> str | None:
    """Why ``client`` at ``client_version`` on Kafka ``kafka_version`` cannot run transactions at
    ``version`` (one line), or None when it can."""
    if version not in TRANSACTION_VERSIONS:
        return f"unknown transaction.version {version} (known: {', '.join(map(str, TRANSACTION_VERSIONS))})"
    if version == 1:  # every client and release speaks it
        return None
    if not has_feature(kafka_version):
        since = ".".join(map(str, KAFKA_TRANSACTION_VERSION_SINCE))
        return f"Kafka {kafka_version} has no transactions v2 (transaction.version, since Kafka {since})"
    since_client = TRANSACTIONS_V2_SINCE.get(client)
    have = major_minor(client_version)
    if since_client is None or have is None or have < since_client:
        since = f" (since {client} {since_client[0]}.{since_client[1]})" if since_client else ""
        return f"{client} {client_version} speaks transactions v1 only (no KIP-890 part 2){since}"
    return None


def has_feature(kafka_version: str) -> bool:
    """Whether Kafka ``kafka_version`` has the ``transaction.version`` feature to set."""
    return release_at_least(kafka_version, KAFKA_TRANSACTION_VERSION_SINCE)
