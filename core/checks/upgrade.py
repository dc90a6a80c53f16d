"""upgrade: what a roll onto another release or a feature finalization must keep.

Judged over the ``ok`` fault events of kind ``roll`` and ``finalize`` (``faults.release``),
each carrying ``observed: {"before": R, "after": R}`` with R what Kafka reported
(``Observer.cluster_record``): ``{"cluster_id", "topics": {name: {"id", "partitions"}},
"features": {name: level}}``; a finalization also carries ``finalized: {"feature", "asked",
"from", "to"}``, and a roll ``releases: {node: {"from", "to", "back_s", ...}}`` (``skipped`` for
a node already on the release): ``counts["nodes_rolled"]`` says how many restarts moved a node.
Every other check judges the records across the road as on any run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from highwater.core.checks.verdict import MAX_EXAMPLES, NOT_APPLICABLE, UNKNOWN, Verdict, decide

RELEASE_STEPS = ("roll", "finalize")


def _observations(ev: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    seen = (ev.get("value") or {}).get("observed") or {}
    return [seen[k] for k in ("before", "after") if isinstance(seen.get(k), Mapping)]


def upgrade(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> Verdict:
    """A violation is, across the release steps in history order:

    (a) ``cluster-id-changed``: an observation names another cluster id than the first one did;
    (b) ``topic-lost``, ``topic-id-changed``, ``partitions-changed``: a topic seen before is
        missing from a later observation, or has another topic id or partition count (a topic
        first seen later is new, not changed);
    (c) ``level-not-finalized``: after a finalization, its feature's level is not the one asked;
    (d) ``level-lowered``: a feature's finalized level is lower than an earlier observation's,
        unless a finalization asked for that lower level in between (an asked downgrade).

    Unknown when no roll or finalization completed (one that failed observed nothing to compare);
    not applicable to a history without either (``Input.RELEASE_STEPS``)."""
    tried = [e for e in events if e.get("f") == "fault" and (e.get("value") or {}).get("kind") in RELEASE_STEPS]
    if not tried:
        return Verdict("upgrade", NOT_APPLICABLE, {}, notes=["no roll or finalize step"])
    steps = [e for e in tried if e.get("process") == "nemesis" and e.get("type") == "ok" and _observations(e)]
    if not steps:  # a step that failed or was cut short observed nothing to compare
        return Verdict("upgrade", UNKNOWN, {"steps": 0}, notes=["no roll or finalize step completed"])
    examples: list[dict[str, Any]] = []
    # nodes a roll restarted on another release (one left alone, already on it, is not counted)
    rolled = sum(
        1
        for e in steps
        for r in ((e.get("value") or {}).get("releases") or {}).values()
        if isinstance(r, Mapping) and "back_s" in r
    )
    counts = {"steps": len(steps), "nodes_rolled": rolled, "observations": 0, "violations": 0}

    def bad(kind: str, ev: Mapping[str, Any], **fields: Any) -> None:
        counts["violations"] += 1
        if len(examples) < MAX_EXAMPLES:
            examples.append({"kind": kind, **fields, "events": [dict(ev)]})

    cluster_id: Any = None
    topics: dict[str, Mapping[str, Any]] = {}
    levels: dict[str, int] = {}

    def judge(ev: Mapping[str, Any], seen: Mapping[str, Any]) -> None:
        nonlocal cluster_id
        counts["observations"] += 1
        cid = seen.get("cluster_id")
        if cluster_id is None:
            cluster_id = cid
        elif cid is not None and cid != cluster_id:
            bad("cluster-id-changed", ev, was=cluster_id, now=cid)
        now = seen.get("topics") or {}
        for name, first in topics.items():
            t = now.get(name)
            if t is None:
                bad("topic-lost", ev, topic=name)
            elif t.get("id") != first.get("id"):
                bad("topic-id-changed", ev, topic=name, was=first.get("id"), now=t.get("id"))
            elif t.get("partitions") != first.get("partitions"):
                bad("partitions-changed", ev, topic=name, was=first.get("partitions"), now=t.get("partitions"))
        for name, t in now.items():
            topics.setdefault(str(name), t)
        for feature, level in (seen.get("features") or {}).items():
            if int(level) < levels.get(feature, 0):
                bad("level-lowered", ev, feature=feature, was=levels[feature], now=int(level))
            levels[feature] = max(levels.get(feature, 0), int(level))

    for ev in sorted(steps, key=lambda e: int(e.get("index", 0))):
        value = ev.get("value") or {}
        observed = value["observed"]
        if isinstance(observed.get("before"), Mapping):
            judge(ev, observed["before"])
        asked = value.get("finalized") if value.get("kind") == "finalize" else None
        if isinstance(asked, Mapping):
            feature, level = str(asked.get("feature")), int(asked.get("asked", 0))
            if feature in levels and level < levels[feature]:
                levels[feature] = level  # an asked downgrade lowers what later observations may show
        if isinstance(observed.get("after"), Mapping):
            judge(ev, observed["after"])
        if isinstance(asked, Mapping) and asked.get("to") != asked.get("asked"):
            bad("level-not-finalized", ev, feature=asked.get("feature"), asked=asked.get("asked"), now=asked.get("to"))
    judged = counts["observations"]
    return Verdict("upgrade", decide(counts["violations"], judged, 0), counts, examples)


__all__ = ["upgrade", "RELEASE_STEPS"]
