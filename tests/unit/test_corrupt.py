"""The corruption faults' file operations (``faults.corrupt``) on files made here: what they pick,
what they change, and their one-line refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from highwater.faults.common import FaultError
from highwater.faults.corrupt import flip_bits, pick_file, truncate_file


def _segment(root: Path, name: str, data: bytes, mtime: int) -> Path:
    path = root / "t-0" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, ns=(mtime, mtime))
    return path


def test_the_newest_matching_file_is_picked(tmp_path: Path) -> None:
    _segment(tmp_path, "00000000000000000000.log", b"old", 1_000)
    newest = _segment(tmp_path, "00000000000000000100.log", b"new", 2_000)
    _segment(tmp_path, "00000000000000000100.index", b"", 3_000)  # empty: never picked
    assert pick_file(tmp_path, "t-0/*") == newest
    assert pick_file(tmp_path, "t-0/*.log") == newest


def test_a_glob_matching_nothing_or_leaving_the_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FaultError, match="matches no non-empty file"):
        pick_file(tmp_path, "t-9/*.log")
    for outside in ("../*", "/etc/passwd"):
        with pytest.raises(FaultError, match="inside the node's data directory"):
            pick_file(tmp_path, outside)


def test_truncate_cuts_the_tail_and_says_how_much(tmp_path: Path) -> None:
    seg = _segment(tmp_path, "0.log", bytes(range(100)), 1)
    done = truncate_file(tmp_path, "t-0/*.log", 30)
    assert (done.file, done.size_before, done.size_after) == ("t-0/0.log", 100, 70)
    assert seg.read_bytes() == bytes(range(70))
    assert truncate_file(tmp_path, "t-0/*.log", 1000).size_after == 0, "at most the whole file"


def test_flip_bits_flips_exactly_the_recorded_bits_and_the_seed_repeats_them(tmp_path: Path) -> None:
    original = bytes(64)
    seg = _segment(tmp_path, "0.log", original, 1)
    done = flip_bits(tmp_path, "t-0/*.log", 5, seed=7, skip_bytes=16)
    assert len(done.flipped) == 5 and all(p >= 16 * 8 for p in done.flipped)
    changed = seg.read_bytes()
    diff = [i * 8 + b for i in range(64) for b in range(8) if (changed[i] ^ original[i]) >> b & 1]
    assert diff == list(done.flipped)
    seg.write_bytes(original)
    assert flip_bits(tmp_path, "t-0/*.log", 5, seed=7, skip_bytes=16).flipped == done.flipped
    with pytest.raises(FaultError, match="nothing past"):
        flip_bits(tmp_path, "t-0/*.log", 1, seed=1, skip_bytes=64)


def test_the_corruption_kinds_parse_with_a_file_glob_and_render_back() -> None:
    from highwater.faults.spec import FaultKind, parse_command, parse_fault

    spec = parse_fault("truncate-file --target leader:t/0 --file 't-0/*.log' --bytes 100")
    assert spec.kind is FaultKind.TRUNCATE_FILE and spec.param("file") == "t-0/*.log" and spec.param("bytes") == 100
    assert parse_fault(str(spec)) == spec
    flips = parse_command("flip-bits --target broker:2 --count 3 --seed 9 --duration 5")
    assert dict(flips.spec.params) == {"file": "*-0/*.log", "count": 3, "skip_bytes": 0, "seed": 9, "clean": False}
    for bad, why in (
        ("truncate-file --target broker:1 --file ''", "expects text"),
        ("truncate-file --target broker:1 --bytes 0", "must be >= 1"),
        ("flip-bits --target broker:1 --peer broker:2", "takes no --peer"),
    ):
        with pytest.raises(FaultError, match=why):
            parse_fault(bad)


def test_a_backend_without_the_nodes_files_refuses_corruption_in_one_line() -> None:
    from highwater.faults.capability import CapabilityError, check_capabilities
    from highwater.faults.spec import FaultKind
    from highwater.harness.compose.backend import ComposeCluster
    from highwater.harness.config import ClusterSpec

    compose = ComposeCluster(ClusterSpec(brokers=3, racks=3))  # not started: nothing runs
    with pytest.raises(CapabilityError, match="^fault 'flip-bits' needs data file access, which backend 'compose'"):
        check_capabilities(compose, [FaultKind.FLIP_BITS])
