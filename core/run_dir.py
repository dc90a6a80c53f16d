"""The one owner of a run's folder: the names of the files a run keeps, and where they are.

A run writes ``<results>/<campaign>/<run_id>/`` (``highwater.runner``). Every module that
writes or reads a file there asks a ``RunDir`` for its path (or takes its name from here)
instead of spelling the name; ``tests/unit/test_run_dir.py`` fails on a product module that
spells one. What the folder holds, and who writes it:

- ``history.jsonl`` (``HISTORY``): the history (docs/history-format.md), written by the runner
  through ``core.history.HistoryWriter`` and flushed as events happen; the checks, the report
  and the suites read it;
- ``history.parquet`` (``HISTORY_PARQUET``): the same history as Parquet, written by no run; a
  run converted by hand (``core.history.to_parquet``) may hold one, and the report then reads it
  instead of the JSON Lines;
- ``run.json`` (``RUN_JSON``): the run manifest (``core.manifest.RunManifest``), written by the
  runner at the start and completed at the end; ``highwater.runner.record_beyond`` rewrites its
  class (``findings``); the report, replay and the hunt read it;
- ``verdict.json`` (``VERDICT_JSON``): the checks' verdicts and the run's class, what
  ``highwater check --json`` prints, written by the runner at the end (and its class by
  ``record_beyond``); the report reads it;
- ``group-measures.json`` (``GROUP_MEASURES``): a group run's measures
  (``core.checks.group_measures``), written by the runner, read by the report;
- ``power-measures.json`` (``POWER_MEASURES``): a power-loss run's measures
  (``core.checks.power_measures``), written by the runner, read by the report;
- ``tiered-measures.json`` (``TIERED_MEASURES``): a tiered run's measures (records served from
  the remote store, each tier's waits, bytes moved remote: ``core.checks.tiered_measures``),
  written by the runner, read by the report;
- ``threads.txt`` (``THREADS``): every Python thread's stack when consumers were still behind
  into settling, written by the runner;
- ``client-clocks/`` (``CLIENT_CLOCKS``): with ``RunSpec.client_clocks``, each client worker's
  faked-clock file (``<client id>/clock.rc``, ``harness.clients.clocks``), set up by the runner
  before the first worker starts and moved by clock faults on clients;
- ``logs/`` (``LOGS``): the brokers' and Toxiproxy's logs, collected by the runner when the run
  was not valid; the client libraries' own logs under ``logs/clients/`` (the runner) and a
  user's program's under ``logs/app/`` (``highwater.scenarios``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HISTORY = "history.jsonl"
HISTORY_PARQUET = "history.parquet"
RUN_JSON = "run.json"
VERDICT_JSON = "verdict.json"
GROUP_MEASURES = "group-measures.json"
POWER_MEASURES = "power-measures.json"
TIERED_MEASURES = "tiered-measures.json"
THREADS = "threads.txt"
LOGS = "logs"
CLIENT_CLOCKS = "client-clocks"

#: the files any one of which makes a folder a run's (the report looks for these)
RUN_FILES = (HISTORY, HISTORY_PARQUET, VERDICT_JSON, RUN_JSON)
#: the forms of a run's history, in the order a reader prefers them
HISTORY_FILES = (HISTORY_PARQUET, HISTORY)


@dataclass(frozen=True)
class RunDir:
    """One run's folder; each property is where that file of it is (whether or not it exists)."""

    path: Path

    @property
    def history(self) -> Path:
        return self.path / HISTORY

    @property
    def history_parquet(self) -> Path:
        return self.path / HISTORY_PARQUET

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def verdict_json(self) -> Path:
        return self.path / VERDICT_JSON

    @property
    def group_measures(self) -> Path:
        return self.path / GROUP_MEASURES

    @property
    def power_measures(self) -> Path:
        return self.path / POWER_MEASURES

    @property
    def tiered_measures(self) -> Path:
        return self.path / TIERED_MEASURES

    @property
    def threads(self) -> Path:
        return self.path / THREADS

    @property
    def logs(self) -> Path:
        return self.path / LOGS

    @property
    def client_clocks(self) -> Path:
        return self.path / CLIENT_CLOCKS
