"""``--shard I/N`` (issue 32): the split is a partition of the collected tests, the same in every
shard, balanced, and keeps the tests that share a run together; a bad spec is one line before
anything starts, from the plugin and from ``highwater run``/``campaign`` alike."""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from highwater import cli
from highwater.exit_codes import Exit
from highwater.pytest_runs import PytestRun, Shard, partition, shard_spec

# -- the spec -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, shard", [("1/1", Shard(1, 1)), ("2/4", Shard(2, 4)), (" 4 / 4 ", Shard(4, 4))])
def test_a_spec_is_i_of_n(text: str, shard: Shard) -> None:
    assert shard_spec(text) == shard
    assert str(shard) == f"{shard.index}/{shard.total}"


@pytest.mark.parametrize("text", ["0/3", "4/3", "a/b", "1/0", "0/0", "-1/3", "1", "1/2/3", "", "1/3x", "2.0/4"])
def test_a_bad_spec_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="I/N"):
        shard_spec(text)


# -- the split ------------------------------------------------------------------------------------

ids = st.lists(st.text(alphabet="abcdefgh/:[]-_.", min_size=1, max_size=12), unique=True, max_size=80)


@given(ids, st.integers(min_value=1, max_value=9))
def test_tests_of_their_own_split_into_a_balanced_partition(keys: list[str], total: int) -> None:
    shards = partition(keys, total)
    assert len(shards) == len(keys) and set(shards) <= set(range(1, total + 1))  # each test in one shard
    sizes = Counter(shards)
    counts = [sizes.get(i, 0) for i in range(1, total + 1)]
    assert max(counts) - min(counts) <= 1  # balanced within one
    assert sum(counts) == len(keys)


@given(ids, st.integers(min_value=1, max_value=9), st.randoms(use_true_random=False))
def test_the_split_depends_on_the_ids_not_their_order(keys: list[str], total: int, rnd: random.Random) -> None:
    shuffled = list(keys)
    rnd.shuffle(shuffled)
    first = dict(zip(keys, partition(keys, total)))
    assert dict(zip(shuffled, partition(shuffled, total))) == first
    assert dict(zip(keys, partition(keys, total))) == first  # and again: deterministic


@given(st.lists(st.sampled_from("abcdefghij"), max_size=60), st.integers(min_value=1, max_value=6))
def test_a_group_stays_in_one_shard(keys: list[str], total: int) -> None:
    shards = partition(keys, total)
    where = {k: {s for kk, s in zip(keys, shards) if kk == k} for k in keys}
    assert all(len(s) == 1 for s in where.values())
    counts = Counter(shards)
    loads = [counts.get(i, 0) for i in range(1, total + 1)]
    largest = max(Counter(keys).values(), default=0)
    assert max(loads) - min(loads) <= largest  # balanced within the largest group


def test_partition_refuses_no_shards() -> None:
    with pytest.raises(ValueError):
        partition(["a"], 0)


def test_the_child_pytest_is_given_the_shard() -> None:
    argv = PytestRun(tests=["suites/chaos"], campaign="c", shard=Shard(3, 4)).argv()
    assert argv[argv.index("--shard") + 1] == "3/4"
    assert "--shard" not in PytestRun(tests=["suites/chaos"], campaign="c").argv()


