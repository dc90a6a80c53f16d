"""HW-8 (docs/findings.md): a partition leader cut off from every other node but not from its
clients keeps telling them that it leads (Kafka has no leader lease; the broker's part is
``tests/integration/test_finding_hw8.py``, a strict xfail). A consumer reading from it gets no
error, only no new records, until a Metadata answer from another broker moves it, so its stall
during such a cut is bounded by no client setting: the consumer stall bound S assumes one metadata
refresh finds the new leader, and each refresh sent to the cut-off broker finds the old one.

Like HW-10 in the transactions suite, what HW-8 explains is subtracted exactly and everything
else is judged: ``without_hw8`` drops the progress and follower-fetch verdicts only when every
violation they count is a stall (or a missed move) of a *zombie reader*, a consumer left reading
a partition from its cut-off leader, and says why not otherwise."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from highwater.core.checks.data import HistoryData, cached
from highwater.core.checks.loading import load
from highwater.core.checks.stalls import Stall, fault_stall_outcome, window_stall_bound, window_stalls
from highwater.core.checks.verdict import MAX_EXAMPLES, Verdict
from highwater.core.checks.windows import MS, fault_windows
from highwater.core.findings import find
from highwater.runner import record_beyond
from highwater.suites.findings import FINDINGS
from highwater.suites.scenario import TimedChecksOnly

HW8 = "HW-8"
#: the checks whose consumer stalls HW-8 can explain: its record's (core/findings.toml)
STALL_CHECKS = tuple(c for s in find(FINDINGS, HW8).shows for c in s.checks)


@dataclass(frozen=True)
class ZombieReader:
    """A consumer left reading a partition from its cut-off leader during a zombie window."""

    window: int  # index into fault_windows
    consumer: str
    topic: str
    partition: int
    broker: int  # the cut-off broker, the partition's leader when the window began
    stall_ms: int  # the consumer's longest stall on the partition during the window
    bound_ms: int  # the window's stall bound

    def __str__(self) -> str:
        """The line a suite prints for a subtracted zombie reader."""
        return (
            f"{HW8}: {self.consumer} read {self.topic}-{self.partition} from its cut-off leader {self.broker}, "
            f"which kept claiming leadership: longest stall {self.stall_ms} ms (bound {self.bound_ms} ms)"
        )


def zombie_windows(h: HistoryData) -> dict[int, int]:
    """Fault windows (index into ``fault_windows``) that leave a zombie, and its broker: a ``cut``
    of exactly one broker from every other node (``cuts_off``), its controller links among the
    links cut (without them it still hears the controller and learns it was replaced), and no
    peer named (the clients' links are not cut)."""
    out: dict[int, int] = {}
    for i, w in enumerate(fault_windows(h)):
        if (w.kind or "") != "cut" or w.params.get("peer") is not None or len(w.cut) != 1:
            continue
        event = h.events([w.row])[0]
        links = (event.get("value") or {}).get("links") or []
        if any(str(lk).startswith("controller:") for lk in links):
            out[i] = next(iter(w.cut))
    return out


def _last_replica_before(h: HistoryData, proc: int, tp: int, t: int) -> int | None:
    """The broker that served the last record of ``tp`` that ``proc`` polled at or before ``t``."""
    p = h.polls
    mine = np.nonzero((p.proc == proc) & (p.tp == tp) & (p.time <= t))[0]
    return int(p.replica[mine[-1]]) if len(mine) else None


def _leader_before(h: HistoryData, tp: int, t: int) -> int | None:
    """The leader of ``tp`` in the observer's last ``meta`` observation before ``t``."""
    seen = [m for m in h.meta if m.tp == tp and m.time < t and m.leader is not None]
    return max(seen, key=lambda m: m.row).leader if seen else None


def zombie_readers(h: HistoryData) -> list[ZombieReader]:
    """The consumers HW-8 strands, per zombie window: those whose last record, before the window
    began, of a partition the cut-off broker led then came from that broker. Partitions it only
    followed are not among them: their leader is where it was, so a consumer that leaves the
    cut-off follower finds it with any metadata, as the stall bound assumes (a client that does
    not leave it, e.g. HW-9, stays convicted)."""
    wins = fault_windows(h)
    longest: dict[tuple[int, int, int], Stall] = {}
    for x in window_stalls(h):
        if x.phase == "fault":
            longest[(x.window, x.proc, x.tp)] = x
    out: list[ZombieReader] = []
    for wi, broker in zombie_windows(h).items():
        w = wins[wi]
        for tp in range(len(h.tps)):
            if _leader_before(h, tp, w.start) != broker:
                continue
            for proc in sorted(set(h.polls.proc[h.polls.tp == tp].tolist())):
                if _last_replica_before(h, proc, tp, w.start) != broker:
                    continue
                x = longest.get((wi, proc, tp))
                topic, partition = h.tps[tp]
                bound = window_stall_bound(h, w)
                out.append(
                    ZombieReader(
                        wi, h.proc_name(proc), topic, partition, broker, x.stall // MS if x else 0, bound // MS
                    )
                )
    return out


def stalls_past_bound(h: HistoryData) -> list[Stall]:
    """Every consumer stall during a fault window longer than the window's stall bound, as
    progress and follower-fetch judge it (``fault_stall_outcome``)."""
    wins = fault_windows(h)
    return [
        x
        for x in window_stalls(h)
        if x.phase == "fault" and x.acked and fault_stall_outcome(h, wins[x.window], x)[0] == "stalled"
    ]


def _stall_keys(v: Verdict) -> list[tuple[str, str, int]]:
    """(consumer, topic, partition) of every stall example of a progress or follower-fetch verdict."""
    kinds = ("consumer-stalled-during-fault", "rack-consumer-stalled-during-fault", "no-move-after-isr-loss")
    return [(e["consumer"], e["topic"], e["partition"]) for e in v.examples if e["kind"] in kinds]


def unexplained(verdicts: list[Verdict], h: HistoryData) -> list[str]:
    """Why HW-8 does not explain every violation of progress and follower-fetch (empty: it does).

    Explained means: every violation counted is a consumer stall or a consumer that did not move,
    shown in the examples (progress: ``stalls``; follower-fetch: ``window_stalls`` and
    ``stalls``, none ``misrouted``; no more than ``MAX_EXAMPLES``, so the count cannot hide
    another), each on a zombie reader's consumer and partition, and no stall past its bound
    outside its zombie windows on any of those (an example names no window, so such a stall
    could be the example shown)."""
    readers = cached(h, "hw8.zombie_readers", zombie_readers)
    keys = {(r.consumer, r.topic, r.partition) for r in readers}
    windows = {(r.consumer, r.topic, r.partition, r.window) for r in readers}
    why = []
    for x in stalls_past_bound(h):
        key = (h.proc_name(x.proc), *h.tps[x.tp])
        if key in keys and (*key, x.window) not in windows:
            why.append(f"{key[0]} on {key[1]}-{key[2]} also stalled past its bound outside a zombie window")
    for v in verdicts:
        if v.check not in STALL_CHECKS or v.valid is not False:
            continue
        counted = v.counts.get("stalls", 0) + v.counts.get("window_stalls", 0)
        shown = _stall_keys(v)
        if v.counts.get("misrouted", 0):
            why.append(f"{v.check}: {v.counts['misrouted']} record(s) served by another rack")
        if counted > MAX_EXAMPLES or len(shown) != counted:
            # the kinds shown say what the rest were (a stall after a heal, no send after one...)
            kinds = Counter(e["kind"] for e in v.examples if e["kind"] != "longest-stall")
            seen = ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "none"
            why.append(
                f"{v.check}: {counted} violation(s) counted, {len(shown)} shown as consumer stalls (examples: {seen})"
            )
        why += [f"{v.check}: {c} on {t}-{p} is no zombie reader's" for c, t, p in shown if (c, t, p) not in keys]
    return why


def without_hw8(verdicts: list[Verdict], history: Path) -> tuple[list[Verdict], list[ZombieReader]]:
    """The verdicts without progress and follower-fetch when HW-8 explains every violation they
    report (``unexplained``; the history is read only then), and the zombie readers; a
    ``TimedChecksOnly`` error naming what is not explained otherwise."""
    if all(v.valid is not False for v in verdicts if v.check in STALL_CHECKS):
        return verdicts, []
    h = load(history)
    why = unexplained(verdicts, h)
    if why:  # timed checks only (STALL_CHECKS): a client's slowness finding may expect it
        # the run's class says so too: HW-8 does not explain these stalls (another finding may)
        record_beyond(history.parent, HW8, [v.check for v in verdicts if v.check in STALL_CHECKS and v.valid is False])
        raise TimedChecksOnly("liveness violations beyond HW-8:\n  " + "\n  ".join(why))
    return [v for v in verdicts if v.check not in STALL_CHECKS], cached(h, "hw8.zombie_readers", zombie_readers)
