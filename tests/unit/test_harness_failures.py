"""A test that failed for the harness is no verdict: under ``--highwater-exit-codes`` (which
``highwater run``, ``sweep`` and ``bisect`` pass) a session whose failed tests all failed for
the harness exits 4, not pytest's 1 (highwater/exit_codes.py); an assertion is a verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_TESTS = """
import pytest

def test_verdict():
    assert False, "a check said no"

def test_harness():
    raise TimeoutError("timed out after 60.0s waiting until every consumer has read the records")

@pytest.fixture
def cluster():
    raise RuntimeError("the cluster did not start")

def test_setup(cluster):
    pass

@pytest.mark.xfail(strict=True, reason="a finding")
def test_finding_fixed():
    pass

def test_passes():
    pass
"""


def _pytest(tmp_path: Path, select: str, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_outcomes.py").write_text(_TESTS)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_outcomes.py", "-k", select, *options],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "select, code",
    [
        ("test_harness or test_passes", 4),  # a wait that timed out: no verdict
        ("test_setup", 4),  # a fixture that failed: the test never judged anything
        ("test_verdict or test_harness", 1),  # a verdict among them: violations
        ("test_verdict", 1),
        ("test_finding_fixed", 1),  # a strict xfail that passed: the behaviour changed
        ("test_passes", 0),
    ],
)
def test_a_session_whose_failures_are_all_the_harness_exits_4(tmp_path: Path, select: str, code: int) -> None:
    done = _pytest(tmp_path, select, "--highwater-exit-codes")
    assert done.returncode == code, done.stdout + done.stderr
    if code == 4:
        assert "failed for the harness, not for a verdict: no verdict, exit 4" in done.stdout + done.stderr


def test_without_the_option_pytests_own_codes_stand(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "test_harness")
    assert done.returncode == 1, done.stdout + done.stderr
