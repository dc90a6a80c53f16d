"""Per-run results of the Spark passes, kept between reports.

A campaign store only grows: tonight's report covers every earlier campaign too (the trends
need them), but only tonight's runs are new. Spark's per-run results (the poll-skip and
lost-write verdicts, records per serving replica, the timeline) depend on nothing but the
run's history and the code that computed them, so each is stored next to the converted
histories and reused while both are unchanged. Aggregation across runs (matrix, trends,
failures, disagreements with the Python checks) is always recomputed.

An entry is valid only when its ``key`` matches exactly: the history file (resolved path,
size, modification time in ns) and a digest of the modules that compute the results, so
changed code never serves stale verdicts. Anything unreadable is a miss, never an error:
the cost of a miss is recomputation, the cost of a wrong hit would be a wrong verdict.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from highwater.reports.layout import RunInfo

log = logging.getLogger(__name__)

FORMAT = "highwater.report-cache/1"
#: the modules whose code decides the cached values
_SOURCES = ("spark_checks.py", "timelines.py", "run_cache.py")


@lru_cache(maxsize=1)
def code_digest() -> str:
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _SOURCES:
        h.update(name.encode())
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]


class RunCache:
    """``<root>/<campaign>/<run_id>.<part>.json`` per run and part ("checks", "fetch",
    "timeline"). ``enabled=False`` reads nothing but still writes, so a forced fresh
    report refreshes the cache."""

    def __init__(self, root: Path, enabled: bool = True):
        self.root = root
        self.enabled = enabled

    @staticmethod
    def key(run: RunInfo) -> dict[str, Any] | None:
        if run.parquet is None:
            return None
        try:
            p = run.parquet.resolve()
            st = p.stat()
        except OSError:
            return None
        return {
            "format": FORMAT,
            "code": code_digest(),
            "history": str(p),
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
        }

    def _path(self, run: RunInfo, part: str) -> Path:
        return self.root / run.campaign / f"{run.run_id}.{part}.json"

    def get(self, run: RunInfo, part: str) -> Any | None:
        """The cached value, or None on any miss (absent, stale, unreadable)."""
        if not self.enabled:
            return None
        key = self.key(run)
        if key is None:
            return None
        try:
            entry = json.loads(self._path(run, part).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("report cache entry for %s (%s) unreadable, recomputing: %s", run.label, part, e)
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        return entry.get("value")

    def put(self, run: RunInfo, part: str, value: Any) -> None:
        """Store atomically (a killed report leaves either the old entry or the new one)."""
        key = self.key(run)
        if key is None:
            return
        path = self._path(run, part)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"key": key, "value": value}, default=str), encoding="utf-8")
        os.replace(tmp, path)
