"""The policy table: which anomalies a Kafka configuration allows.

Checks report what happened; this table decides what that means for a given configuration
(the history header's ``config``). An allowed anomaly turns a False verdict into True with
``allowed=True`` and a note naming the rule, keeping its counts and examples, so reports can
still show that (say) an acks=1 run lost 12 writes.

Rules (one row per anomaly; anything not listed is never allowed):

=====================  ==============================================================
anomaly                allowed when
=====================  ==============================================================
duplicate              idempotence is off (producer retries may write a value twice)
lost-write             acks is 0 or 1 (the leader acks before replication), or
                       unclean leader election is on (an out-of-sync replica may lead),
                       or a power loss took at least min.insync.replicas replicas of
                       a partition at once (see below), or the tiered remote store
                       lost what it had not fsynced (below)
uncommitted-read       unclean leader election is on (committed data may be truncated),
                       or such a power loss
hw-regression          unclean leader election is on (the new leader's log is shorter),
                       or such a power loss
follower-fetch,         a power loss took a majority of the KRaft controller voters at
isr-stability,          once (combined mode: every broker a voter; see below)
progress, follower-
latency, rebalance-
barrier (the timed
checks)
progress               also: the tiered remote store lost what it had not fsynced (a
                       consumer at a lost segment fails each fetch there and waits)
=====================  ==============================================================

Power loss (``power_loss_replicas`` in the header's config: how many replicas of a partition a
scripted power loss takes at once). Kafka acknowledges an acks=all write once every in-sync
replica holds it in memory, and never fsyncs by default (``flush.messages``/``flush.ms``): it
relies on replication, and promises no loss while one in-sync replica keeps its page cache. The
ISR may be as small as ``min.insync.replicas`` when the write is acknowledged, so a power loss of
fewer replicas than that must lose nothing, and one of that many or more may lose what was
acknowledged (and what consumers were served), whatever the election settings.

A power loss of a majority of the controller voters (``controller_voters_lost`` of
``controller_voters`` in the header, ``RunSpec.quorum_loss``) leaves the cluster without a
metadata quorum: until enough voters are back and have replayed their logs no ISR may shrink, no
broker be fenced and no leader be elected, and what was due meanwhile happens after the heal.
Kafka promises no liveness without a quorum, so the timed checks' stalls and late ISR changes
are allowed; what the loss cost is measured instead (``power-measures.json``: how long each
partition took no write), and the safety checks judge as always.

A loss of the tiered remote store (``remote_store_loss`` in the header: a scripted
``power-loss --target store`` made the store lose every file it had not fsynced, and Kafka's
``LocalTieredStorage`` fsyncs none). Kafka trusts a RemoteStorageManager's copy once it returns
(the store must be durable then) and deletes its local copy after the local retention: what
the store lost is gone from every replica, so the acknowledged writes in those segments are lost.
No consumer may skip them: reading there fails (the broker answers the fetch with an error), and
a consumer waits there until someone seeks past, so ``progress`` is excused too. What consumers
had read of those segments is not judged against the log (the final read records the range it
could not read, ``unreadable``; ``core.checks.derived.Reference``), and passing over the range
is a ``poll-skip`` like passing over committed records.

Never allowed, whatever the config: poll-skip, nonmonotonic-poll, unseen,
inconsistent-offsets, replica-divergence, and truncation-undetected: where loss is allowed, the consumer must still *detect* the truncation
(KIP-320), so that check is what guards unclean runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from highwater.core.checks.timed import TIMED_CHECKS
from highwater.core.checks.verdict import Verdict


@dataclass(frozen=True)
class RunConfig:
    """The configuration facts the policy reads, normalised from a header ``config``."""

    acks: str = "all"
    idempotence: bool = False
    unclean_leader_election: bool = False
    min_insync_replicas: int = 1
    power_loss_replicas: int = 0
    controller_voters: int = 0
    controller_voters_lost: int = 0
    remote_store_loss: bool = False

    @property
    def quorum_lost(self) -> bool:
        """A power loss took a majority of the KRaft controller voters at once."""
        return self.controller_voters > 0 and self.controller_voters_lost > self.controller_voters // 2

    @property
    def power_loss_may_lose(self) -> bool:
        """A power loss took as many replicas at once as an acknowledged write may have had."""
        return self.power_loss_replicas >= self.min_insync_replicas > 0 or (
            self.power_loss_replicas > 0 and self.acks in ("0", "1")
        )

    @classmethod
    def from_header(cls, config: Mapping[str, Any]) -> RunConfig:
        acks = str(config.get("acks", "all")).lower()
        return cls(
            acks="all" if acks in ("all", "-1") else acks,
            idempotence=_flag(config.get("idempotence", config.get("enable_idempotence", False))),
            unclean_leader_election=_flag(config.get("unclean_leader_election", False)),
            min_insync_replicas=int(config.get("min_insync_replicas", 1) or 1),
            power_loss_replicas=int(config.get("power_loss_replicas", 0) or 0),
            controller_voters=int(config.get("controller_voters", 0) or 0),
            controller_voters_lost=int(config.get("controller_voters_lost", 0) or 0),
            remote_store_loss=_flag(config.get("remote_store_loss", False)),
        )


def _flag(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes", "on")
    return bool(v)


Rule = Callable[[RunConfig], str | None]

_POWER_LOSS = (
    "a power loss took {c.power_loss_replicas} replicas at once (min.insync.replicas={c.min_insync_replicas}):"
    " Kafka acknowledges writes held in memory, unfsynced"
)


def _quorum_lost(c: RunConfig) -> str | None:
    return (
        f"a power loss took {c.controller_voters_lost} of the {c.controller_voters} KRaft controller voters at once:"
        " without a quorum no ISR shrinks, no broker is fenced and no leader is elected until it is back"
        " (liveness measured in power-measures.json, not promised)"
        if c.quorum_lost
        else None
    )


def _unclean_or_power_loss(unclean: str) -> Rule:
    """The rule of an anomaly that an unclean leader election (``unclean`` says how) or a power
    loss of a partition's in-sync copies may cause."""

    def rule(c: RunConfig) -> str | None:
        if c.unclean_leader_election:
            return unclean
        return _POWER_LOSS.format(c=c) if c.power_loss_may_lose else None

    return rule


