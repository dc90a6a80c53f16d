"""No leaks: every container of ours carries its cluster's label and its owner's pid and start
time; each start removes the containers whose owner is gone (as the local backend reaps
processes, see harness.lifecycle), so a Ctrl-C or kill -9 leaves nothing past the next start."""

from __future__ import annotations

import logging
import os
from typing import Any

from highwater.harness.procs import is_zombie_or_gone, proc_start_time

log = logging.getLogger(__name__)

LABEL_CLUSTER = "highwater.cluster"
LABEL_OWNER = "highwater.owner-pid"
LABEL_OWNER_START = "highwater.owner-start"
LABEL_NODE = "highwater.node"
USER_OWNED = "user"  # a rendered file started by hand: its user removes it


def owner_labels(cluster_id: str, node: str) -> dict[str, str]:
    pid = os.getpid()
    return {
        LABEL_CLUSTER: cluster_id,
        LABEL_OWNER: str(pid),
        LABEL_OWNER_START: str(proc_start_time(pid) or 0),
        LABEL_NODE: node,
    }


def owner_alive(labels: dict[str, str]) -> bool:
    """The owner pid runs and is the same process (its start time matches, when recorded)."""
    if labels.get(LABEL_OWNER, USER_OWNED) == USER_OWNED:
        return True
    try:
        pid = int(labels[LABEL_OWNER])
    except ValueError:
        return False
    if pid <= 0 or is_zombie_or_gone(pid):
        return False
    recorded = labels.get(LABEL_OWNER_START)
    return not recorded or recorded == "0" or recorded == str(proc_start_time(pid) or 0)


def reap_dead_owners(client: Any) -> list[str]:
    """Remove (force) every container labelled by a cluster whose owner is gone; their names."""
    reaped = []
    for c in client.containers.list(all=True, filters={"label": LABEL_CLUSTER}):
        if owner_alive(c.labels):
            continue
        try:
            c.remove(force=True, v=True)
            reaped.append(c.name)
        except Exception as exc:  # noqa: BLE001 - one stuck container must not stop the others
            log.warning("could not remove stale container %s: %s", c.name, exc)
    return reaped


def remove_cluster(client: Any, cluster_id: str) -> int:
    """Remove every container of one cluster (ours: its label); how many."""
    n = 0
    for c in client.containers.list(all=True, filters={"label": f"{LABEL_CLUSTER}={cluster_id}"}):
        c.remove(force=True, v=True)
        n += 1
    return n
