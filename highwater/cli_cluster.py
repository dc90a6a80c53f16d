"""``highwater cluster up|status|down``: a cluster that outlives the command, for manual use.

``up`` starts a detached supervisor process (``cluster _serve``) that owns the cluster, holds
its locks and tears it down on SIGTERM; ``up`` returns once the cluster is ready and prints the
bootstrap addresses per client rack. ``down`` sends SIGTERM to the supervisor and waits.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from highwater.console import progress
from highwater.core.errors import ClusterError
from highwater.harness.backend import ProcessControl
from highwater.harness.backends import DEFAULT_BACKEND, BackendEntry, get_backend, start_backend
from highwater.harness.config import ClusterSpec, parse_cpus
from highwater.harness.local.cluster import check_spec
from highwater.harness.paths import home
from highwater.harness.procs import OwnerLock, ProcessRegistry, signal_and_wait, spawn
from highwater.harness.waiting import wait_until


def manual_dir() -> Path:
    d = home() / "manual"
    d.mkdir(parents=True, exist_ok=True)
    return d


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cluster",
        help="start, inspect or stop a cluster by hand",
        description="A cluster that outlives the command, for use by hand (docs/clusters.md): 'up' starts "
        "it in the background and prints its bootstrap addresses per client rack, 'status' shows it, "
        "'down' stops it. 'highwater fault apply' pokes it.",
    )
    csub = p.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    up = csub.add_parser(
        "up",
        help="start a cluster in the background",
        description="Start a cluster owned by a supervisor process in the background; returns when it is "
        "ready and prints its nodes, bootstrap servers per client rack and the Toxiproxy API. Exit 0: "
        "up, 4: refused (a bad shape, already up) or it did not start.",
    )
    add_spec_args(up)
    up.add_argument("--timeout", type=float, default=600, help="seconds to wait for readiness (setup included)")
    up.set_defaults(func=cmd_up)
    st = csub.add_parser("status", help="show running clusters")
    st.add_argument("--name", default=None, help="one cluster (default: every cluster that is up)")
    st.set_defaults(func=cmd_status)
    down = csub.add_parser("down", help="stop a cluster started with up")
    down.add_argument("--name", default="manual", help="the cluster (as given to 'cluster up')")
    down.add_argument(
        "--backend",
        default=None,
        help="the backend it was started with (optional: the cluster's state records it; 'cluster up "
        "--backend compose' is taken down the same way)",
    )
    down.set_defaults(func=cmd_down)
    serve = csub.add_parser("_serve", help=argparse.SUPPRESS)
    add_spec_args(serve)
    serve.set_defaults(func=cmd_serve)


def add_backend_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend",
        default=DEFAULT_BACKEND,
        help=f"where the cluster runs (default: {DEFAULT_BACKEND}; see harness.backend)",
    )


def add_spec_args(p: argparse.ArgumentParser) -> None:
    add_backend_arg(p)
    p.add_argument("--name", default="manual", help="name of the cluster")
    p.add_argument("--brokers", type=int, default=3, help="broker nodes")
    p.add_argument("--racks", type=int, default=3, help="racks (broker.rack), brokers dealt to them in turn")
    p.add_argument("--controllers", type=int, default=0, help="dedicated controllers (0: combined mode)")
    p.add_argument(
        "--kafka-version", default=None, help="a Kafka release from Maven Central (default: the newest stable one)"
    )
    p.add_argument("--base-port", type=int, default=None, help="the first listener port (default: a free range)")
    p.add_argument(
        "--broker-config", action="append", default=[], metavar="KEY=VALUE", help="a broker setting, repeatable"
    )
    p.add_argument(
        "--clock",
        choices=("real", "faked"),
        default="real",
        help="faked: node JVMs on libfaketime, for clock-jump and clock-drift (local backend only)",
    )
    p.add_argument(
        "--disk",
        choices=("plain", "lossy"),
        default="plain",
        help="lossy: the nodes' data directories (and a tiered cluster's remote store) on lossyfs, for the "
        "disk faults power-loss, disk-full, disk-slow and disk-fail (local backend only)",
    )
    p.add_argument(
        "--tiered",
        action="store_true",
        help="tiered storage (KIP-405, Kafka 3.6+): segments copied to a remote store, a directory of the "
        "cluster's (local backend only); a topic tiers when created with remote.storage.enable",
    )
    add_limit_args(p)


def add_limit_args(p: argparse.ArgumentParser) -> None:
    # strings, not type=float: a bad value gets our one-line error, not argparse's usage block
    p.add_argument("--broker-cpus", metavar="N", help="CPUs per node container, e.g. 1.5 (compose backend only)")
    p.add_argument(
        "--broker-memory", metavar="SIZE", help="memory per node container, e.g. 2g or 512m (compose backend only)"
    )


def cpus_from_args(args: argparse.Namespace) -> float | None:
    """``--broker-cpus`` as a number (``ClusterSpec`` validates ``--broker-memory`` itself)."""
    return None if args.broker_cpus is None else parse_cpus(args.broker_cpus)


def spec_from_args(args: argparse.Namespace) -> ClusterSpec:
    overrides = {}
    for item in args.broker_config:
        key, sep, value = item.partition("=")
        if not sep:
            raise ClusterError(f"--broker-config expects KEY=VALUE, got {item!r}")
        overrides[key] = value
    return ClusterSpec(
        brokers=args.brokers,
        racks=args.racks,
        controllers=args.controllers,
        kafka_version=args.kafka_version,
        base_port=args.base_port,
        broker_config=overrides,
        name=args.name,
        broker_cpus=cpus_from_args(args),
        broker_memory=args.broker_memory,
        clock=args.clock,
        disk=args.disk,
        tiered=args.tiered,
    )


def _forward_args(args: argparse.Namespace) -> list[str]:
    out = [
        "--backend",
        args.backend,
        "--name",
        args.name,
        "--brokers",
        str(args.brokers),
        "--racks",
        str(args.racks),
        "--controllers",
        str(args.controllers),
        "--clock",
        args.clock,
        "--disk",
        args.disk,
        *(["--tiered"] if args.tiered else []),
    ]
    if args.kafka_version:
        out += ["--kafka-version", args.kafka_version]
    if args.base_port:
        out += ["--base-port", str(args.base_port)]
    for item in args.broker_config:
        out += ["--broker-config", item]
    for flag, value in (("--broker-cpus", args.broker_cpus), ("--broker-memory", args.broker_memory)):
        if value is not None:
            out += [flag, value]
    return out


def _state_path(name: str) -> Path:
    return manual_dir() / f"{name}.json"


def _read_state(name: str) -> dict | None:
    try:
        return json.loads(_state_path(name).read_text())
    except (OSError, ValueError):
        return None


def _supervisor_alive(state: dict) -> bool:
    lock = OwnerLock(Path(state["cluster_dir"]) / "owner.lock")
    if lock.try_acquire():  # nobody holds it: the supervisor is gone
        lock.release()
        return False
    return True


def kept_up_backend(name: str) -> BackendEntry:
    """The backend ``name``, if ``cluster up`` can keep it up (``highwater fault`` attaches to
    it later); a one-line error otherwise."""
    entry = get_backend(name)
    if entry.attach is None:
        raise ClusterError(f"backend {name!r} cannot be kept up by 'highwater cluster up'")
    return entry


def cmd_up(args: argparse.Namespace) -> int:
    entry = kept_up_backend(args.backend)  # an unknown backend fails here, in one line
    spec = spec_from_args(args)  # bad values fail here, before forking
    check_spec(spec)
    entry.check_spec(spec)
    state = _read_state(args.name)
    if state and _supervisor_alive(state):
        raise ClusterError(f"cluster {args.name!r} is already up (highwater cluster down --name {args.name})")
    _state_path(args.name).unlink(missing_ok=True)
    log_path = manual_dir() / f"{args.name}.supervisor.log"
    log_path.write_text("")
    proc = spawn(
        [sys.executable, "-m", "highwater.cli", "cluster", "_serve", *_forward_args(args)],
        log_path=log_path,
        die_with_parent=False,
    )

    def ready() -> dict | None:
        if proc.poll() is not None:
            tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
            raise ClusterError("cluster failed to start: " + (" | ".join(tail) or f"exit {proc.returncode}"))
        return _read_state(args.name)

    try:
        state = wait_until(ready, args.timeout, f"cluster {args.name} is up (log: {log_path})", interval=0.5)
    except ClusterError:
        raise
    except BaseException:
        signal_and_wait(proc.pid, signal.SIGTERM, 60)
        raise
    print_state(state)
    return 0


def print_state(state: dict) -> None:
    cluster_dir = Path(state["cluster_dir"])
    cluster = json.loads((cluster_dir / "cluster.json").read_text())
    # cluster.json holds the pids of the first start; a node restarted since (a kill healed by
    # ``highwater fault``) has its new pid in the process registry
    live = {r.name: r.pid for r in ProcessRegistry(cluster_dir / "processes.json").load() if r.still_ours()}
    print(
        f"cluster {state['name']}: Kafka {cluster['kafka_version']}, supervisor pid {state['pid']}, "
        f"backend {state.get('backend', DEFAULT_BACKEND)}"
    )
    for name, node in cluster["nodes"].items():
        where = f" container={node['container']}" if "container" in node else ""
        pid = live.get(name, node["pid"])
        print(f"  {name}: node.id={node['node_id']} rack={node['rack']} role={node['role']} pid={pid}{where}")
    print("bootstrap servers per client rack (use client_rack=<rack>):")
    for rack, servers in cluster["bootstrap"].items():
        print(f"  {rack}: {','.join(servers)}")
    print(f"toxiproxy API: http://{cluster['toxiproxy']}")
    # a backend says where its logs are when they are not files in the cluster directory
    print(
        "logs: " + cluster.get("logs", f"{state['cluster_dir']}/nodes/*/node.log, {state['cluster_dir']}/toxiproxy.log")
    )


def cmd_status(args: argparse.Namespace) -> int:
    names = [args.name] if args.name else sorted(p.stem for p in manual_dir().glob("*.json"))
    running = 0
    for name in names:
        state = _read_state(name)
        if state and _supervisor_alive(state):
            print_state(state)
            running += 1
    if not running:
        print("no cluster is up")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    state = _read_state(args.name)
    if not state or not _supervisor_alive(state):
        print(f"cluster {args.name!r} is not up")
        _state_path(args.name).unlink(missing_ok=True)
        return 0
    recorded = state.get("backend", DEFAULT_BACKEND)
    if args.backend is not None and args.backend != recorded:
        raise ClusterError(f"cluster {args.name!r} runs on backend {recorded!r}, not {args.backend!r}")
    t0 = time.monotonic()
    if not signal_and_wait(int(state["pid"]), signal.SIGTERM, 120):
        raise ClusterError(f"supervisor pid {state['pid']} did not stop within 120s")
    _state_path(args.name).unlink(missing_ok=True)
    print(f"cluster {args.name} is down ({time.monotonic() - t0:.1f}s)")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """The supervisor: owns the cluster until SIGTERM/SIGINT."""

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    kept_up_backend(args.backend)
    t0 = time.monotonic()
    cluster = start_backend(args.backend, spec_from_args(args), progress)
    try:
        cluster_dir = getattr(cluster, "dir", None)  # where it keeps its state (cluster.json)
        if cluster_dir is None:
            raise ClusterError(f"backend {args.backend!r} recorded no cluster directory")
        tmp = _state_path(args.name).with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {"name": args.name, "pid": os.getpid(), "backend": args.backend, "cluster_dir": str(cluster_dir)}
            )
        )
        os.replace(tmp, _state_path(args.name))
        progress(f"cluster {args.name} ready in {time.monotonic() - t0:.1f}s")
        while not stop.wait(1.0):
            if isinstance(cluster, ProcessControl):
                dead = [n.name for n in cluster.nodes.values() if n.state.value == "running" and not n.is_alive()]
                if dead:
                    progress(f"nodes exited unexpectedly: {dead}")
    finally:
        cluster.stop()
        progress("cluster stopped")
    return 0