_LOST_WRITE_UNCLEAN = _unclean_or_power_loss("unclean leader election may elect a replica missing acknowledged writes")

_STORE_LOSS = (
    "the tiered remote store lost the segments it had not fsynced (power-loss --target store): Kafka trusts"
    " a RemoteStorageManager's copy once it returns, and deletes the local one; a consumer at a lost segment"
    " fails each fetch there and waits"
)


def _or_store_loss(rule: Rule) -> Rule:
    """``rule``, or the remote store's loss: what was only in the segments it lost is gone."""

    def either(c: RunConfig) -> str | None:
        return rule(c) or (_STORE_LOSS if c.remote_store_loss else None)

    return either


#: anomaly -> rule returning why the config allows it, or None when it does not
POLICY: dict[str, Rule] = {
    "duplicate": lambda c: None if c.idempotence else "idempotence is off: retries may duplicate",
    "lost-write": _or_store_loss(
        lambda c: (
            f"acks={c.acks}: the leader acknowledges before replication"
            if c.acks in ("0", "1")
            else _LOST_WRITE_UNCLEAN(c)
        )
    ),
    "uncommitted-read": _unclean_or_power_loss("unclean leader election may truncate records consumers already read"),
    "hw-regression": _unclean_or_power_loss("unclean leader election may elect a replica with a lower high watermark"),
    **{check: _quorum_lost for check in TIMED_CHECKS},
    "progress": _or_store_loss(_quorum_lost),
}


def allowed(check: str, config: Mapping[str, Any]) -> str | None:
    """Why ``config`` allows the anomaly of ``check``, or None if it is a violation."""
    rule = POLICY.get(check)
    return rule(RunConfig.from_header(config)) if rule else None


def apply_policy(verdicts: list[Verdict], config: Mapping[str, Any]) -> list[Verdict]:
    """Verdicts with allowed violations turned valid (``allowed=True``, reason in notes)."""
    out = []
    for v in verdicts:
        why = allowed(v.check, config) if v.valid is False else None
        out.append(v.with_(valid=True, allowed=True, notes=[*v.notes, f"allowed: {why}"]) if why else v)
    return out
