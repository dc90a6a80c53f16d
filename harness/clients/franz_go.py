"""franz-go under test: the Go worker (``clients/go/franz/``), one build per franz-go version.

Each version is built once into the cache, ``<cache>/clients/franz-go/<version>/worker``, as every
Go worker is (``harness.clients.go_worker``); without a version the worker's ``go.mod`` names the
default.

The worker takes the library-neutral settings as they are (``NeutralSettingsConfig``) and maps
them to franz-go's options (``main.go``): acks, idempotence (franz-go's default is on; off
disables it), retries, request and delivery timeouts, linger, requests in flight (without
idempotence), the rack (KIP-392's ``Rack``), ``fetch.max.wait.ms``, ``metadata.max.age.ms``, the
isolation level, the session timeout, the group protocol (KIP-848's ``consumer`` from 1.22:
``build_tags``), and a run's ``preferred_replica_recheck_ms`` (``RecheckPreferredReplicaInterval``,
franz-go's alone: ``recheck_refusal``). franz-go's consumer reports the serving broker only
through its hooks, and a truncation (KIP-320) only as ``ErrDataLoss`` after it reset the
position itself (an out-of-range reset the same way): the worker reports a ``truncation``
position change when the position moved to the divergence point the leader names, a ``reset``
otherwise (``main.go``'s ``lossReason``). Every failed send is ``info`` (the worker never claims a write provably did not happen).
The transactional producer is franz-go's own, with the consumer's offsets sent by the worker
(``main.go`` says why). The share consumer (KIP-932, from 1.21: ``build_tags``) is franz-go's
``ShareGroup``, its per-partition acknowledgement results tied to the offsets the worker marked
(``share_kip932.go``; docs/adding-a-client.md, "Share groups"). Not yet: TLS/SASL (refused in one
line).
"""

from __future__ import annotations

from highwater.core.versions import leading_numbers as release

from .go_worker import GoWorker

NAME = "franz-go"
#: from this franz-go the worker is built with KIP-848's consumer protocol (``ServerSideBalancer``,
#: generally available in 1.22; before, a hidden beta opt-in, which highwater does not test)
SERVER_SIDE_BALANCER = (1, 22, 0)
SERVER_SIDE_BALANCER_TAG = "highwater_server_side_balancer"


#: from this franz-go the worker is built with the share consumer role (KIP-932's, ``ShareGroup``;
#: ``share_kip932.go``)
SHARE_CONSUMER = (1, 21, 0)
SHARE_CONSUMER_TAG = "highwater_share"


def build_tags(version: str) -> list[str]:
    """The ``go build`` arguments that choose the worker's files for franz-go ``version``."""
    have = release(version)
    tags = [
        tag
        for since, tag in ((SERVER_SIDE_BALANCER, SERVER_SIDE_BALANCER_TAG), (SHARE_CONSUMER, SHARE_CONSUMER_TAG))
        if have >= since
    ]
    return ["-tags", ",".join(tags)] if tags else []


def recheck_refusal(client: str, recheck_ms: int | None) -> str | None:
    """Why a run cannot set the rack consumers' preferred-replica recheck (``recheck_ms``,
    ``ConsumerSettings.preferred_replica_recheck_ms``) on ``client``, in one line, or None:
    it is franz-go's ``RecheckPreferredReplicaInterval``, which no other library has (Java's
    consumer asks the leader again as its metadata ages, ``metadata.max.age.ms``), and below
    1 ms it is no interval."""
    if recheck_ms is None:
        return None
    if client != NAME:
        return (
            f"preferred_replica_recheck_ms is franz-go's RecheckPreferredReplicaInterval; {client} has no such "
            "setting (its consumer asks the leader again as its metadata ages)"
        )
    return None if recheck_ms >= 1 else f"preferred_replica_recheck_ms must be 1 or more, not {recheck_ms}"


WORKER = GoWorker(
    NAME,
    "github.com/twmb/franz-go",
    "franz",
    oldest=(1, 19, 0),
    oldest_because="ErrDataLoss.ConsumedToEpoch, which the worker's KIP-320 report reads, came in 1.19",
    tags=build_tags,
)
