"""``highwater fault apply KIND --target ... [--duration S]`` and ``highwater fault heal``:
poke a cluster started with ``highwater cluster up`` by hand.

``apply`` without ``--duration`` leaves the fault in place and exits; ``fault heal`` then heals
everything (it needs no memory of what was applied: it resets every proxy and revives every
node). With ``--duration`` it waits, then heals that fault; Ctrl-C heals too.

``highwater fault apply KIND --help`` says what the kind does (``KIND_SUMMARY``) and its options,
each with its unit and default (``faults.spec.kind_help``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from highwater.core.errors import ClusterError
from highwater.faults.spec import FaultKind, kind_help
from highwater.harness.backend import ClusterBackend
from highwater.harness.backends import DEFAULT_BACKEND, get_backend

#: what each fault kind does, one line (``fault apply KIND --help``; faults/spec.py says more)
KIND_SUMMARY: dict[FaultKind, str] = {
    FaultKind.CUT: "disable the proxies of the target's links: open connections closed, new ones refused",
    FaultKind.TIMEOUT: "stop the bytes on the target's links, connections held open (half-open)",
    FaultKind.LATENCY: "delay the bytes on the target's links",
    FaultKind.BANDWIDTH: "limit the target's links to a rate",
    FaultKind.SLOW_CLOSE: "delay the closing of the target's connections",
    FaultKind.RESET_PEER: "reset the target's connections (TCP RST), after a timeout",
    FaultKind.SLICER: "slice the bytes on the target's links into small, delayed pieces",
    FaultKind.KILL: "SIGKILL the target's node processes; restarted on heal",
    FaultKind.STOP: "stop the target's nodes cleanly (SIGTERM); restarted on heal",
    FaultKind.PAUSE: "SIGSTOP the target's node processes; SIGCONT on heal",
    FaultKind.RESTART: "restart the target's nodes at once (SIGKILL, or SIGTERM with --clean)",
    FaultKind.ROLLING_RESTART: "restart the target's nodes one after the other, --interval seconds apart",
    FaultKind.CLIENT_KILL: "SIGKILL the target clients' workers; the workload starts them again on heal",
    FaultKind.CLIENT_FREEZE: "SIGSTOP the target clients' workers (a long GC pause); SIGCONT on heal",
    FaultKind.CLIENT_RESTART: "SIGKILL the target clients' workers and start them again at once",
    FaultKind.POWER_LOSS: "kill the target's nodes and drop what their disks had not fsynced (lossyfs)",
    FaultKind.DISK_FULL: "make the target's disks refuse writes (ENOSPC) until healed (lossyfs)",
    FaultKind.DISK_SLOW: "delay each write and fsync of the target's disks (lossyfs)",
    FaultKind.DISK_FAIL: "fail every open, read, write and fsync of the tiered remote store with EIO (--target store)",
    FaultKind.CLOCK_JUMP: "jump the wall clock of the target's JVMs by --offset seconds (libfaketime)",
    FaultKind.CLOCK_DRIFT: "make the wall clock of the target's JVMs gain or lose --rate ms per second",
    FaultKind.TRUNCATE_FILE: "kill (or stop) the node, cut bytes off the end of its newest matching data file",
    FaultKind.FLIP_BITS: "kill (or stop) the node, flip bits in its newest matching data file",
    FaultKind.ROLL: "restart the target's nodes one at a time on Kafka --release, controllers first (an upgrade)",
    FaultKind.FINALIZE: "finalize --feature (metadata.version) at --level (0: the newest all brokers support)",
}

TARGETS = (
    "broker:<id>, node:<name>, leader:<topic>/<p>, follower-in:<rack>[@<topic>/<p>], controller, "
    "controllers, brokers, minority[:seed], bridge[:seed], rack:<rack>, clients:<rack>; client faults: "
    "client:<id>, consumers[:<rack>], producers, group:<group id>"
)


def kind_text(kind: FaultKind) -> str:
    """``highwater fault apply KIND --help``: the usage line, what the kind does, its options."""
    usage, _, rest = kind_help(kind).partition("\n")
    summary = KIND_SUMMARY.get(kind, "")
    return f"{usage}\n{kind.cli}: {summary}\n{rest}" if summary else f"{usage}\n{rest}"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fault",
        help="inject or heal faults on a cluster started with 'cluster up'",
        description="Apply one fault to a cluster kept up by 'highwater cluster up' (or an external "
        "cluster), or heal every fault. 'highwater fault apply KIND --help' says a kind's options.",
    )
    fsub = p.add_subparsers(dest="fault_command", metavar="ACTION", required=True, title="actions")
    kinds = "\n".join(f"  {k.cli:<16} {KIND_SUMMARY.get(k, '')}" for k in FaultKind)
    ap = fsub.add_parser(
        "apply",
        help="apply one fault: KIND --target SEL [options] [--duration S]",
        description="Apply one fault: highwater fault apply KIND --target SELECTOR [options] [--duration S].\n"
        "'highwater fault apply KIND --help' lists the kind's options and their defaults.\n\n"
        f"kinds:\n{kinds}\n\ntargets: {TARGETS}",
    )
    ap.add_argument("--name", default="manual", help="the cluster (as given to 'cluster up')")
    ap.add_argument("--cluster-file", default=None, help="an external cluster (docs/external-clusters.md) instead")
    ap.add_argument(
        "words", nargs=argparse.REMAINDER, help="KIND --target SEL [--peer SEL] [...] (KIND --help: its options)"
    )
    ap.set_defaults(func=cmd_apply)
    hp = fsub.add_parser(
        "heal",
        help="heal every fault: proxies reset, paused/stopped nodes back",
        description="Heal every fault on the cluster: every proxy enabled without toxics, every node "
        "running, disks and clocks back to normal. Needs no memory of what was applied.",
    )
    hp.add_argument("--name", default="manual", help="the cluster (as given to 'cluster up')")
    hp.add_argument("--cluster-file", default=None, help="an external cluster (docs/external-clusters.md) instead")
    hp.set_defaults(func=cmd_heal)


def _attach(name: str, cluster_file: str | None = None) -> ClusterBackend:
    """A handle on the cluster ``highwater cluster up --name NAME`` keeps up, through the backend
    that started it; nodes it restarts outlive this command. With ``cluster_file``: the external
    cluster it describes (only what the file grants can be applied)."""
    if cluster_file is not None:
        from highwater.harness.config import ClusterSpec
        from highwater.harness.external import connect

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
    from highwater.faults.inject import Injector
    from highwater.faults.spec import parse_command

    if any(w in ("-h", "--help") for w in args.words):  # help for the kind named, if any
        named = [w for w in args.words if not w.startswith("-")][:1]
        print(kind_text(FaultKind.parse(named[0])) if named else kind_help(None), end="")
        return 0
    command = parse_command(args.words)  # bad input fails before touching the cluster
    cluster = _attach(args.name, args.cluster_file)
    try:
        nemesis = Injector(cluster)
        fault = nemesis.apply(command.spec)
        what = ", ".join(fault.nodes) or ", ".join(sorted(lk.proxy_name for lk in fault.links))
        print(f"applied {command.spec} -> {what}")
        if command.spec.kind.heals_itself:
            for name, step in sorted((fault.release.get("releases") or {}).items()):
                print(
                    f"  {name}: Kafka {step['from']} -> {step['to']}"
                    + (f" ({step['skipped']})" if "skipped" in step else "")
                )
            if "finalized" in fault.release:
                f = fault.release["finalized"]
                print(f"  {f['feature']}: {f['from']} -> {f['to']}")
            print("done: nothing to heal")
            return 0
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
    from highwater.faults.inject import Injector

    cluster = _attach(args.name, args.cluster_file)
    try:
        Injector(cluster).heal_all()
        print("healed: every proxy enabled without toxics, every node running")
        return 0
    finally:
        cluster.stop()
