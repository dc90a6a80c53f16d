"""The per-run cache of Spark results: a hit only for the same history file and the same code;
anything else (changed file, changed code, unreadable entry, cache disabled) is a miss."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from highwater.reports import run_cache
from highwater.reports.layout import RunInfo
from highwater.reports.run_cache import RunCache


def _run(tmp_path: Path) -> RunInfo:
    d = tmp_path / "results" / "camp" / "r1"
    d.mkdir(parents=True)
    (d / "history.parquet").write_bytes(b"PAR1 pretend")
    return RunInfo(key=0, campaign="camp", run_id="r1", path=d, parquet=d / "history.parquet")


def test_hit_after_put(tmp_path: Path) -> None:
    run, rc = _run(tmp_path), RunCache(tmp_path / "cache")
    assert rc.get(run, "checks") is None
    rc.put(run, "checks", {"poll-skip": {"valid": True}})
    assert rc.get(run, "checks") == {"poll-skip": {"valid": True}}
    assert rc.get(run, "fetch") is None  # parts are separate entries


def test_changed_history_is_a_miss(tmp_path: Path) -> None:
    run, rc = _run(tmp_path), RunCache(tmp_path / "cache")
    rc.put(run, "checks", {"x": 1})
    st = run.parquet.stat()  # type: ignore[union-attr]
    os.utime(run.parquet, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # type: ignore[arg-type]
    assert rc.get(run, "checks") is None
    rc.put(run, "checks", {"x": 2})
    run.parquet.write_bytes(b"PAR1 another length")  # type: ignore[union-attr]
    os.utime(run.parquet, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # type: ignore[arg-type]
    assert rc.get(run, "checks") is None  # same mtime, other size


def test_changed_code_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, rc = _run(tmp_path), RunCache(tmp_path / "cache")
    rc.put(run, "checks", {"x": 1})
    monkeypatch.setattr(run_cache, "code_digest", lambda: "other-code")
    assert rc.get(run, "checks") is None


def test_unreadable_entry_is_a_miss_and_is_replaced(tmp_path: Path) -> None:
    run, rc = _run(tmp_path), RunCache(tmp_path / "cache")
    rc.put(run, "checks", {"x": 1})
    entry = tmp_path / "cache" / "camp" / "r1.checks.json"
    entry.write_text('{"key": ')  # a torn write from some older tool
    assert rc.get(run, "checks") is None
    rc.put(run, "checks", {"x": 3})
    assert rc.get(run, "checks") == {"x": 3}
    assert sorted(p.name for p in entry.parent.iterdir()) == ["r1.checks.json"]  # no temp left


def test_disabled_cache_reads_nothing_but_refreshes(tmp_path: Path) -> None:
    run = _run(tmp_path)
    RunCache(tmp_path / "cache").put(run, "checks", {"x": 1})
    off = RunCache(tmp_path / "cache", enabled=False)
    assert off.get(run, "checks") is None
    off.put(run, "checks", {"x": 2})
    assert RunCache(tmp_path / "cache").get(run, "checks") == {"x": 2}


def test_run_without_history_is_never_cached(tmp_path: Path) -> None:
    rc = RunCache(tmp_path / "cache")
    run = RunInfo(key=1, campaign="c", run_id="crashed", path=tmp_path)
    rc.put(run, "checks", {"x": 1})
    assert rc.get(run, "checks") is None
    assert not (tmp_path / "cache").exists()


def test_code_digest_covers_the_spark_modules() -> None:
    d = run_cache.code_digest()
    assert len(d) == 16 and d == run_cache.code_digest()
    assert {"spark_checks.py", "timelines.py"} <= set(run_cache._SOURCES)
