"""KRaft features a run may set for its duration (KIP-584 feature levels, finalized through
UpdateFeatures and restored after the run): which releases have them, and the one line that
refuses a level a release lacks, before anything starts.

- ``transaction.version`` (KIP-890, Kafka 4.0+): see ``harness.clients.txnversion``, which also
  says which clients speak v2.
- ``eligible.leader.replicas.version`` (KIP-966, Kafka 4.0+, on by default for clusters made by
  4.1+): with level 1 a fenced last in-sync replica moves to the ELR instead of staying in the ISR,
  and a broker that comes back after an unclean shutdown (a kill, a power loss) is taken out of
  both, so it cannot be elected with a log it may have lost the tail of.
"""

from __future__ import annotations

from highwater.core.errors import HighwaterError
from highwater.core.versions import release_at_least

ELIGIBLE_LEADER_REPLICAS = "eligible.leader.replicas.version"
#: the Kafka release from which a cluster has the ELR feature to set
KAFKA_ELR_SINCE = (4, 0)


class FeatureError(HighwaterError):
    """A feature level the Kafka release does not have."""


def has_elr(kafka_version: str) -> bool:
    """Whether Kafka ``kafka_version`` has the ``eligible.leader.replicas.version`` feature."""
    return release_at_least(kafka_version, KAFKA_ELR_SINCE)


def elr_refusal(kafka_version: str, enabled: bool) -> str | None:
    """Why a run cannot have eligible leader replicas ``enabled`` on ``kafka_version`` (one line),
    or None. Off is every release's behaviour before 4.0, so only asking for on is refused."""
    if enabled and not has_elr(kafka_version):
        since = ".".join(map(str, KAFKA_ELR_SINCE))
        return f"Kafka {kafka_version} has no eligible leader replicas (KIP-966, since Kafka {since})"
    return None
