"""Fault windows, as the timed checks (``liveness``, ``ownership``, ``barrier``, ...) see them,
and the bounds they judge them by (``core.checks.bounds``, resolved per history).

Faults are windows from a ``fault`` event to the ``heal`` that ends it (a heal ends the active
faults of its kind, and of its targets when it names any; a heal of kind null or "all" ends
all; the ``ok`` that follows a fault's ``invoke`` is the same window). A fault *cuts off* the
brokers in ``params.cuts_off`` if given; otherwise the targets of process faults (kill, stop,
pause), of isolate/partition faults, and of cut/timeout faults that name no narrower ``peer``.
Targets are broker ids or names ending in the id (kafka-2).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from highwater.core.checks.bounds import Bound, resolve
from highwater.core.checks.data import HistoryData

MS = 1_000_000
#: faults that take their target brokers out for the window: the process is down or frozen (a
#: power loss and a corruption kill it first), or every link is cut; a clock fault takes nothing out
CUT_KINDS = {"kill", "stop", "pause", "isolate", "partition", "crash", "power_loss", "truncate_file", "flip_bits"}
LINK_CUT_KINDS = {"cut", "timeout"}


def bounds(h: HistoryData) -> dict[str, Bound]:
    """The bounds of this history (``core.checks.bounds.resolve`` of its header config)."""
    if "bounds" not in h.cache:
        h.cache["bounds"] = resolve(h.config)
    return h.cache["bounds"]


def bound_ns(h: HistoryData, key: str, default_ms: int | None = None) -> int:
    """A bound in ns: ``key`` as resolved by ``core.checks.bounds`` (``default_ms`` only
    for a key that module does not know)."""
    b = bounds(h).get(key)
    if b is not None:
        return b.ms * MS
    v = h.config.get(key, default_ms)
    return int(float(v) * MS) if isinstance(v, (int, float)) else int(default_ms or 0) * MS


def _broker_id(t: Any) -> int | None:
    if type(t) is int:
        return t
    if isinstance(t, str):
        m = re.search(r"(\d+)$", t)
        return int(m.group(1)) if m else None
    return None


#: the kinds of faults on client workers (faults.clients): their targets are client ids
CLIENT_FAULT_KINDS = frozenset({"client_kill", "client_freeze", "client_restart"})


@dataclass
class Window:
    start: int
    end: int | None
    kind: str | None
    cut: frozenset[int]
    params: dict[str, Any]
    row: int
    heal_row: int | None = None
    targets: tuple[Any, ...] = ()
    healed: int | None = None  # when the heal was done (its ok: a killed broker is back), else ``end``
    links: tuple[str, ...] = ()  # a link fault's links (``controller:kafka-1->kafka-2``)
    both_ways: bool = False  # its toxic acts on both streams of each link

    @property
    def back(self) -> int | None:
        return self.healed if self.healed is not None else self.end

    def until(self, end_time: int) -> int:
        """When the window closed (``back``), or ``end_time`` for one never healed."""
        return self.back if self.back is not None else end_time

    @property
    def brokers(self) -> frozenset[int]:
        """The brokers the window acts on: those it cuts off and its node targets (a latency on
        a broker's links slows that broker's replication); none for a fault on clients."""
        if self.on_clients:
            return frozenset()
        return self.cut | frozenset(b for b in map(_broker_id, self.targets) if b is not None)

    @property
    def on_clients(self) -> bool:
        """A fault on the client workers (``client_kill``/``client_freeze``/``client_restart``)."""
        return (self.kind or "").replace("-", "_") in CLIENT_FAULT_KINDS


def fault_windows(h: HistoryData) -> list[Window]:
    if "windows" in h.cache:
        return h.cache["windows"]
    active: list[Window] = []
    done: list[Window] = []
    for ev in sorted(h.faults, key=lambda e: e.row):
        if ev.type == "fault":
            if any(w.kind == ev.kind and list(w.targets) == list(ev.targets) for w in active):
                continue  # the ok of a fault whose invoke opened the window
            active.append(
                Window(
                    ev.time,
                    None,
                    ev.kind,
                    _cut_set(ev.kind, ev.targets, ev.params),
                    dict(ev.params),
                    ev.row,
                    targets=tuple(ev.targets),
                    links=ev.links,
                    both_ways=ev.both_ways,
                )
            )
            continue

        def matches(w: Window, ev: Any = ev) -> bool:
            return ev.kind in (None, "all") or (
                w.kind == ev.kind and (not ev.targets or list(w.targets) == list(ev.targets))
            )

        ending = [w for w in active if matches(w)]
        for w in ending:
            w.end, w.heal_row = ev.time, ev.row
            active.remove(w)
            done.append(w)
        if not ending and ev.kind not in (None, "all"):
            for w in done:  # the ok of a heal whose invoke ended the window
                if matches(w) and w.healed is None and w.heal_row is not None and w.heal_row < ev.row:
                    w.healed = ev.time
    out = sorted(done + active, key=lambda w: w.row)
    h.cache["windows"] = out
    return out


def _cut_set(kind: str | None, targets: Iterable[Any], params: Mapping[str, Any]) -> frozenset[int]:
    if isinstance(params.get("cuts_off"), list):
        return frozenset(b for b in map(_broker_id, params["cuts_off"]) if b is not None)
    k = (kind or "").replace("-", "_")
    if k in CUT_KINDS or (k in LINK_CUT_KINDS and params.get("peer") in (None, "all")):
        return frozenset(b for b in map(_broker_id, targets) if b is not None)
    return frozenset()


def busy(windows: list[Window], t0: int, t1: int, slack: int) -> bool:
    return any(w.start <= t1 and (w.end is None or w.end + slack >= t0) for w in windows)
