"""The checks tiered storage (KIP-405) adds: ``remote-reset`` and ``log-start``.

``remote-reset``: on a tiered topic, a consumer's position was reset by ``auto.offset.reset``
away from an offset the log still held.

A consumer whose fetch offset lies below the leader's local log start is served from the remote
store; Kafka answers OFFSET_OUT_OF_RANGE only for an offset below the log start (retention) or
past the log end. A reset from an offset in between is an offset that existed, remote or local,
answered as if it did not (KAFKA-16073's shape: the local log start moved while a fetch was
between the tiers), and the consumer then re-reads from the start or skips to the end.

The offset a consumer was at is the one after the last record it returned on the partition
before the reset (none returned: the offset it was last assigned or sought to). It existed when
the final read's reference replica holds it, ``log_start <= offset < hw`` (``derived.reference``:
the log start moves only by retention, which ``log-start`` holds the run to, so an offset above
the final log start was above it throughout). A reset with no known offset before it proves nothing and is not judged.

Applicable to tiered runs (the header's ``config.tiered``) on a client whose driver reports the
resets its library applies (``RESET_REPORTING``: kafka-python, confluent-kafka; the others'
resets are not seen, so their runs are not judged); unknown without a final read. No reset is
valid: no consumer lost its place. Counted: ``resets``, ``judged``, ``violations``. Examples: consumer, partition, offset it was at, the
offset it was reset to, the final log start and high watermark.

``log-start``: the log start moves only by retention. A tiered run's observer asks each leader
for the partition's log start every second (``meta`` events' ``log_start``: ListOffsets
EARLIEST, which on a tiered topic counts the remote store's segments too). Its topics keep every
record (``retention_ms`` -1 in the header, ``harness.tiered.RETENTION_MS``), so nothing may
delete an acknowledged record: an observed log start above the offset of an acknowledged send
is the anomaly (``log-start-passed-an-acknowledged-record``, one example per partition, at its
highest observed log start). Such a record was appended before the observation (the log end was
past the log start then), so the order of the ack and the observation does not matter. A log
start above offsets no send was acknowledged at (a failed or unknown send, an aborted
transaction's records) is clean.

With a finite retention R (``retention_ms`` > 0: a tiered run's ``RunSpec.retention_ms``,
tiered/retention-race), retention may delete a segment once its newest record is older than R,
so it may pass a record only once that record is older than R. A record's timestamp is set when
its producer sends it, and a producer gives it up ``producer_delivery_timeout_ms`` (Dt) later,
so a record acknowledged at a was stamped after a - Dt: it is promised until a + R - Dt - K
(K the slack, ``bound_slack_ms``). The anomaly is an observation at t whose log start is above
an acknowledged record still promised at t. Each partition's example is its observation that
passed the most promised records. Not applicable without such observations (untiered runs);
unknown without a recorded retention. Counted: ``observations``, ``partitions``,
``partitions_moved`` (partitions with the anomaly), ``acked_below`` (promised records passed,
at each such partition's worst observation), ``retention_ms``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from highwater.core.checks.bounds import Settings
from highwater.core.checks.data import OK, HistoryData, retention_ms
from highwater.core.checks.derived import example, reference
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, UNKNOWN, Verdict
from highwater.core.checks.windows import MS

CHECK = "remote-reset"
LOG_START = "log-start"
#: the clients whose drivers record a position change with reason ``reset`` when their library
#: applies auto.offset.reset (``harness.client_common.PositionReason.RESET``)
RESET_REPORTING = frozenset({"kafka-python", "confluent-kafka"})


def remote_reset(h: HistoryData) -> Verdict:
    """remote-reset (module doc)."""
    if not h.config.get("tiered"):
        return Verdict(CHECK, NOT_APPLICABLE, notes=["not applicable: the run's topics do not tier (config.tiered)"])
    client = str(h.header.get("client") or "").split(" ")[0]
    if client not in RESET_REPORTING:
        return Verdict(
            CHECK, NOT_APPLICABLE, notes=[f"not applicable: {client or 'the client'} does not report its resets"]
        )
    pos = h.positions
    resets = np.nonzero((pos.reset == 1) & (pos.type == OK) & (pos.tp >= 0))[0]
    if not h.finals:
        return Verdict(CHECK, UNKNOWN, {"resets": len(resets)}, notes=["no final read: what the log held is unknown"])
    ref = reference(h)
    examples: list[dict[str, Any]] = []
    judged = bad = 0
    for i in resets.tolist():
        proc, tp, t, row = int(pos.proc[i]), int(pos.tp[i]), int(pos.time[i]), int(pos.row[i])
        at = _offset_before(h, proc, tp, row)
        if at is None or not ref.has_final[tp]:
            continue
        judged += 1
        if ref.log_start[tp] <= at < ref.hw[tp] and int(pos.offset[i]) != at:
            bad += 1
            if len(examples) < MAX_EXAMPLES:
                examples.append(
                    example(
                        h,
                        "reset-from-an-offset-that-existed",
                        [row],
                        tp=tp,
                        consumer=h.proc_name(proc),
                        was_at=at,
                        reset_to=int(pos.offset[i]),
                        log_start=int(ref.log_start[tp]),
                        hw=int(ref.hw[tp]),
                        time_s=round(t / 1e9, 3),
                    )
                )
    return Verdict(CHECK, not bad, {"resets": len(resets), "judged": judged, "violations": bad}, examples)


def _offset_before(h: HistoryData, proc: int, tp: int, row: int) -> int | None:
    """Where ``proc`` was in ``tp`` just before the event at ``row``: after the last record it
    returned there, or the offset it was last assigned or sought to, whichever came later."""
    p, pos = h.polls, h.positions
    mine = (p.proc == proc) & (p.tp == tp) & (p.row < row)
    last_poll = None
    if mine.any():  # a poll's records share its row: the last poll's highest offset
        last = int(p.row[mine].max())
        last_poll = (last, int(p.offset[mine & (p.row == last)].max()) + 1)
    moved = (pos.proc == proc) & (pos.tp == tp) & (pos.row < row) & (pos.offset >= 0)
    last_move = None
    if moved.any():
        last = int(pos.row[moved].max())
        last_move = (last, int(pos.offset[moved & (pos.row == last)][0]))
    known = [x for x in (last_poll, last_move) if x is not None]
    return max(known)[1] if known else None


def log_start(h: HistoryData) -> Verdict:
    """log-start (module doc)."""
    observed = [m for m in h.meta if m.log_start is not None and m.tp >= 0]
    if not observed:
        return Verdict(
            LOG_START, NOT_APPLICABLE, notes=["not applicable: the run observed no log start (tiered runs do)"]
        )
    counts = {"observations": len(observed), "partitions": len({m.tp for m in observed})}
    retention = retention_ms(h.config)
    if retention is None:
        return Verdict(
            LOG_START,
            UNKNOWN,
            counts,
            notes=[f"retention.ms is {h.config.get('retention_ms')!r}: what it keeps is unknown"],
        )
    s = h.sends
    acked = (s.type == OK) & (s.tp >= 0) & (s.offset >= 0)
    # until when each acknowledged record is promised to stay: for good, or while it is younger
    # than the retention even if it was stamped a delivery timeout (plus the slack) before its ack
    settings = Settings.from_config(h.config)
    floor = (retention - settings.producer_delivery_timeout_ms - settings.bound_slack_ms) * MS
    promised_until = np.where(retention < 0, np.iinfo(np.int64).max, s.time.astype(np.int64) + floor)
    worst: dict[int, tuple[int, Any, np.ndarray]] = {}  # tp -> (records passed, observation, their mask)
    for m in observed:
        passed = acked & (s.tp == m.tp) & (s.offset < m.log_start) & (m.time < promised_until)
        n = int(passed.sum())
        if n and (m.tp not in worst or n > worst[m.tp][0]):
            worst[m.tp] = (n, m, passed)
    examples: list[dict[str, Any]] = []
    for tp, (n, m, passed) in sorted(worst.items()):
        lowest = int(np.argmin(np.where(passed, s.offset, np.iinfo(np.int64).max)))
        if len(examples) < MAX_EXAMPLES:
            examples.append(
                example(
                    h,
                    "log-start-passed-an-acknowledged-record",
                    [m.row, int(s.row[lowest])],
                    tp=tp,
                    log_start=int(m.log_start),
                    leader=m.leader,
                    lowest_acked=int(s.offset[lowest]),
                    acked_below=n,
                    time_s=round(m.time / 1e9, 3),
                    acked_s=round(int(s.time[lowest]) / 1e9, 3),
                )
            )
    below = sum(n for n, _, _ in worst.values())
    counts.update(partitions_moved=len(worst), acked_below=below, retention_ms=retention)
    return Verdict(LOG_START, not worst, counts, examples)
