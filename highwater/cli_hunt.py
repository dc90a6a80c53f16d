"""``highwater hunt``: seeded exploration until the budget is spent, a new violation shrunk to the
smallest schedule that still shows it (``highwater.hunt``, docs/hunting.md).

Refused in one line before any cluster starts: an unknown workload, a run too short for one
fault window and the calm tail, a budget of neither runs nor minutes, a release that cannot be
assembled or a client that cannot be installed (``highwater.preflight``). Exit status
(``highwater.exit_codes``): 0 nothing new found, 1 a new violation (known findings do not count),
4 a refusal or a harness error, 130 interrupted (``hunt.json`` says how far it got).

``--master URL`` spreads the hunt over Spark as lanes, each a hunt of its own on every N-th seed
(``highwater.hunt_spread``); the same exit statuses, over all the lanes.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from highwater.console import progress
from highwater.harness.clients import DEFAULT_CLIENT, client_names
from highwater.harness.distribution import default_version
from highwater.hunt import HUNT_FILE, Hunter, HuntSettings, lane_file
from highwater.hunt_draw import WORKLOADS, HuntError, HuntSpace
from highwater.hunt_spread import exit_of, hunt_spread
from highwater.preflight import preflight, split_versions
from highwater.progress import add_progress_arg
from highwater.pytest_runs import shard_spec
from highwater.sweep_cells import Master, checked_master


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hunt",
        help="seeded exploration over releases, clients, workloads, settings and every fault kind; "
        "a new violation is shrunk to the smallest schedule that still shows it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--kafka-version",
        action="append",
        default=None,
        metavar="V",
        help="the Kafka release(s) drawn from, repeatable or comma-separated "
        "(default: $HIGHWATER_KAFKA_VERSION, else the newest stable release)",
    )
    p.add_argument(
        "--client",
        default=DEFAULT_CLIENT,
        help=f"the client(s) drawn from, comma-separated, each NAME[==VERSION] (default: {DEFAULT_CLIENT}; "
        f"known: {', '.join(client_names())})",
    )
    p.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help="the workloads drawn from, comma-separated",
    )
    p.add_argument("--runs", type=int, default=None, help="stop after this many drawn runs")
    p.add_argument("--minutes", type=float, default=None, help="stop after this many minutes (a run is not cut)")
    p.add_argument("--seed", type=int, default=1, help="the first run's seed; run i plays seed+i")
    p.add_argument("--seconds", type=float, default=90.0, help="a drawn run's workload length, in seconds")
    p.add_argument(
        "--tries", type=int, default=3, help="shrinking: runs of a candidate before its failure counts as gone"
    )
    p.add_argument("--shrink-runs", type=int, default=24, help="shrinking: at most this many runs a violation")
    p.add_argument("--no-shrink", action="store_true", help="report new violations without shrinking them")
    p.add_argument(
        "--second-client",
        default=None,
        help="the client that plays a shrunk schedule again (default: another of --client, if any; '' for none)",
    )
    p.add_argument("--disk", default="plain", choices=["plain", "lossy"], help="lossy: disk faults are drawn too")
    p.add_argument("--clock", default="real", choices=["real", "faked"], help="faked: clock faults are drawn too")
    p.add_argument("--campaign", default=None, help="campaign name (default: hunt-<timestamp>)")
    p.add_argument("--results", default="results", help="where the hunt's runs and hunt.json are written")
    p.add_argument(
        "--master",
        default=None,
        metavar="URL",
        help="spread the hunt over Spark as lanes: local[N] (this machine) or spark://HOST:PORT "
        "(docs/hunting.md); the results path must be shared by every worker",
    )
    p.add_argument(
        "--lanes",
        type=int,
        default=None,
        help="with --master: how many hunts play side by side, each on seeds of its own "
        "(default: N of local[N], else 2)",
    )
    p.add_argument("--lane", type=shard_spec, default=None, help=argparse.SUPPRESS)  # one lane of a spread hunt
    p.add_argument("--test-plant", default=None, help=argparse.SUPPRESS)  # highwater's own tests
    add_progress_arg(p)
    p.set_defaults(func=cmd_hunt)


def settings_of(args: argparse.Namespace, releases: list[str]) -> HuntSettings:
    """The hunt the arguments ask for; ``HuntError`` (one line) for a bad one."""
    if args.runs is None and args.minutes is None:
        raise HuntError("a hunt needs a budget: --runs N or --minutes M (or both: the first reached ends it)")
    if (args.runs is not None and args.runs < 1) or (args.minutes is not None and args.minutes <= 0):
        raise HuntError("--runs and --minutes must be positive")
    if args.tries < 1:
        raise HuntError("--tries must be at least 1")
    clients = tuple(c.strip() for c in args.client.split(",") if c.strip())
    workloads = tuple(w.strip() for w in args.workloads.split(",") if w.strip())
    space = HuntSpace(tuple(releases), clients, workloads, float(args.seconds))
    return HuntSettings(
        space=space,
        seed=args.seed,
        runs=args.runs,
        minutes=args.minutes,
        results=Path(args.results),
        campaign=args.campaign or f"hunt-{time.strftime('%Y%m%dT%H%M%S')}",
        tries=args.tries,
        shrink=not args.no_shrink,
        shrink_runs=args.shrink_runs,
        second_client=args.second_client,
        disk=args.disk,
        clock=args.clock,
        plant=args.test_plant,
        lane=args.lane,
    )


def lanes_for(args: argparse.Namespace, master: Master) -> int:
    """How many lanes a spread hunt plays: ``--lanes``, else N of ``local[N]`` (the machine's cores
    for ``local[*]``), else 2; ``HuntError`` (one line) for a bad count or a lane given too."""
    if args.lane is not None:
        raise HuntError("--lane is a spread hunt's own option; give --master and --lanes instead")
    if args.lanes is not None:
        if args.lanes < 1:
            raise HuntError("--lanes must be at least 1")
        return int(args.lanes)
    m = re.fullmatch(r"local\[(\*|\d+)(,\d+)?\]", master.url)
    if m is None:
        return 1 if master.url == "local" else 2
    return (os.cpu_count() or 1) if m.group(1) == "*" else int(m.group(1))


def cmd_hunt(args: argparse.Namespace) -> int:
    releases = split_versions(args.kafka_version or [os.environ.get("HIGHWATER_KAFKA_VERSION", "")])
    settings = settings_of(args, releases or [default_version(progress)])
    if args.master is None and args.lanes is not None:
        raise HuntError("--lanes spreads a hunt over Spark: give --master too")
    master = checked_master(args.master, args.results)
    lanes = lanes_for(args, master) if master is not None else None
    space = settings.space
    preflight(space.releases, space.clients, backend="local", progress=progress)
    progress(
        f"hunt {settings.campaign}: Kafka {', '.join(space.releases)}; {', '.join(space.clients)}; "
        f"{', '.join(space.workloads)}; {space.seconds:g} s runs from seed {settings.seed}; budget "
        + " or ".join(
            b
            for b in (
                f"{settings.runs} run(s)" if settings.runs else "",
                f"{settings.minutes:g} min" if settings.minutes else "",
            )
            if b
        )
    )
    if master is not None and lanes is not None:
        return hunt_spread(settings, master, lanes, progress, os.getcwd())
    report = Hunter(settings, progress).run()
    progress(report.line())
    print(settings.results / settings.campaign / lane_file(HUNT_FILE, settings.lane), flush=True)
    return exit_of(report, ())  # one hunt: the lanes' rule with no lane
