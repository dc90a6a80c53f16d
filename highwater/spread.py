"""``highwater sweep --master URL``: the sweep's cells (release x client x suite) spread over a
Spark cluster's task slots (``highwater.spark_sweep``), recorded cell by cell in the campaign's
``sweep.cells.json`` as each finishes, so the same command resumes an interrupted sweep."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .exit_codes import Exit
from .pytest_runs import Shard, locate
from .spark_sweep import spread
from .sweep import ReleaseOutcome, SweepState, load_or_start, summary_lines
from .sweep_cells import CellResult, CellSettings, Master, done_line, expand_tests, plan_cells, refused_cells, status_of

CELLS_STATE_FILE = "sweep.cells.json"


def cells_state_file(shard: Shard | None) -> str:
    """The spread sweep's state file in its campaign (one per shard, as a local sweep's)."""
    if shard is None:
        return CELLS_STATE_FILE
    return CELLS_STATE_FILE.replace(".json", f".shard-{shard.index}-of-{shard.total}.json")


def sweep_spread(
    *,
    master: Master,
    settings: CellSettings,
    state_path: Path,
    plan: dict[str, object],
    versions: Sequence[str],
    kafka_of: Callable[[str], Sequence[str]],
    clients_of: Callable[[str], str],
    tests: Sequence[str],
    summary: str,
    say: Callable[[str], None],
    upgrade_from_of: Callable[[str], str | None] = lambda _version: None,
) -> int:
    """Run the sweep's pending cells through Spark; exit 0 when every cell has an outcome (the
    summary says which), 130 when some are left pending (interrupted)."""
    refused = refused_cells(dict(os.environ))
    cells = plan_cells(versions, kafka_of, clients_of, expand_tests(tests, locate), refused, upgrade_from_of)
    keys = [c.key for c in cells]
    state = load_or_start(state_path, {**plan, "cells": "release x client x suite"}, keys)
    state.releases = keys  # the same plan names the same cells; outcomes of others are dropped
    state.outcomes = {k: o for k, o in state.outcomes.items() if k in keys}
    todo = [c for c in cells if c.key not in state.outcomes]
    say(f"sweep {settings.campaign}: {summary}, {len(cells)} cells, {len(todo)} to run through Spark {master.url}")
    started = time.monotonic()
    finished: list[CellResult] = []

    def done(result: CellResult) -> None:
        finished.append(result)
        status = status_of(result.code)
        if status is not None:  # an interrupted cell stays pending
            state.outcomes[result.key] = ReleaseOutcome(
                result.key, status, result.code, result.seconds, result.reason, result.attempts
            )
            state.save(state_path)
        say(done_line(result, len(finished), len(todo), time.monotonic() - started))

    try:
        spread(todo, settings, master, say, done)
    except KeyboardInterrupt:
        say("sweep interrupted; run the same command again to run the cells left")
        _print_summary(state, settings)
        return Exit.INTERRUPTED
    _print_summary(state, settings)
    return Exit.OK if not state.pending() else Exit.INTERRUPTED


def _print_summary(state: SweepState, settings: CellSettings) -> None:
    for line in summary_lines(state):
        print(line)
    print(f"report: highwater report {settings.campaign_dir()}")