# -- the CLI ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "campaign"])
@pytest.mark.parametrize("spec", ["0/3", "4/3", "a/b"])
def test_the_cli_refuses_a_bad_spec_in_one_line(
    command: str, spec: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("highwater.cli_run.PytestRun.call", lambda self: pytest.fail("pytest started"))
    with pytest.raises(SystemExit) as exc:
        cli.main([command, "--shard", spec, "--campaign", "c"])
    assert exc.value.code == Exit.USAGE
    err = capsys.readouterr().err
    assert re.search(rf"^highwater {command}: error: argument --shard: '{re.escape(spec)}'.*I/N", err, re.MULTILINE)


@pytest.mark.parametrize("command", ["run", "campaign"])
def test_the_cli_wants_a_campaign_for_every_shard(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("highwater.cli_run.PytestRun.call", lambda self: pytest.fail("pytest started"))
    assert cli.main([command, "--shard", "1/2"]) == Exit.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"highwater {command}: error: --shard needs --campaign NAME, the same for every shard (they all write into that campaign)"
    ]


def test_the_cli_passes_the_shard_to_its_child_pytest(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def call(self: PytestRun) -> int:
        seen.append(self.argv())
        return 0

    monkeypatch.setattr("highwater.cli_run.PytestRun.call", call)
    monkeypatch.setattr("highwater.cli_run.preflight", lambda *a, **k: None)
    code = cli.main(["run", "--shard", "2/3", "--campaign", "c", "--results", str(tmp_path), "suites/conformance"])
    assert code == Exit.OK
    argv = seen[0]
    assert argv[argv.index("--shard") + 1] == "2/3" and argv[argv.index("--campaign") + 1] == "c"


# -- the plugin, in a child pytest on a tiny test file -----------------------------------------------

TESTS = """
import pytest

SCENARIOS = ["a", "b", "c"]


@pytest.mark.client_rotation("scenario", SCENARIOS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_safety(scenario):
    pass


@pytest.mark.client_rotation("scenario", SCENARIOS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_liveness(scenario):
    pass


@pytest.mark.shared_run("case")
@pytest.mark.parametrize("case", ["x", "y"])
def test_case_one(case):
    pass


@pytest.mark.shared_run("case")
@pytest.mark.parametrize("case", ["y", "x"])
def test_case_two(case):
    pass


@pytest.mark.parametrize("n", range(7))
def test_alone(n):
    pass
"""


def _pytest(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--strict-markers", *args],
        cwd=tmp_path,  # outside this repository: the plugin as a user's project loads it
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(p: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=180)
    return p.returncode, out, err


def _collected(out: str) -> list[str]:
    return [line for line in out.splitlines() if "::" in line and not line.startswith("highwater:")]


def test_the_shards_of_a_session_partition_its_tests(tmp_path: Path) -> None:
    (tmp_path / "test_tiny.py").write_text(TESTS)
    total = 3
    procs = [_pytest(tmp_path, "--collect-only", "-q", "test_tiny.py")]
    procs += [_pytest(tmp_path, "--collect-only", "-q", "--shard", f"{i}/{total}", "test_tiny.py") for i in range(1, 4)]
    procs.append(_pytest(tmp_path, "-q", "--shard", f"2/{total}", "test_tiny.py"))
    (code, out, err), *shards, run = [_finish(p) for p in procs]
    assert code == 0, out + err
    every = _collected(out)
    assert len(every) == 17
    kept = []
    for i, (c, o, e) in enumerate(shards, 1):
        assert c == 0, o + e
        kept.append(_collected(o))
        assert f"highwater: shard {i}/{total}: {len(kept[-1])} of 17 tests" in o
    assert sorted(sum(kept, [])) == sorted(every)  # every test in exactly one shard
    # the two tests judging one scenario's run share a shard, and so do shared_run's
    for scenario in "abc":
        assert len({i for i, k in enumerate(kept) if any(t.endswith(f"[{scenario}]") and "test_" in t for t in k)}) == 1
    for case in "xy":
        assert len({i for i, k in enumerate(kept) if f"test_tiny.py::test_case_one[{case}]" in k}) == 1
        assert {i for i, k in enumerate(kept) if f"test_tiny.py::test_case_one[{case}]" in k} == {
            i for i, k in enumerate(kept) if f"test_tiny.py::test_case_two[{case}]" in k
        }
    sizes = [len(k) for k in kept]
    assert max(sizes) - min(sizes) <= 2  # within the largest group
    c, o, e = run
    assert c == 0, o + e
    assert re.search(rf"{len(kept[1])} passed, {17 - len(kept[1])} deselected", o), o


def test_a_bad_spec_is_pytests_usage_error_and_an_empty_shard_passes(tmp_path: Path) -> None:
    (tmp_path / "test_tiny.py").write_text(TESTS)
    bad = [_pytest(tmp_path, "-q", "--shard", spec, "test_tiny.py") for spec in ("0/3", "4/3", "a/b")]
    # 17 tests in 12 groups over 13 shards: the 13th has none
    empty = _pytest(tmp_path, "-q", "--shard", "13/13", "test_tiny.py")
    nothing = _pytest(tmp_path, "-q", "--shard", "1/2", "-k", "no_such_test", "test_tiny.py")
    for p in bad:
        code, out, err = _finish(p)
        assert code == pytest.ExitCode.USAGE_ERROR, out + err
        assert "passed" not in out
        assert len([line for line in err.splitlines() if "argument --shard" in line]) == 1, err
    code, out, err = _finish(empty)
    assert code == 0, out + err
    assert "highwater: shard 13/13: 0 of 17 tests" in out
    code, out, err = _finish(nothing)  # nothing collected at all stays pytest's "no tests"
    assert code == pytest.ExitCode.NO_TESTS_COLLECTED, out + err


def test_a_child_pytest_killed_by_a_signal_is_named_with_where_its_runs_are(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from highwater import pytest_runs

    monkeypatch.setattr(pytest_runs.subprocess, "call", lambda argv: -9)
    code = pytest_runs.PytestRun(["suites/chaos"], campaign="c1", results="res").call()
    assert code == -9
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        "highwater: error: the suites' pytest was killed by SIGKILL; the runs it began, their histories as far "
        "as they got, are under res/c1"
    )
    assert pytest_runs.signal_name(9) == "SIGKILL" and pytest_runs.signal_name(999) == "signal 999"


@given(
    st.lists(st.tuples(st.sampled_from("abcdefghij"), st.integers(min_value=1, max_value=300)), max_size=40),
    st.integers(min_value=1, max_value=6),
)
def test_weighted_groups_stay_together_and_the_heaviest_shard_is_within_one_group_of_the_lightest(
    tests: list[tuple[str, int]], total: int
) -> None:
    keys, weights = [k for k, _ in tests], [float(w) for _, w in tests]
    shards = partition(keys, total, weights)
    assert all(len({s for k2, s in zip(keys, shards) if k2 == k}) == 1 for k in set(keys))
    group = {k: max(w for k2, w in zip(keys, weights) if k2 == k) for k in set(keys)}
    load = [sum(w for k, w in group.items() if shards[keys.index(k)] == i) for i in range(1, total + 1)]
    assert max(load) - min(load) <= max(group.values(), default=0.0)


def test_a_weight_per_key_is_required() -> None:
    with pytest.raises(ValueError, match="2 weights for 3 keys"):
        partition(["a", "b", "c"], 2, [1.0, 2.0])
