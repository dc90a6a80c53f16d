"""Sarama under test: the Go worker (``clients/go/sarama/``), one build per Sarama version.

Each version is built once into the cache, ``<cache>/clients/sarama/<version>/worker``, as every
Go worker is (``harness.clients.go_worker``); without a version the worker's ``go.mod`` names the
default.

The worker takes the library-neutral settings as they are (``NeutralSettingsConfig``) and maps
them to Sarama's ``Config`` (``main.go``), at the fixed protocol level 3.0 (``Config.Version``,
which every Kafka 3.x and 4.x broker serves): acks, idempotence (Sarama's rules: acks=all, at
least one retry, one request in flight), retries, the request timeout (``Producer.Timeout``),
linger (``Producer.Flush.Frequency``), requests in flight (without idempotence), the transactional
id and timeout, the rack (KIP-392's ``RackID``), ``fetch.max.wait.ms``, ``metadata.max.age.ms``, the
isolation level, the reset policy, the session timeout. Every failed send is ``info``.

What it cannot map or report, as Sarama has none of it: leader epochs (a poll's epochs are
``null``), KIP-320 (no truncation detection: a fetch out of range stops the partition, and the
worker restarts it where the reset policy says, a ``reset`` position change), KIP-848 (the
``consumer`` group protocol is refused in one line), a delivery timeout. What the worker does
itself: it learns the serving broker from Sarama's log line and a consumer interceptor
(``served.go``); it sends consumer commits itself, since Sarama's commits answer nothing; it
seeks a group member's partition by ending the session and rejoining, the next session's
``Setup`` moving the claim (Sarama cannot move a claimed partition). The transactional producer
is Sarama's own, made at ``init_transactions``; its ``send_offsets`` carries the consumer's
generation and member id (KIP-447's fencing) from Sarama 1.50.2 (``build_tags``), the group id
alone before. Not yet: TLS/SASL (refused in one line).
"""

from __future__ import annotations

from highwater.core.versions import leading_numbers as release

from .go_worker import GoWorker

NAME = "sarama"
#: from this Sarama the worker is built with KIP-447's transactional offsets
#: (``AddOffsetsToTxnWithGroupMetadata``: TxnOffsetCommit v3 with the member's generation and id)
GROUP_METADATA = (1, 50, 2)
GROUP_METADATA_TAG = "highwater_group_metadata"


def build_tags(version: str) -> list[str]:
    """The ``go build`` arguments that choose the worker's files for Sarama ``version``."""
    return ["-tags", GROUP_METADATA_TAG] if release(version) >= GROUP_METADATA else []


WORKER = GoWorker(
    NAME,
    "github.com/IBM/sarama",
    "sarama",
    oldest=(1, 41, 2),
    oldest_because=(
        "before 1.41 Sarama sends JoinGroup at version 1 whatever Config.Version says, which Kafka 4.0"
        " no longer serves (KIP-896); 1.41.2 is the first 1.41 the module proxy lists"
    ),
    tags=build_tags,
)
