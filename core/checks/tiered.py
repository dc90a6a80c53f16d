"""``remote-reset``: on a tiered topic (KIP-405), a consumer's position was reset by
``auto.offset.reset`` away from an offset the log still held.

A consumer whose fetch offset lies below the leader's local log start is served from the remote
store; Kafka answers OFFSET_OUT_OF_RANGE only for an offset below the log start (retention) or
past the log end. A reset from an offset in between is an offset that existed, remote or local,
answered as if it did not (KAFKA-16073's shape: the local log start moved while a fetch was
between the tiers), and the consumer then re-reads from the start or skips to the end.

The offset a consumer was at is the one after the last record it returned on the partition
before the reset (none returned: the offset it was last assigned or sought to). It existed when
the final read's reference replica holds it, ``log_start <= offset < hw`` (``derived.reference``:
the log start moves only by retention, so an offset above the final log start was above it
throughout). A reset with no known offset before it proves nothing and is not judged.

Applicable to tiered runs (the header's ``config.tiered``) on a client whose driver reports the
resets its library applies (``RESET_REPORTING``: kafka-python, confluent-kafka; the others'
resets are not seen, so their runs are not judged); unknown without a final read. No reset is
valid: no consumer lost its place. Counted: ``resets``, ``judged``, ``violations``. Examples: consumer, partition, offset it was at, the
offset it was reset to, the final log start and high watermark.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from highwater.core.checks.data import OK, HistoryData
from highwater.core.checks.derived import example, reference
from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, UNKNOWN, Verdict

CHECK = "remote-reset"
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
