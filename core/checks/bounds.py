"""Every time bound of the timed checks, derived from the settings that govern the behaviour.

Pure: ``derive(Settings)`` gives each bound with its formula (names) and the same formula with
the numbers filled in. The run writes both into the history header's ``config`` (flat
``<name>``: milliseconds, which the checks read, plus ``bounds``: ``{name: {"ms", "formula",
"computed"}}`` and ``bound_settings``), so a verdict can always be traced to the configuration.

Settings (milliseconds; header ``config`` keys, with Kafka's own defaults when a key is absent):

=====================================  ====================================================
key                                    what
=====================================  ====================================================
``replica_lag_time_max_ms``  (L)       broker ``replica.lag.time.max.ms``
``broker_session_timeout_ms`` (Ss)     broker ``broker.session.timeout.ms`` (fencing)
``broker_heartbeat_interval_ms`` (Hb)  broker ``broker.heartbeat.interval.ms``
``replica_socket_timeout_ms`` (Rs)     broker ``replica.socket.timeout.ms``
``replica_fetch_wait_max_ms`` (Wr)     broker ``replica.fetch.wait.max.ms`` (how long a leader
                                       holds a follower's fetch with nothing new)
``consumer_metadata_max_age_ms`` (M)   consumer ``metadata.max.age.ms`` (kafka-python also
                                       keeps a preferred read replica that long, HW-1)
``consumer_fetch_max_wait_ms`` (W)     consumer ``fetch.max.wait.ms``
``consumer_request_timeout_ms`` (Rc)   consumer ``request.timeout.ms`` (a fetch to a paused
                                       or black-holed broker hangs that long)
``producer_request_timeout_ms`` (Rp)   producer ``request.timeout.ms``
``producer_delivery_timeout_ms`` (Dt)  producer ``delivery.timeout.ms``: a record is stamped
                                       when it is sent and given up on this long after (the
                                       ``log-start`` check's retention floor)
``producer_transaction_timeout_ms``    producer ``transaction.timeout.ms``: the coordinator
  (Tt)                                 aborts a transaction open this long
``transaction_abort_cleanup_interval_  broker ``transaction.abort.timed.out.transaction.
ms`` (Ta)                              cleanup.interval.ms``: how often it looks for them
``observe_interval_ms`` (O)            the observer's period (meta events)
``bound_slack_ms`` (K)                 stated slack for scheduling, GC, a loaded machine: 2000
=====================================  ====================================================

Bounds:

* ``isr_leave_bound_ms`` = max(1.5·L, Ss + Hb) + O + K: a follower cut off from the leader
  leaves the ISR (the leader runs its ISR-expiry task every L/2, so a follower lagging since
  time 0 is dropped by 1.5·L; a killed or paused broker is fenced after Ss plus a heartbeat),
  and the observer sees it. Judges isr-stability (b).
* ``isr_slack_ms`` = isr_leave_bound_ms − L: the same, written as the slack over L that
  isr-stability adds (and the quiet time after a heal before an ISR shrink counts).
* ``isr_rejoin_bound_ms`` = Rs + L + O + K: after the heal the follower's fetcher reconnects
  (a dead connection may take Rs), catches up and is added back, and the observer sees it.
* ``follower_fetch_grace_ms`` = M + W + K: how long a consumer may take to be routed to its
  rack's in-sync replica (at start, after the replica rejoins the ISR, after a heal).
* ``follower_fetch_bound_ms`` = M + W + K: after the observer sees a rack lose its last in-sync
  replica, that rack's consumer polls a record from an in-sync replica (the preferred replica it
  holds expires after M, then one fetch round to the leader).
* ``consumer_stall_bound_ms`` = max(1.5·L, Ss + Hb) + M + W + K: the longest a consumer may go
  without a record, while records are acknowledged, during a fault (its replica leaves the ISR,
  then it moves). Judges follower-fetch (c) and progress (d).
* ``consumer_stall_hang_bound_ms`` = consumer_stall_bound_ms + Rc: the same for faults that
  leave requests hanging instead of failing them (``pause``, the ``timeout`` toxic).
* ``progress_bound_ms`` = Rp + M + W + K: acknowledged sends and polled records resume within
  it after a heal (a send stuck on a faulted broker times out after Rp and is retried; a consumer
  refreshes its routing within M), and no gap outside faults is longer.

* ``txn_hold_bound_ms`` = Tt + Ta + K: how long a transaction whose end the history does not
  show (its producer died, or its commit's outcome is unknown) may hold its partitions' last
  stable offset: its coordinator aborts it once it has been open Tt, at its next look (every
  Ta). A read_committed consumer is owed no record above an open transaction's first offset
  until it ends (``core.checks.raw.lso_readable``). Judges follower-fetch (c) and progress.

* ``follower_latency_bound_ms`` = W / 4, plus, in the check, min(Wr, I) with I the mean time
  between two acknowledged records of a partition: how much later, at the median, a record
  served by an in-sync follower may reach its consumer than one served by the leader. The
  follower learns the high watermark that makes a record readable in the answer to its next
  fetch, which the leader returns with the next record or after Wr (it does not answer early on
  a high watermark change, KAFKA-9952): min(Wr, I). The follower then answers the consumer's
  waiting fetch at once (KIP-392: no unnecessary delay), one fetch round, a few ms; a follower
  that holds that fetch to its timeout instead (KAFKA-14334, Kafka 3.3.1) adds a wait spread
  over [0, W], W/2 at the median. W/4 lies between the two with a margin both ways; no slack is
  added (the noise a slack absorbs is what a median leaves out). Judges follower-latency.
* ``member_fence_grace_ms`` = Rc + Hc + K, Hc = 3000 (a group member's heartbeat interval: the
  classic clients' default, and the most ``harness.clients.groups.group_configs`` gives a
  consumer-protocol group): after a fault that let the group fence a member unawares ends, the
  member hears it at its next heartbeat, answered within a request timeout; until then it may
  return records of a partition already given to another member. Judges exclusive-read.
* ``hw_propagation_bound_ms`` = Wr + Wr/2: after an acknowledged write a follower learns the
  new high watermark in the answer to its held fetch, within one ``replica.fetch.wait.max.ms``,
  and half a wait more for a fetch already in flight; at the median, so no slack. Judges
  hw-propagation (``core.checks.hw_propagation``, a measurement's check).
* ``member_stall_bound_ms`` = W + K: a group member that keeps its partitions through another
  member's rebalance returns a record acknowledged on one of them within one fetch wait (the
  acknowledgement moved the high watermark, so the next fetch answers with it at once or at
  W), plus the slack. KIP-848's consumer protocol has no group-wide barrier: the coordinator
  moves only the partitions that change owner, and the other members never stop fetching.
  Judges rebalance-barrier.

A fault window judged by a bound must last at least ``required_window_ms(bound)`` = bound +
max(``MARGIN_MIN_MS``, ``MARGIN_RATIO``·bound); a check asked to judge a shorter window says
unknown for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

SLACK_MS = 2000
MARGIN_MIN_MS = 2000
MARGIN_RATIO = 0.2


@dataclass(frozen=True)
class Settings:
    """The settings the bounds depend on (ms). Defaults are Kafka's and kafka-python's own."""

    replica_lag_time_max_ms: int = 30_000
    broker_session_timeout_ms: int = 9_000
    broker_heartbeat_interval_ms: int = 2_000
    replica_socket_timeout_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    consumer_metadata_max_age_ms: int = 300_000
    consumer_fetch_max_wait_ms: int = 500
    consumer_request_timeout_ms: int = 30_000
    producer_request_timeout_ms: int = 30_000
    producer_delivery_timeout_ms: int = 120_000
    producer_transaction_timeout_ms: int = 60_000
    transaction_abort_cleanup_interval_ms: int = 10_000
    observe_interval_ms: int = 1_000
    bound_slack_ms: int = SLACK_MS
    controller_quorum_election_timeout_ms: int = 1_000
    controller_quorum_fetch_timeout_ms: int = 2_000
    controller_quorum_request_timeout_ms: int = 2_000

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Settings:
        """From a header ``config``: known keys that hold numbers; the rest keep the defaults."""
        kw: dict[str, int] = {}
        for f in fields(cls):
            v = config.get(f.name)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                kw[f.name] = int(v)
        return cls(**kw)

    @classmethod
    def from_kafka(
        cls,
        broker: Mapping[str, str],
        *,
        consumer: Mapping[str, Any] | None = None,
        producer: Mapping[str, Any] | None = None,
        observe_interval_s: float = 1.0,
        slack_ms: int = SLACK_MS,
    ) -> Settings:
        """From broker properties (Kafka names) and client settings (kafka-python names)."""
        d = cls()
        c, p = dict(consumer or {}), dict(producer or {})

        def b(key: str, default: int) -> int:
            return int(float(broker.get(key, default)))

        return cls(
            replica_lag_time_max_ms=b("replica.lag.time.max.ms", d.replica_lag_time_max_ms),
            broker_session_timeout_ms=b("broker.session.timeout.ms", d.broker_session_timeout_ms),
            broker_heartbeat_interval_ms=b("broker.heartbeat.interval.ms", d.broker_heartbeat_interval_ms),
            replica_socket_timeout_ms=b("replica.socket.timeout.ms", d.replica_socket_timeout_ms),
            replica_fetch_wait_max_ms=b("replica.fetch.wait.max.ms", d.replica_fetch_wait_max_ms),
            consumer_metadata_max_age_ms=int(c.get("metadata_max_age_ms", d.consumer_metadata_max_age_ms)),
            consumer_fetch_max_wait_ms=int(c.get("fetch_max_wait_ms", d.consumer_fetch_max_wait_ms)),
            consumer_request_timeout_ms=int(c.get("request_timeout_ms", d.consumer_request_timeout_ms)),
            producer_request_timeout_ms=int(p.get("request_timeout_ms", d.producer_request_timeout_ms)),
            producer_delivery_timeout_ms=int(p.get("delivery_timeout_ms", d.producer_delivery_timeout_ms)),
            producer_transaction_timeout_ms=int(p.get("transaction_timeout_ms", d.producer_transaction_timeout_ms)),
            transaction_abort_cleanup_interval_ms=b(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                d.transaction_abort_cleanup_interval_ms,
            ),
            observe_interval_ms=int(round(observe_interval_s * 1000)),
            bound_slack_ms=slack_ms,
            controller_quorum_election_timeout_ms=b(
                "controller.quorum.election.timeout.ms", d.controller_quorum_election_timeout_ms
            ),
            controller_quorum_fetch_timeout_ms=b(
                "controller.quorum.fetch.timeout.ms", d.controller_quorum_fetch_timeout_ms
            ),
            controller_quorum_request_timeout_ms=b(
                "controller.quorum.request.timeout.ms", d.controller_quorum_request_timeout_ms
            ),
        )


@dataclass(frozen=True)
class Bound:
    name: str
    ms: int
    formula: str  # with the settings' names
    computed: str  # the same with the numbers
    given: bool = False  # True: the header stated this bound explicitly (not derived)

    def to_json(self) -> dict[str, Any]:
        return {"ms": self.ms, "formula": self.formula, "computed": self.computed}


#: every bound, in a stable order, with the check(s) that use it
BOUND_USERS: dict[str, tuple[str, ...]] = {
    "isr_leave_bound_ms": ("isr-stability",),
    "isr_slack_ms": ("isr-stability",),
    "isr_rejoin_bound_ms": ("isr-stability",),
    "controller_failover_ms": ("isr-stability",),
    "follower_fetch_grace_ms": ("follower-fetch",),
    "follower_fetch_bound_ms": ("follower-fetch",),
    "consumer_stall_bound_ms": ("follower-fetch", "progress"),
    "consumer_stall_hang_bound_ms": ("follower-fetch", "progress"),
    "progress_bound_ms": ("progress",),
    "txn_hold_bound_ms": ("follower-fetch", "progress"),
    "member_fence_grace_ms": ("exclusive-read",),
    "member_stall_bound_ms": ("rebalance-barrier",),
    "hw_propagation_bound_ms": ("hw-propagation",),
    "follower_latency_bound_ms": ("follower-latency",),
}

#: a group member's heartbeat interval (``member_fence_grace_ms``)
MEMBER_HEARTBEAT_MS = 3000

#: fault kinds that leave a client's requests hanging (until its request timeout)
HANGING_KINDS = frozenset({"pause", "timeout"})


def derive(s: Settings) -> dict[str, Bound]:
    """Every bound from the settings, with its formula."""
    L, Ss, Hb, Rs = (
        s.replica_lag_time_max_ms,
        s.broker_session_timeout_ms,
        s.broker_heartbeat_interval_ms,
        s.replica_socket_timeout_ms,
    )
    M, W, Rc, Rp, O, K = (
        s.consumer_metadata_max_age_ms,
        s.consumer_fetch_max_wait_ms,
        s.consumer_request_timeout_ms,
        s.producer_request_timeout_ms,
        s.observe_interval_ms,
        s.bound_slack_ms,
    )
    Eq, Fq, Rq = (
        s.controller_quorum_election_timeout_ms,
        s.controller_quorum_fetch_timeout_ms,
        s.controller_quorum_request_timeout_ms,
    )
    Tt, Ta = s.producer_transaction_timeout_ms, s.transaction_abort_cleanup_interval_ms
    shrink = max(L * 3 // 2, Ss + Hb)
    shrink_f = "max(1.5*replica.lag.time.max.ms, broker.session.timeout.ms + broker.heartbeat.interval.ms)"
    shrink_c = f"max(1.5*{L}, {Ss} + {Hb})"
    move_f = "consumer metadata.max.age.ms + consumer fetch.max.wait.ms + slack"
    move_c = f"{M} + {W} + {K}"
    out = [
        Bound(
            "isr_leave_bound_ms", shrink + O + K, f"{shrink_f} + observe_interval + slack", f"{shrink_c} + {O} + {K}"
        ),
        Bound(
            "isr_slack_ms",
            shrink + O + K - L,
            "isr_leave_bound_ms - replica.lag.time.max.ms",
            f"{shrink + O + K} - {L}",
        ),
        Bound(
            "isr_rejoin_bound_ms",
            Rs + L + O + K,
            "replica.socket.timeout.ms + replica.lag.time.max.ms + observe_interval + slack",
            f"{Rs} + {L} + {O} + {K}",
        ),
        Bound(
            "controller_failover_ms",
            Fq + 2 * Eq + Rq + Hb,
            "controller.quorum.fetch.timeout.ms + 2*controller.quorum.election.timeout.ms"
            " + controller.quorum.request.timeout.ms + broker.heartbeat.interval.ms",
            f"{Fq} + 2*{Eq} + {Rq} + {Hb}",
        ),
        Bound("follower_fetch_grace_ms", M + W + K, move_f, move_c),
        Bound("follower_fetch_bound_ms", M + W + K, move_f, move_c),
        Bound("consumer_stall_bound_ms", shrink + M + W + K, f"{shrink_f} + {move_f}", f"{shrink_c} + {move_c}"),
        Bound(
            "consumer_stall_hang_bound_ms",
            shrink + M + W + K + Rc,
            f"{shrink_f} + {move_f} + consumer request.timeout.ms",
            f"{shrink_c} + {move_c} + {Rc}",
        ),
        Bound("progress_bound_ms", Rp + M + W + K, f"producer request.timeout.ms + {move_f}", f"{Rp} + {move_c}"),
        Bound(
            "txn_hold_bound_ms",
            Tt + Ta + K,
            "producer transaction.timeout.ms + transaction.abort.timed.out.transaction.cleanup.interval.ms + slack",
            f"{Tt} + {Ta} + {K}",
        ),
        Bound("follower_latency_bound_ms", W // 4, "consumer fetch.max.wait.ms / 4", f"{W} / 4"),
        Bound(
            "member_fence_grace_ms",
            Rc + MEMBER_HEARTBEAT_MS + K,
            "consumer request.timeout.ms + member heartbeat interval + slack",
            f"{Rc} + {MEMBER_HEARTBEAT_MS} + {K}",
        ),
        Bound("member_stall_bound_ms", W + K, "consumer fetch.max.wait.ms + slack", f"{W} + {K}"),
        Bound(
            "hw_propagation_bound_ms",
            s.replica_fetch_wait_max_ms * 3 // 2,
            "1.5*replica.fetch.wait.max.ms",
            f"1.5*{s.replica_fetch_wait_max_ms}",
        ),
    ]
    return {b.name: b for b in out}


def resolve(config: Mapping[str, Any]) -> dict[str, Bound]:
    """The bounds a check uses for a history: a bound the header states explicitly (``<name>``
    as a number) wins; the rest are derived from the settings in the header (Kafka's defaults
    for settings it does not record). For histories written before bounds were derived, an
    ``isr_leave_bound_ms`` absent but ``replica_lag_time_max_ms`` and ``isr_slack_ms`` given is
    their sum (the formula of that time)."""
    out = derive(Settings.from_config(config))
    for name in out:
        v = config.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[name] = Bound(name, int(v), "given in the history header", str(int(v)), given=True)
    leave = out["isr_leave_bound_ms"]
    if not leave.given and out["isr_slack_ms"].given:
        L = Settings.from_config(config).replica_lag_time_max_ms
        slack = out["isr_slack_ms"].ms
        out["isr_leave_bound_ms"] = Bound(
            leave.name, L + slack, "replica.lag.time.max.ms + isr_slack_ms", f"{L} + {slack}"
        )
    return out


def bound_ms(config: Mapping[str, Any], name: str) -> int:
    return resolve(config)[name].ms


def stall_bound_name(kind: str | None) -> str:
    """The consumer-stall bound that judges a fault of this kind."""
    k = (kind or "").replace("_", "-")
    return "consumer_stall_hang_bound_ms" if k in HANGING_KINDS else "consumer_stall_bound_ms"


def required_window_ms(bound: int) -> int:
    """How long a fault window must last to be judged against ``bound``, with the margin."""
    return bound + max(MARGIN_MIN_MS, int(MARGIN_RATIO * bound))


def header_entries(s: Settings) -> dict[str, Any]:
    """What the run writes into the header ``config``: the settings, each bound (flat, for the
    checks) and ``bounds`` with every formula."""
    bounds = derive(s)
    return {**asdict(s), **{n: b.ms for n, b in bounds.items()}, "bounds": {n: b.to_json() for n, b in bounds.items()}}


def describe(config: Mapping[str, Any]) -> list[str]:
    """One line per bound: ``name = ms (formula = computed)``, for notes and reports."""
    return [f"{b.name} = {b.ms} ms ({b.formula} = {b.computed})" for b in resolve(config).values()]
