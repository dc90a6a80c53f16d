"""The KRaft controller quorum during a history's faults, as ``isr-stability`` needs it.

The active controller commits every ISR change (AlterPartition) and fences brokers, so the ISR's
bounds hold only while a quorum of voters can commit, and the rejoin bound assumes no controller
failover on the way. A fault window takes a voter *down* when it is a process fault (or an
isolating cut) whose targets name it, and *breaks* a voters' controller link (``controller:a->b``
in its links) when it cuts it, times it out, or delays it by at least half
``controller.quorum.request.timeout.ms`` (a request and its answer then outlast the timeout; a
voter that misses its fetches starts elections, and before Kafka 4.0, without pre-vote
(KIP-996), its raised epoch unseats the leader when its links heal). The quorum is *lost* when
no voter left up reaches a majority, itself included, over links unbroken both ways.

Seen in hunts (docs/hunting.md): the active controller paused while a second voter's controller
links were slowed (no quorum: the paused follower stayed in the ISR past the leave bound), and a
slowed voter whose heal, then a fault on the newly elected controller, cost two failovers before
a follower's AlterPartition was committed (past the rejoin bound).

The voters are the header's ``config.quorum_voters`` (node names). A history from before the
header named them is taken as combined mode with brokers named ``kafka-<id>`` (the local
backend's default, and every hunt's); an empty list (an external cluster's unknown quorum) says
nothing is known, and the quorum is then never held against a bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from highwater.core.checks.bounds import Settings
from highwater.core.checks.data import HistoryData
from highwater.core.checks.windows import CUT_KINDS, LINK_CUT_KINDS, Window

CONTROLLER_LINK = "controller:"


@dataclass(frozen=True)
class QuorumState:
    """What the faults of a span did to the quorum: the voters they took out, and the voters'
    controller links (directed, ``(from, to)``) they broke."""

    down: frozenset[str] = frozenset()
    broken: frozenset[tuple[str, str]] = frozenset()

    @property
    def disturbed(self) -> bool:
        """Some voter was taken out or cut off from another: a failover may follow."""
        return bool(self.down or self.broken)

    def lost(self, among: frozenset[str]) -> bool:
        """No voter left up reaches a majority (itself included) over unbroken links both ways:
        nothing can be committed. Never, when the voters are unknown."""
        if not among:
            return False
        majority = len(among) // 2 + 1
        up = among - self.down
        return not any(
            1 + sum(1 for u in up - {v} if (v, u) not in self.broken and (u, v) not in self.broken) >= majority
            for v in up
        )


def voters(h: HistoryData) -> frozenset[str]:
    """The controller voters' names (module doc); empty when unknown."""
    named = h.config.get("quorum_voters")
    if isinstance(named, list):
        return frozenset(str(v) for v in named)
    racks = h.header.get("racks") or {}
    brokers = racks.get("brokers") if isinstance(racks, dict) else None
    return frozenset(f"kafka-{b}" for b in brokers) if isinstance(brokers, dict) else frozenset()


def _controller_links(links: Iterable[str], among: frozenset[str]) -> set[tuple[str, str]]:
    """The ``controller:`` links among ``links`` between two of ``among``, as (from, to)."""
    out: set[tuple[str, str]] = set()
    for link in links:
        if link.startswith(CONTROLLER_LINK):
            a, _, b = link[len(CONTROLLER_LINK) :].partition("->")
            if a in among and b in among:
                out.add((a, b))
    return out


def state_of(h: HistoryData, w: Window, among: frozenset[str]) -> QuorumState:
    """What window ``w`` does to the voters ``among`` (module doc)."""
    kind = (w.kind or "").replace("-", "_")
    if kind in CUT_KINDS:
        return QuorumState(down=among & {str(t) for t in w.targets})
    links = _controller_links(w.links, among)
    if kind in LINK_CUT_KINDS:
        return QuorumState(broken=frozenset(links))
    latency = w.params.get("latency")
    request_ms = Settings.from_config(h.config).controller_quorum_request_timeout_ms
    if kind == "latency" and isinstance(latency, (int, float)) and latency * 2 >= request_ms:
        return QuorumState(broken=frozenset(links))
    return QuorumState()


def state_during(h: HistoryData, wins: Iterable[Window], among: frozenset[str], t0: int, t1: int) -> QuorumState:
    """What the windows open at any time in ``[t0, t1]`` do to the voters, together."""
    down: set[str] = set()
    broken: set[tuple[str, str]] = set()
    for w in wins:
        if w.start <= t1 and w.until(h.end_time) >= t0:
            one = state_of(h, w, among)
            down |= one.down
            broken |= one.broken
    return QuorumState(frozenset(down), frozenset(broken))
