"""``highwater hunt --master URL``: a hunt spread over a Spark cluster's task slots as lanes.

Lane I of N is a whole ``highwater hunt`` of its own (``--lane I/N``) on whichever machine runs
its task (``highwater.spark_sweep``, as a sweep's cells): it draws the seeds ``seed + I - 1``,
then every N-th, so no seed is played by two lanes, and every run is still reachable from its
seed alone. Each lane starts its own clusters, shrinks
what it finds on them, and writes the runs into the one campaign (a shared path, as a sweep's)
with a record and a findings draft of its own (``hunt.lane-I-of-N.json``,
``findings-draft.lane-I-of-N.toml``); the driver merges them into ``hunt.json`` and
``findings-draft.toml`` when the lanes are done, so ``highwater report`` and a person read one
hunt. A lane's own output is ``<campaign>/cells/lane-I-of-N.log``.

A budget of runs is split between the lanes (lane I plays the runs whose index is I - 1 modulo
N); a budget of minutes is every lane's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .exit_codes import Exit
from .hunt import DRAFT_FILE, HUNT_FILE, HuntedRun, HuntReport, HuntSettings, lane_file, write_json
from .hunt_draw import HuntError
from .pytest_runs import Shard
from .spark_sweep import spread
from .sweep_cells import CellResult, CellSettings, Master, done_line


@dataclass(frozen=True)
class HuntLane:
    """One lane of a spread hunt, as a Spark task (``spark_sweep.Task``): the lane, the hunt's
    releases (set up on the executor first) and the ``highwater hunt`` options every lane
    shares (``lane_options``)."""

    lane: Shard
    releases: tuple[str, ...]
    options: tuple[str, ...]
    runs: int | None = None
    #: a lane is not attempted again after a harness error: it would play its seeds again into
    #: the same campaign
    max_attempts: int = 1

    @property
    def key(self) -> str:
        return f"hunt lane {self.lane}"

    def slug(self) -> str:
        return f"lane-{self.lane.index}-of-{self.lane.total}"

    def argv(self, python: str, settings: CellSettings, attempt: int) -> list[str]:
        """The lane's ``highwater hunt``, into the hunt's campaign (an attempt after a harness
        error plays the lane again from its first seed)."""
        argv = [python, "-m", "highwater.cli", "hunt", *self.options, "--lane", str(self.lane)]
        argv += ["--campaign", settings.campaign, "--results", settings.results, "--progress", "plain"]
        return argv + (["--runs", str(self.runs)] if self.runs is not None else [])


def lane_runs(runs: int | None, lane: Shard) -> int | None:
    """Lane ``lane``'s share of a budget of ``runs``: the run indexes ``lane.index - 1`` modulo
    ``lane.total`` (None: no budget of runs)."""
    if runs is None:
        return None
    return len(range(lane.index - 1, runs, lane.total))


def lane_options(s: HuntSettings) -> tuple[str, ...]:
    """The ``highwater hunt`` options of ``s`` that every lane shares (not its campaign, runs or
    lane, which each lane's command adds)."""
    space = s.space
    out = ["--kafka-version", ",".join(space.releases), "--client", ",".join(space.clients)]
    out += ["--workloads", ",".join(space.workloads), "--seconds", repr(space.seconds), "--seed", str(s.seed)]
    out += ["--tries", str(s.tries), "--shrink-runs", str(s.shrink_runs), "--disk", s.disk, "--clock", s.clock]
    if s.minutes is not None:
        out += ["--minutes", repr(s.minutes)]
    if not s.shrink:
        out.append("--no-shrink")
    if s.second_client is not None:
        out += ["--second-client", s.second_client]
    if s.plant:
        out += ["--test-plant", s.plant]
    return tuple(out)


def lanes_of(s: HuntSettings, count: int) -> list[HuntLane]:
    """The ``count`` lanes of hunt ``s``; a lane whose share of a runs budget is nothing is left out."""
    options = lane_options(s)
    lanes = [Shard(i, count) for i in range(1, count + 1)]
    out = [HuntLane(lane, s.space.releases, options, lane_runs(s.runs, lane)) for lane in lanes]
    return [lane for lane in out if lane.runs is None or lane.runs > 0]


def merge_lanes(s: HuntSettings, out: Path, lanes: Sequence[HuntLane]) -> HuntReport:
    """The lanes' records as one hunt (runs by seed), written to ``hunt.json``, and their drafts
    appended to ``findings-draft.toml``. A lane that wrote no record (it failed before its first
    run), or one that cannot be read, is listed under ``refused`` with its log; the others merge."""
    report = HuntReport(s)
    for lane in lanes:
        path = out / lane_file(HUNT_FILE, lane.lane)
        if not path.is_file():
            report.refused.append({"lane": str(lane.lane), "why": "wrote no record", "log": f"cells/{lane.slug()}.log"})
            continue
        try:
            data = _read_json(path)
            runs = [HuntedRun.from_json(r) for r in data.get("runs") or []]
            refused = [{"lane": str(lane.lane), **r} for r in data.get("refused") or []]
        except (OSError, ValueError, AttributeError, TypeError, HuntError) as exc:
            why = f"{path.name}: not a hunt's record: {exc}"
            report.refused.append({"lane": str(lane.lane), "why": why, "log": f"cells/{lane.slug()}.log"})
            continue
        report.runs += runs
        report.refused += refused
        draft = out / lane_file(DRAFT_FILE, lane.lane)
        if draft.is_file():
            with (out / DRAFT_FILE).open("a", encoding="utf-8") as f:
                f.write(draft.read_text(encoding="utf-8"))
    report.runs.sort(key=lambda r: r.draw.seed)
    write_json(out / HUNT_FILE, {**report.to_json(), "lanes": len(lanes)})
    return report


def _read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def exit_of(report: HuntReport, results: Sequence[CellResult]) -> int:
    """A new violation in any lane: 1; else a lane interrupted: 130; else a lane that ended in
    a harness error or a refusal, or a run a harness error ended: 4; else 0."""
    if report.new:
        return Exit.VIOLATIONS
    codes = {r.code for r in results}
    if Exit.INTERRUPTED in codes:
        return Exit.INTERRUPTED
    if any(c not in (Exit.OK, Exit.VIOLATIONS) for c in codes) or report.errors:
        return Exit.HARNESS
    return Exit.OK


def hunt_spread(s: HuntSettings, master: Master, lanes: int, say: Callable[[str], None], cwd: str | None) -> int:
    """Play hunt ``s`` as ``lanes`` lanes through Spark ``master``; merge them; the exit status
    (``exit_of``). Ctrl-C stops the lanes; what they played is merged all the same."""
    settings = CellSettings(campaign=s.campaign, results=str(s.results.resolve()), cwd=cwd)
    tasks = lanes_of(s, lanes)
    say(f"hunt {s.campaign}: {len(tasks)} lane(s) through Spark {master.url}")
    finished: list[CellResult] = []
    started = time.monotonic()

    def done(result: CellResult) -> None:
        finished.append(result)
        say(done_line(result, len(finished), len(tasks), time.monotonic() - started))

    interrupted = False
    try:
        spread(tasks, settings, master, say, done, command="hunt")
    except KeyboardInterrupt:
        interrupted = True
        say("hunt interrupted; merging what the lanes played")
    report = merge_lanes(s, settings.campaign_dir(), tasks)
    say(report.line())
    print(settings.campaign_dir() / HUNT_FILE, flush=True)
    code = exit_of(report, finished)
    return Exit.INTERRUPTED if interrupted and code == Exit.OK else code
