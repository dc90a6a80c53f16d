"""Which consumer group protocols a client and a Kafka release have (KIP-848), and the one line
that refuses a run asking for one they lack, before anything starts.

``classic`` is the protocol every client has: JoinGroup/SyncGroup, the assignment computed by the
group's leader member, every member stopping at each rebalance (eager) or giving up only what
moves (cooperative). ``consumer`` is KIP-848's: members send ConsumerGroupHeartbeat, the group
coordinator computes the assignment with a server-side assignor (``uniform`` or ``range``) and
moves partitions one member at a time, with no group-wide barrier. The session timeout and the
heartbeat interval are then the group's (``consumer.session.timeout.ms``, a group config), not
the client's.

Since when (the releases where the protocol is generally available; earlier ones had it as an
early-access preview behind flags, which highwater does not test): Kafka 4.0 on the broker and
Kafka's Java client; librdkafka 2.12 (confluent-kafka 2.12); franz-go 1.22 (``ServerSideBalancer``;
1.20 and 1.21 had it behind a hidden beta opt-in). kafka-python and kafkajs have only ``classic``.
"""

from __future__ import annotations

from highwater.core.errors import HighwaterError
from highwater.core.versions import major_minor

GROUP_PROTOCOLS = ("classic", "consumer")
#: KIP-848's server-side assignors (``group.remote.assignor``)
REMOTE_ASSIGNORS = ("uniform", "range")
#: the client release from which each client has the ``consumer`` protocol (absent: never)
CONSUMER_PROTOCOL_SINCE: dict[str, tuple[int, int]] = {"java": (4, 0), "confluent-kafka": (2, 12), "franz-go": (1, 22)}
#: the Kafka release from which the broker has it
KAFKA_CONSUMER_PROTOCOL_SINCE = (4, 0)


class GroupProtocolError(HighwaterError):
    """A group protocol (or assignor) the client or the Kafka release does not have."""


def group_protocol_refusal(
    client: str, client_version: str, kafka_version: str, protocol: str, assignor: str | None = None
) -> str | None:
    """Why ``client`` at ``client_version`` on Kafka ``kafka_version`` cannot run a group on
    ``protocol`` with ``assignor`` (one line), or None when it can."""
    if protocol not in GROUP_PROTOCOLS:
        return f"unknown group protocol {protocol!r} (known: {', '.join(GROUP_PROTOCOLS)})"
    if assignor is not None and (protocol != "consumer" or assignor not in REMOTE_ASSIGNORS):
        return (
            f"group.remote.assignor {assignor!r} needs group.protocol=consumer and one of {', '.join(REMOTE_ASSIGNORS)}"
        )
    if protocol == "classic":
        return None
    since = CONSUMER_PROTOCOL_SINCE.get(client)
    if since is None:
        return f"{client} {client_version} has only the classic group protocol (no KIP-848 consumer protocol)"
    have = major_minor(client_version)
    if have is None or have < since:
        return (
            f"{client} {client_version} has no generally available KIP-848 consumer protocol "
            f"(since {client} {since[0]}.{since[1]})"
        )
    kafka = major_minor(kafka_version)
    if kafka is None or kafka < KAFKA_CONSUMER_PROTOCOL_SINCE:
        return (
            f"Kafka {kafka_version} has no generally available KIP-848 consumer protocol "
            f"(since Kafka {KAFKA_CONSUMER_PROTOCOL_SINCE[0]}.{KAFKA_CONSUMER_PROTOCOL_SINCE[1]})"
        )
    return None


def group_configs(session_timeout_ms: int) -> dict[str, str]:
    """The group configs (KIP-848's dynamic group configs, Kafka 4.0+) that give a ``consumer``
    protocol group the session timeout a classic member sets itself, with a heartbeat a third of
    it (at most 3 s, the classic clients' default). The broker must allow them: its
    ``group.consumer.min.session.timeout.ms`` and ``group.consumer.min.heartbeat.interval.ms``
    (45 s and 5 s by default) bound them from below (``harness.config.fast_failure_defaults``
    lowers them on our clusters)."""
    return {
        "consumer.session.timeout.ms": str(session_timeout_ms),
        "consumer.heartbeat.interval.ms": str(min(3000, session_timeout_ms // 3)),
    }
