"""Checks on the replicas and the high watermark: replica-divergence, hw-regression."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from highwater.core.checks.data import HistoryData
from highwater.core.checks.derived import example, reference
from highwater.core.checks.verdict import MAX_EXAMPLES, UNKNOWN, Verdict, decide


def replica_divergence(h: HistoryData) -> Verdict:
    """Two replicas' final logs of one partition differ below the committed high watermark H
    (the highest high watermark among its final reads). Each replica r is compared with the
    reference replica (see ``derived.reference``) on offsets [max of both log starts,
    min(H, r's log end)): both must hold the same offsets with the same values. A replica that
    is merely behind (shorter) does not diverge; its tail above H may differ (not committed).
    One count per replica that diverges; ``offsets`` counts the differing offsets."""
    ref = reference(h)
    by_tp: dict[int, list[int]] = defaultdict(list)
    for i, fl in enumerate(h.finals):
        by_tp[fl.tp].append(i)
    compared = diverged = n_offsets = 0
    examples: list[dict[str, Any]] = []
    for tp, idxs in by_tp.items():
        j = ref.ref[tp]
        if j is None or len(idxs) < 2:
            continue
        a = h.finals[j]
        for i in idxs:
            if i == j:
                continue
            b = h.finals[i]
            lo, hi = max(a.log_start, b.log_start), min(a.hw, b.end)
            compared += 1
            if hi <= lo:
                continue
            ma = (a.offsets >= lo) & (a.offsets < hi)
            mb = (b.offsets >= lo) & (b.offsets < hi)
            ao, av, bo, bv = a.offsets[ma], a.vids[ma], b.offsets[mb], b.vids[mb]
            if np.array_equal(ao, bo) and np.array_equal(av, bv):
                continue
            both, ia, ib = np.intersect1d(ao, bo, assume_unique=True, return_indices=True)
            differ = np.union1d(np.setxor1d(ao, bo, assume_unique=True), both[av[ia] != bv[ib]])
            diverged += 1
            n_offsets += len(differ)
            if len(examples) < MAX_EXAMPLES:
                first = [int(x) for x in differ[:3]]
                examples.append(
                    example(
                        h,
                        "replica-divergence",
                        [a.row, b.row],
                        tp=tp,
                        replicas=[a.replica, b.replica],
                        offsets=first,
                        committed_hw=int(a.hw),
                        focus={a.row: first, b.row: first},
                    )
                )
    counts = {"diverged_replicas": diverged, "differing_offsets": n_offsets, "replicas_compared": compared}
    notes = [] if compared else ["no partition with two or more final-read replicas"]
    return Verdict("replica-divergence", decide(diverged, compared), counts, examples, notes)


def hw_regression(h: HistoryData) -> Verdict:
    """A client (one observing process) saw the high watermark of a partition go backwards:
    two of its ``meta`` observations, in recording order, with hw2 < hw1 (KIP-207). Each
    process is judged on its own, since observations of different processes are not ordered
    by a request/response window. One count per decrease.

    An observation whose leader epoch is older than one the process already saw for the
    partition is stale and not judged (``stale_observations``): its metadata came from a broker
    that had not heard of the new leader, so it asked a deposed leader, which is not "the
    leader" KIP-207 speaks of (seen on compose: a cut-off old leader answering HW 136 after the
    new leader's 138). Observations without an epoch are always judged."""
    last: dict[tuple[int, int], tuple[int, int]] = {}
    newest_epoch: dict[tuple[int, int], int] = {}
    steps = regressions = stale = 0
    examples: list[dict[str, Any]] = []
    for m in h.meta:
        if m.hw is None or m.tp < 0:
            continue
        k = (m.proc, m.tp)
        if m.epoch is not None:
            if m.epoch < newest_epoch.get(k, m.epoch):
                stale += 1
                continue
            newest_epoch[k] = m.epoch
        prev = last.get(k)
        if prev is not None:
            steps += 1
            if m.hw < prev[0]:
                regressions += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append(
                        example(
                            h,
                            "hw-regression",
                            [prev[1], m.row],
                            tp=m.tp,
                            observer=h.proc_name(m.proc),
                            hw_before=prev[0],
                            hw_after=m.hw,
                        )
                    )
        last[k] = (m.hw, m.row)
    counts = {"regressions": regressions, "observation_pairs": steps, "stale_observations": stale}
    notes = [] if steps else ["no process observed a high watermark twice"]
    valid = decide(regressions, steps)
    return Verdict("hw-regression", valid if steps or regressions else UNKNOWN, counts, examples, notes)
