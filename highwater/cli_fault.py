"""``highwater fault apply KIND --target ... [--duration S]`` and ``highwater fault heal``:
poke a cluster started with ``highwater cluster up`` by hand.

``apply`` without ``--duration`` leaves the fault in place and exits; ``fault heal`` then heals
everything (it needs no memory of what was applied: it resets every proxy and revives every
node). With ``--duration`` it waits, then heals that fault; Ctrl-C heals too.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from harness.backend import ClusterBackend
from harness.backends import DEFAULT_BACKEND, get_backend
from harness.errors import ClusterError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fault", help="inject or heal faults on a cluster started with 'cluster up'")
    fsub = p.add_subparsers(dest="fault_command", metavar="ACTION", required=True)
    ap = fsub.add_parser(
        "apply",
        help="apply one fault: KIND --target SEL [options] [--duration S]",
        description="Kinds: cut timeout latency bandwidth slow_close reset_peer slicer "
        "kill stop pause restart rolling-restart. Targets: broker:<id>, node:<name>, "
        "leader:<topic>/<p>, follower-in:<rack>[@<topic>/<p>], controller, controllers, "
        "brokers, minority[:seed], bridge[:seed], rack:<rack>, clients:<rack>.",
    )
    ap.add_argument("--name", default="manual", help="the cluster (as given to 'cluster up')")
    ap.add_argument("--cluster-file", default=None, help="an external cluster (docs/external-clusters.md) instead")
    ap.add_argument("words", nargs=argparse.REMAINDER, help="KIND --target SEL [--peer SEL] [...]")
    ap.set_defaults(func=cmd_apply)
    hp = fsub.add_parser("heal", help="heal every fault: proxies reset, paused/stopped nodes back")
    hp.add_argument("--name", default="manual", help="the cluster (as given to 'cluster up')")
    hp.add_argument("--cluster-file", default=None, help="an external cluster (docs/external-clusters.md) instead")
    hp.set_defaults(func=cmd_heal)


def _attach(name: str, cluster_file: str | None = None) -> ClusterBackend:
    """A handle on the cluster ``highwater cluster up --name NAME`` keeps up, through the backend
    that started it; nodes it restarts outlive this command. With ``cluster_file``: the external
    cluster it describes (only what the file grants can be applied)."""
    if cluster_file is not None:
        from harness.config import ClusterSpec
        from harness.external import connect

        return connect(ClusterSpec(brokers=1, racks=1), None, Path(cluster_file))
    from highwater.cli_cluster import _read_state, _supervisor_alive

    state = _read_state(name)
    if not state or not _supervisor_alive(state):
        raise ClusterError(f"no cluster {name!r} is up: start one with 'highwater cluster up --name {name}'")
    entry = get_backend(state.get("backend", DEFAULT_BACKEND))
    if entry.attach is None:  # pragma: no cover - cluster up refuses such backends
        raise ClusterError(f"backend {entry.name!r} cannot be attached to")
    return entry.attach(Path(state["cluster_dir"]), None)


def cmd_apply(args: argparse.Namespace) -> int:
    from faults.inject import Injector
    from faults.spec import FaultKind, kind_help, parse_command

    if any(w in ("-h", "--help") for w in args.words):  # help for the kind named, if any
        named = [w for w in args.words if not w.startswith("-")][:1]
        print(kind_help(FaultKind.parse(named[0]) if named else None), end="")
        return 0
    command = parse_command(args.words)  # bad input fails before touching the cluster
    cluster = _attach(args.name, args.cluster_file)
    try:
        nemesis = Injector(cluster)
        fault = nemesis.apply(command.spec)
        what = ", ".join(fault.nodes) or ", ".join(sorted(lk.proxy_name for lk in fault.links))
        print(f"applied {command.spec} -> {what}")
        if command.duration is None:
            print("in place until: highwater fault heal" + (f" --name {args.name}" if args.name != "manual" else ""))
            return 0
        try:
            deadline = time.monotonic() + command.duration
            while time.monotonic() < deadline:
                time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))  # the fault's own duration
        finally:
            nemesis.heal(fault)
            print(f"healed {command.spec} after {command.duration:g}s")
        return 0
    finally:
        cluster.stop()


def cmd_heal(args: argparse.Namespace) -> int:
    from faults.inject import Injector

    cluster = _attach(args.name, args.cluster_file)
    try:
        Injector(cluster).heal_all()
        print("healed: every proxy enabled without toxics, every node running")
        return 0
    finally:
        cluster.stop()
