"""``follower-latency``: records served by an in-sync follower reach the consumer no later, at the
median, than B after records served by the leader (KIP-392: fetching from a follower adds no
unnecessary delay to the high watermark's propagation). B = ``follower_latency_bound_ms`` +
min(Wr, I): the follower learns a new high watermark in the answer to its next fetch, which the
leader returns with the next record or after ``replica.fetch.wait.max.ms`` (Wr), so about I, the
mean time between two acknowledged records of a partition, or Wr on a quiet one
(``core.checks.bounds`` gives the reasoning).

A record's *latency* is the time from its send's acknowledgement (``ok``: with acks=all the
leader's high watermark has passed it) to the poll that returned it; it is *leader-served* when
the broker that served it (``replica``) led the partition then (the observer's last ``meta``
before the poll), *follower-served* when that broker was another replica in the ISR then. Only
quiet records are judged: neither the acknowledgement nor the poll falls inside a fault window or
less than ``progress_bound_ms`` after its heal was done (records resume within it; a broker
restarted after a power loss is back only at the heal's ``ok``), nor in the run's first
``follower_fetch_grace_ms`` (consumers find their replica), nor after the last acknowledged send
(a consumer catching up reads old records). The verdict compares the two medians; with fewer than
``MIN_SAMPLES`` quiet records of either kind there is nothing to compare (valid, judged nothing:
``extra_us`` absent), a history without
racks, acknowledgements or ``meta`` is not applicable, and so is a transactional one (a
read_committed record is readable when its transaction ends, which this does not time).

Counted: ``leader_records``, ``follower_records``, ``leader_median_us``, ``follower_median_us``,
``extra_us`` (the difference), ``interval_us`` (I), ``bound_us`` (B).
"""

from __future__ import annotations

import numpy as np

from highwater.core.checks.data import OK, HistoryData, distinct, member
from highwater.core.checks.verdict import NOT_APPLICABLE, Verdict
from highwater.core.checks.windows import MS, bound_ns, fault_windows

CHECK = "follower-latency"
#: quiet records of each kind the medians need
MIN_SAMPLES = 100
US = 1000


def _interval(h: HistoryData) -> int:
    """I: the mean time between two acknowledgements on one partition, over the partitions (ns; a
    run without two on any partition: a large value). The mean, not the median: producers send
    in bursts, and a burst's records become readable together, after the follower's fetch that
    follows the burst's last one (a probe at 3 records/s per producer had a median gap of 14-22 ms
    and a mean of ~500 ms)."""
    s = h.sends
    ok = (s.type == OK) & (s.tp >= 0)
    spans = counts = 0
    for tp in distinct(s.tp[ok]).tolist():
        times = s.time[ok & (s.tp == tp)]
        if len(times) > 1:
            spans += int(times.max() - times.min())
            counts += len(times) - 1
    return spans // counts if counts else 1 << 62


def _acks(h: HistoryData) -> tuple[np.ndarray, np.ndarray]:
    """The acknowledged value ids, sorted, and the first ``ok`` time of each."""
    s = h.sends
    ok = (s.type == OK) & (s.vid != 0)
    vids, times = s.vid[ok], s.time[ok]
    order = np.lexsort((times, vids))
    vids, times = vids[order], times[order]
    first = np.ones(len(vids), bool)
    first[1:] = vids[1:] != vids[:-1]
    return vids[first], times[first]


def _served_by(h: HistoryData, tp: np.ndarray, polled: np.ndarray, replica: np.ndarray) -> np.ndarray:
    """Per record: 1 if ``replica`` led its partition at ``polled`` (the observer's last meta
    before), 2 if it was another replica in the ISR then, 0 otherwise or when no meta came before."""
    out = np.zeros(len(tp), np.int8)
    seen: dict[int, list[tuple[int, int, frozenset[int]]]] = {}
    for m in sorted((m for m in h.meta if m.leader is not None), key=lambda m: m.time):
        seen.setdefault(m.tp, []).append((m.time, int(m.leader or 0), m.isr or frozenset()))
    for part, obs in seen.items():
        rows = np.nonzero(tp == part)[0]
        k = np.searchsorted(np.array([t for t, _, _ in obs], np.int64), polled[rows], side="right")
        for j, (_, leader, isr) in enumerate(obs):  # the records this observation covers
            mine = rows[k == j + 1]
            out[mine] = np.where(replica[mine] == leader, 1, np.where(member(replica[mine], list(isr)), 2, 0)).astype(
                np.int8
            )
    return out


def follower_latency(h: HistoryData) -> Verdict:
    """follower-latency: see the module doc."""
    if not (h.header.get("racks") or {}).get("clients") or not h.meta:
        return Verdict(CHECK, NOT_APPLICABLE, notes=["needs racks and meta"])
    if h.config.get("transactional"):
        return Verdict(CHECK, NOT_APPLICABLE, notes=["transactional: records are readable when their transaction ends"])
    ack_vid, ack_time = _acks(h)
    if not len(ack_vid):
        return Verdict(CHECK, NOT_APPLICABLE, notes=["no acknowledged send"])
    quiet_after = bound_ns(h, "progress_bound_ms")
    start = min(h.proc_first_time.tolist() or [0]) + bound_ns(h, "follower_fetch_grace_ms")
    p = h.polls
    candidates = np.nonzero(p.replica >= 0)[0]
    at = np.minimum(np.searchsorted(ack_vid, p.vid[candidates]), len(ack_vid) - 1)
    matched = ack_vid[at] == p.vid[candidates]  # records whose send was acknowledged
    served, acked = candidates[matched], ack_time[at[matched]]
    polled = p.time[served]
    keep = (acked >= start) & (polled <= int(ack_time.max()))
    for w in fault_windows(h):  # quiet records only
        # quiet from B after the heal was done (its ok: a broker restarted after a kill or a
        # power loss is back and catching up), not after it was asked for
        keep &= ~((w.start <= polled) & (acked <= w.until(h.end_time) + quiet_after))
    served, acked, polled = served[keep], acked[keep], polled[keep]
    kind = _served_by(h, p.tp[served], polled, p.replica[served])
    latency = polled - acked
    kinds = {"leader": latency[kind == 1], "follower": latency[kind == 2]}
    interval = _interval(h)
    bound = bound_ns(h, "follower_latency_bound_ms") + min(bound_ns(h, "replica_fetch_wait_max_ms", 500), interval)
    counts = {
        "leader_records": len(kinds["leader"]),
        "follower_records": len(kinds["follower"]),
        "bound_us": bound // US,
    }
    if min(len(v) for v in kinds.values()) < MIN_SAMPLES:  # no medians to compare: nothing judged
        return Verdict(
            CHECK,
            True,
            counts,
            notes=[f"not judged: fewer than {MIN_SAMPLES} quiet records of the leader or a follower"],
        )
    leader_median = int(np.median(kinds["leader"]))
    follower_median = int(np.median(kinds["follower"]))
    extra = follower_median - leader_median
    counts |= {
        "leader_median_us": leader_median // US,
        "follower_median_us": follower_median // US,
        "extra_us": extra // US,
        "interval_us": min(interval, 1 << 40) // US,
    }
    examples = []
    if extra > bound:
        examples.append(
            {
                "kind": "follower-served-later",
                "leader_median_ms": round(leader_median / MS, 1),
                "follower_median_ms": round(follower_median / MS, 1),
                "bound_ms": bound // MS,
            }
        )
    return Verdict(CHECK, extra <= bound, counts, examples)
