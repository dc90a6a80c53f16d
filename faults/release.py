"""Release steps: a roll of nodes onto another Kafka release, and a feature finalization.

``roll --target SELECTOR --release B [--interval S]`` restarts the target's nodes one at a time on
release B, in the order Kafka's upgrade notes give: nodes that are only controllers, then nodes
that are both, then nodes that are only brokers (a scenario names another order by rolling one
selector at a time). Each node is stopped cleanly (a controlled shutdown), started on B on the
same data (a node already on B is left alone), and waited for before the next: a controller
(combined or not) until, as a voter, it has caught up with the quorum's leader since its restart
(DescribeQuorum); a broker until it is registered and unfenced and every partition's ISR is
whole again. The ISR wait gives up after :data:`ISR_BACK_S` (under another fault it may never be whole): the step
records ``isr_whole: false`` for that node and goes on. Then ``interval`` seconds of calm.

``finalize --target controller [--feature F] [--level N]`` finalizes KRaft feature F
(``metadata.version`` by default) at level N through UpdateFeatures to the active controller;
level 0 means the newest level every broker supports (what ``kafka-features upgrade
--release-version`` of the newest release does). It returns once every broker reports the level.

What a step observes before and after (``Observer.cluster_record``: the cluster id, each topic's
id and partition count, each finalized feature level) goes into its history event
(``observed``), with each node's release before and after (``releases``); the ``upgrade`` check
(``core.checks.upgrade``) judges them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from highwater.core.errors import WaitTimeout
from highwater.core.versions import exact_release
from highwater.faults.common import FaultError
from highwater.faults.spec import NEWEST_LEVEL
from highwater.harness.backend import ClusterBackend, ProcessControl, ReleaseControl
from highwater.harness.observe import Observer
from highwater.harness.topology import Role, Topology
from highwater.harness.waiting import wait_until

log = logging.getLogger(__name__)

#: how long a rolled broker's partitions may take to be whole again before the roll goes on
ISR_BACK_S = 60.0
#: how long a rolled node may take to catch up with the quorum (controller) or register (broker)
NODE_BACK_S = 90.0

#: the order of a roll: Kafka's upgrade notes roll controllers before brokers
_ROLE_ORDER = {Role.CONTROLLER: 0, Role.COMBINED: 1, Role.BROKER: 2}

#: the release an upgrade starts on unless told (``--upgrade-from``): of the last 3.x line (Kafka 4.x
#: upgrades directly from any 3.3.x through 3.9.x)
DEFAULT_UPGRADE_FROM = "3.9.1"
#: the first release with production KRaft: no road of ours starts or ends before it
KRAFT_SINCE = (3, 3, 1)


def path_refusal(start: str, to: str) -> str | None:
    """Why the upgrade path ``start`` -> ``to`` cannot be run (one line), or None: both must be
    exact releases from :data:`KRAFT_SINCE` on, and ``to`` newer than ``start``."""
    a, b = exact_release(start), exact_release(to)
    if a is None or b is None:
        return f"upgrade path {start} -> {to}: releases are MAJOR.MINOR.PATCH, e.g. 3.9.1 -> 4.4.0"
    if min(a, b) < KRAFT_SINCE:
        since = ".".join(map(str, KRAFT_SINCE))
        return f"upgrade path {start} -> {to}: both ends must be KRaft releases, {since} or newer"
    if b <= a:
        return f"upgrade path {start} -> {to}: {to} is not newer than {start} (a roll back is a roll step, not a path)"
    return None


#: the newest production ``metadata.version`` level of each release line (Kafka's
#: ``MetadataVersion`` at each line's releases): a node of the line cannot run a cluster that has
#: finalized a higher one (a controller halts on the FeatureLevelRecord; a broker-only node is
#: refused registration, UNSUPPORTED_VERSION, and waits forever)
NEWEST_METADATA_LEVEL = {
    (3, 3): 7,
    (3, 4): 8,
    (3, 5): 11,
    (3, 6): 14,
    (3, 7): 19,
    (3, 8): 20,
    (3, 9): 21,
    (4, 0): 25,
    (4, 1): 27,
    (4, 2): 29,
    (4, 3): 30,
    (4, 4): 33,
}


def rollback_refusal(release: str, finalized: int) -> str | None:
    """Why no node can be rolled onto ``release`` while the cluster has finalized
    ``metadata.version`` level ``finalized`` (one line), or None (also for a line this table
    does not know yet: the node's own refusal then says it)."""
    release_tuple = exact_release(release)
    newest = NEWEST_METADATA_LEVEL.get(release_tuple[:2]) if release_tuple else None
    if newest is None or finalized <= newest:
        return None
    return (
        f"roll onto Kafka {release} refused: the cluster has finalized metadata.version {finalized}, and "
        f"{release} runs {newest} at most (a roll back is possible only before finalizing)"
    )


def roll_order(topo: Topology, names: Sequence[str]) -> list[str]:
    """``names`` in the order a roll takes them: controllers only, then combined nodes, then
    brokers only; by node id within each."""
    nodes = [topo.node(n) for n in names]
    return [n.name for n in sorted(nodes, key=lambda n: (_ROLE_ORDER[n.role], n.node_id))]


def _observe(cluster: ClusterBackend) -> dict[str, Any]:
    return wait_until(lambda: cluster.observer().cluster_record(), 30, "the cluster describes itself")


def _wait_back(cluster: ClusterBackend, name: str, since_ms: int) -> bool:
    """Until node ``name``, restarted at ``since_ms`` (epoch ms), is back (module doc): as a
    controller, caught up with the quorum's leader since then; as a broker, registered and
    unfenced. Then whether every partition's ISR is whole again (brokers only)."""
    node = cluster.topo.node(name)
    if node.is_controller:
        wait_until(
            lambda: cluster.observer().voter_caught_up(node.node_id, since_ms),
            NODE_BACK_S,
            f"controller {name} has caught up with the KRaft quorum",
        )
    if not node.is_broker:
        return True
    cluster.wait_for_brokers(NODE_BACK_S, ids=[node.node_id])
    try:
        wait_until(lambda: not cluster.observer().under_replicated(), ISR_BACK_S, f"every ISR is whole after {name}")
    except WaitTimeout as exc:
        log.warning("rolling on: %s", exc)
        return False
    return True


def _crash_and_start(cluster: ClusterBackend, name: str, after: float) -> None:
    """SIGKILL node ``name`` ``after`` seconds into its start, then start it again."""
    if not isinstance(cluster, ProcessControl):  # every backend with ReleaseControl has it
        raise FaultError(f"backend {getattr(cluster, 'backend_name', '?')!r} cannot kill a node mid-start")
    time.sleep(after)  # the moment of the crash, not a synchronisation wait
    node = cluster.node(name)
    node.kill()
    node.start()


def roll(
    cluster: ClusterBackend,
    names: Sequence[str],
    release: str,
    interval: float,
    record: dict[str, Any],
    crash_after: float = 0.0,
) -> None:
    """Restart ``names`` on ``release``, one at a time (module doc). ``record`` gets
    ``releases`` ({node: {"from", "to", "isr_whole", "back_s"}}) as each node is done, and
    ``observed`` ({"before", "after"}), so a roll that fails halfway says how far it got.
    ``crash_after`` > 0: each node is SIGKILLed that many seconds after it starts on the
    release (mid-start: log recovery, registration, catching up), then started again."""
    if not isinstance(cluster, ReleaseControl):  # refused before the run (faults.capability)
        raise FaultError(f"backend {getattr(cluster, 'backend_name', '?')!r} cannot start a node on another release")
    order = roll_order(cluster.topo, names)
    seen = _observe(cluster)
    record["observed"] = {"before": seen}
    refused = rollback_refusal(release, int(seen["features"].get("metadata.version", 0)))
    if refused:  # before any node goes down
        raise FaultError(refused)
    releases: dict[str, dict[str, Any]] = record.setdefault("releases", {})
    rolled = 0
    for name in order:
        was = cluster.release_of(name)
        if was == release:
            releases[name] = {"from": was, "to": release, "skipped": "already on it"}
            continue
        if rolled:
            time.sleep(interval)  # a schedule gap between nodes, not a synchronisation wait
        rolled += 1
        t0, since_ms = time.monotonic(), int(time.time() * 1000)
        cluster.restart_on(name, release)
        step: dict[str, Any] = {"from": was, "to": release}
        if crash_after > 0:
            _crash_and_start(cluster, name, crash_after)
            step["crashed_after_s"] = crash_after
        step["isr_whole"] = _wait_back(cluster, name, since_ms)
        step["back_s"] = round(time.monotonic() - t0, 3)
        releases[name] = step
        log.info("rolled %s from Kafka %s to %s in %.1fs", name, was, release, step["back_s"])
    record["observed"]["after"] = _observe(cluster)


def newest_level(observer: Observer, feature: str) -> int:
    """The newest level of ``feature`` every broker supports; one clear error if one does not."""
    levels = observer.supported_levels(feature)
    if not levels:
        raise FaultError(f"no broker answered which {feature} levels it supports")
    level = min(levels.values())
    if level <= 0:
        lacking = sorted(b for b, v in levels.items() if v <= 0)
        raise FaultError(f"broker(s) {lacking} do not support feature {feature}")
    return level


def finalize(cluster: ClusterBackend, feature: str, level: int, record: dict[str, Any]) -> None:
    """Finalize ``feature`` at ``level`` (0: ``newest_level``); ``record`` gets ``finalized``
    ({"feature", "asked", "from", "to"}) and ``observed`` ({"before", "after"})."""
    observer = cluster.observer()
    record["observed"] = {"before": _observe(cluster)}
    target = newest_level(observer, feature) if level == NEWEST_LEVEL else level
    was = observer.feature_level(feature)
    record["finalized"] = {"feature": feature, "asked": target, "from": was}
    observer.set_feature_level(feature, target)
    record["finalized"]["to"] = observer.feature_level(feature)
    record["observed"]["after"] = _observe(cluster)
