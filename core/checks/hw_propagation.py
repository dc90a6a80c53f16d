"""``hw-propagation``: after an acks=all write is acknowledged (the leader's high watermark passed
it), each follower learns a high watermark beyond it within ``hw_propagation_bound_ms``, at the
median over the writes measured (``suites/conformance/test_kip392_fetching.py`` measures it per
release: a follower's Fetch response reports the HW it learnt).

The bound, ``core.checks.bounds``: Wr + Wr/2, Wr = ``replica.fetch.wait.max.ms``. The leader
answers a follower's fetch with the next records or after Wr (not on a high-watermark change,
KAFKA-9952), and the answer carries the new high watermark; a write measured alone waits out one
held fetch (Wr), and half a wait more covers a fetch already in flight when the ack came and the
measurement's own polling. A follower that learns it only with later records, or after several
waits, is past it. Judged on medians (the noise of a loaded machine is what a median leaves out);
a follower with no sample is unknown, never valid.

Pure: the measurement as data in, a ``Verdict`` out (no history: it is a measurement's check).
"""

from __future__ import annotations

from collections.abc import Mapping

from highwater.core.checks.verdict import UNKNOWN, Verdict

CHECK = "hw-propagation"


def hw_propagation(followers: Mapping[str, Mapping[str, float]], bound_ms: float) -> Verdict:
    """``followers``: per follower id, ``median_ms``, ``max_ms`` and ``samples`` of the time from
    an acknowledgement to that follower reporting a high watermark beyond it."""
    late = {f: m for f, m in followers.items() if m.get("samples") and float(m["median_ms"]) > bound_ms}
    empty = sorted(f for f, m in followers.items() if not m.get("samples"))
    examples = [
        {"follower": f, "median_ms": round(float(m["median_ms"]), 1), "bound_ms": bound_ms}
        for f, m in sorted(late.items())
    ]
    counts = {
        "followers": len(followers),
        "late": len(late),
        "unmeasured": len(empty),
        "slowest_median_ms": int(
            max((float(m["median_ms"]) for m in followers.values() if m.get("samples")), default=0)
        ),
    }
    if late:
        return Verdict(CHECK, False, counts, examples)
    if empty or not followers:
        return Verdict(CHECK, UNKNOWN, counts, notes=[f"no sample from follower(s) {', '.join(empty) or '(none)'}"])
    return Verdict(CHECK, True, counts)
