"""HW-27 (docs/findings.md): a kafka-python 3.0.12 consumer whose fetch to a broker raised
UnknownBrokerIdError (the broker missing from its cluster metadata while a partition named it,
as during a broker's restart) never fetches from that broker again. ``Fetcher._send_fetches_async``
marks the node as having a fetch in flight before ``KafkaNetManager.send`` raises (only
``NodeNotReadyError`` is turned into a failed future), so the callback that clears the mark is
never attached: every later fetch for a partition led by that broker is skipped as "pending",
silently, and the one poll that raised is all the application sees.

Like HW-8 and HW-10, what it explains is subtracted exactly: ``without_hw27`` drops ``progress``
only when every violation it counts is a consumer stalled on a partition whose leader, when the
stall began, was a broker that consumer's poll had earlier failed on with UnknownBrokerIdError,
and leaves the verdicts whole (saying why) otherwise."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from highwater.core.checks.data import HistoryData
from highwater.core.checks.loading import load
from highwater.core.checks.verdict import MAX_EXAMPLES, Verdict
from highwater.core.findings import find
from highwater.runner import record_beyond
from highwater.suites.findings import FINDINGS

HW27 = "HW-27"
#: the clients HW-27's record names (core/findings.toml)
HW27_CLIENTS = frozenset(find(FINDINGS, HW27).clients)
#: the stall examples of ``progress`` HW-27 can explain
STALL_KINDS = ("consumer-stalled-after-heal", "consumer-stalled-during-fault")
_UNKNOWN_BROKER = re.compile(r"UnknownBrokerIdError\D*(\d+)")


@dataclass(frozen=True)
class Stranding:
    """A consumer's poll failed on ``broker`` at ``time``: the broker is marked in flight for good."""

    consumer: str
    broker: int
    time: int


def strandings(h: HistoryData) -> list[Stranding]:
    """Every poll error naming UnknownBrokerIdError and its broker, in time order."""
    out = []
    for e in h.poll_errors:
        found = _UNKNOWN_BROKER.search(e.error or "")
        if found:
            out.append(Stranding(h.proc_name(e.proc), int(found.group(1)), e.time))
    return sorted(out, key=lambda s: s.time)


def leader_at(h: HistoryData, topic: str, partition: int, t: int) -> int | None:
    """The partition's leader at the last observation at or before ``t`` (None: none seen)."""
    tp = h.tps.index((topic, partition)) if (topic, partition) in h.tps else -1
    seen = [m for m in h.meta if m.tp == tp and m.time <= t]
    return max(seen, key=lambda m: m.time).leader if seen else None


def unexplained(verdicts: list[Verdict], h: HistoryData) -> list[str]:
    """Why HW-27 does not explain every failing check (empty: it does): only ``progress`` may
    fail, every violation it counts must be shown (no more than ``MAX_EXAMPLES``), and each shown
    stall must be of a consumer on a partition led, when its stall began, by a broker that
    consumer's poll had failed on with UnknownBrokerIdError before then."""
    stranded = strandings(h)
    why = []
    for v in verdicts:
        if v.valid is not False:
            continue
        if v.check != "progress":
            why.append(f"{v.check} failed too")
            continue
        shown = [e for e in v.examples if e["kind"] in STALL_KINDS]
        counted = v.counts.get("stalls", 0)
        if counted > MAX_EXAMPLES or len(shown) != counted:
            why.append(f"progress: {counted} violation(s) counted, {len(shown)} shown as consumer stalls")
        for e in shown:
            began = int(e.get("owed_from_ns") or e.get("from_time_ns") or 0)
            leader = leader_at(h, e["topic"], e["partition"], began)
            if not any(s.consumer == e["consumer"] and s.broker == leader and s.time <= began for s in stranded):
                why.append(
                    f"progress: {e['consumer']} on {e['topic']}-{e['partition']} (leader {leader}) "
                    "had no poll fail on that broker with UnknownBrokerIdError before its stall"
                )
    return why


def without_hw27(verdicts: list[Verdict], history: Path) -> list[Verdict]:
    """The verdicts without ``progress`` when HW-27 explains every violation of the failing
    checks (``unexplained``; the history is read only when ``progress`` failed). Otherwise they
    are returned whole, to be judged as any run's, with what HW-27 does not explain printed and
    recorded in the run's class."""
    if all(v.valid is not False for v in verdicts if v.check == "progress"):
        return verdicts
    why = unexplained(verdicts, load(history))
    if why:
        record_beyond(history.parent, HW27, ["progress"])
        print("HW-27 does not explain this run:\n  " + "\n  ".join(why))
        return verdicts
    print(f"{HW27}: every stall of this run is a consumer's on a broker it stranded (UnknownBrokerIdError)")
    return [v for v in verdicts if v.check != "progress"]
