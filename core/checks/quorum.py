"""The KRaft controller quorum during a history's faults, as ``isr-stability`` needs it.

The active controller commits every ISR change (AlterPartition) and fences brokers, so the ISR's
bounds can only start once a quorum can commit, and a rejoin may wait for a controller failover.
A fault window takes a voter *down* when it is a process fault (or an isolating cut) whose
targets name it, and *breaks* a voters' controller link (``controller:a->b`` in its links) when
it cuts it, times it out, or delays a request and its answer together by at least
``controller.quorum.election.timeout.ms`` (a latency on one stream, or twice it on both,
``--direction both``): votes then come back after the election has timed out, and before
Kafka 4.0, without pre-vote (KIP-996), a voter that missed its fetches raises its epoch and
unseats the leader when its links heal. The quorum is *lost* at an instant when no voter that is
up reaches a majority, itself included, over links unbroken both ways, counting the windows open
at that instant (a window ends when its heal is done).

Seen in hunts (docs/hunting.md): the active controller paused while a second voter's controller
links were slowed (no quorum: the paused follower stayed in the ISR past the leave bound), and a
voter's slowed controller links whose heal, then a fault on the newly elected controller, cost two
failovers before a follower's AlterPartition was committed (past the rejoin bound).

The voters are the header's ``config.quorum_voters`` (node names). A history from before the
header named them is taken as combined mode with brokers named ``kafka-<id>`` (the local
backend's default, and every hunt's); an empty list (an external cluster's unknown quorum) says
nothing is known, and the quorum is then never held against a bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from highwater.core.checks.bounds import Settings
from highwater.core.checks.data import HistoryData
from highwater.core.checks.windows import CUT_KINDS, LINK_CUT_KINDS, Window

CONTROLLER_LINK = "controller:"


@dataclass(frozen=True)
class QuorumState:
    """What the faults open at one instant do to the quorum: the voters they took out, and the
    voters' controller links (directed, ``(from, to)``) they broke."""

    down: frozenset[str] = frozenset()
    broken: frozenset[tuple[str, str]] = frozenset()

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


def broken_links(h: HistoryData, w: Window, among: frozenset[str]) -> frozenset[tuple[str, str]]:
    """The voters' controller links window ``w`` breaks (module doc)."""
    kind = (w.kind or "").replace("-", "_")
    links = _controller_links(w.links, among)
    if kind in LINK_CUT_KINDS:
        return frozenset(links)
    latency = w.params.get("latency")
    if kind == "latency" and isinstance(latency, (int, float)):
        if latency * (2 if w.both_ways else 1) >= _election_timeout_ms(h):
            return frozenset(links)
    return frozenset()


def _election_timeout_ms(h: HistoryData) -> int:
    """The run's ``controller.quorum.election.timeout.ms``, read from its header once."""
    if "quorum.election_ms" not in h.cache:
        h.cache["quorum.election_ms"] = Settings.from_config(h.config).controller_quorum_election_timeout_ms
    return int(h.cache["quorum.election_ms"])


def _down(w: Window, among: frozenset[str]) -> frozenset[str]:
    kind = (w.kind or "").replace("-", "_")
    if kind not in CUT_KINDS:
        return frozenset()
    named = {str(t) for t in w.targets} | {f"kafka-{t}" for t in w.targets if isinstance(t, int)}
    return among & named


def state_at(h: HistoryData, wins: Iterable[Window], among: frozenset[str], t: int) -> QuorumState:
    """What the windows open at instant ``t`` (started, their heal not yet done) do to the voters."""
    down: set[str] = set()
    broken: set[tuple[str, str]] = set()
    for w in wins:
        if w.start <= t < w.until(h.end_time):
            down |= _down(w, among)
            broken |= broken_links(h, w, among)
    return QuorumState(frozenset(down), frozenset(broken))


def lost_until(h: HistoryData, wins: Sequence[Window], among: frozenset[str], t0: int, t1: int) -> int | None:
    """When the last loss of the quorum that began or lasted within ``[t0, t1]`` ended (the
    instant the windows keeping it lost closed, or the history's end); None when the quorum was
    never lost then. The state changes only where a window opens or closes, so those instants
    (and ``t0``) are the ones looked at."""
    if not among:
        return None
    edges = sorted({t for w in wins for t in (w.start, w.until(h.end_time))} | {t0})
    end: int | None = None
    for i, t in enumerate(edges):
        if t < t0 or (t > t1 and end is None):
            continue
        if t > t1 and end is not None and t > end:
            break
        if state_at(h, wins, among, t).lost(among):
            end = edges[i + 1] if i + 1 < len(edges) else h.end_time
    return end


def disturbed(h: HistoryData, wins: Iterable[Window], among: frozenset[str], t0: int, t1: int) -> bool:
    """Some window open within ``[t0, t1]`` broke a voters' controller link: the controller may
    have failed over (a voter's process fault alone is within the bounds' own allowance)."""
    return any(w.start <= t1 and w.until(h.end_time) > t0 and broken_links(h, w, among) for w in wins)
