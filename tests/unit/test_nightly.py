"""The nightly marks: each says why and how long; every nightly test is in one of ``.ci/run``'s
slices and each slice fits its budget; docs/contributing.md's table is the marks' own."""

from __future__ import annotations

import pytest

from highwater.pytest_runs import partition
from tests.nightly import CONTRIBUTING, NightlyTest, ci_slices, collect, section, table

#: what one slice may take by its marks' seconds: .ci/run's 50 minutes less make test's ~35, less
#: the clusters' starts and the slice's report
SLICE_BUDGET_SECONDS = 720


@pytest.fixture(scope="module")
def nightly_tests() -> list[NightlyTest]:
    return collect()


def test_every_nightly_test_says_why_and_how_long(nightly_tests: list[NightlyTest]) -> None:
    assert len(nightly_tests) > 20
    assert [t.nodeid for t in nightly_tests if len(t.reason) < 20 or t.seconds <= 0] == []


def test_every_slice_of_ci_fits_its_budget_and_together_they_hold_every_test(nightly_tests: list[NightlyTest]) -> None:
    total = ci_slices()
    shards = partition([t.group for t in nightly_tests], total, [t.seconds for t in nightly_tests])
    assert set(shards) == set(range(1, total + 1))
    for shard in range(1, total + 1):
        groups: dict[str, float] = {}
        for test, s in zip(nightly_tests, shards):
            if s == shard:
                groups[test.group] = max(groups.get(test.group, 0.0), test.seconds)
        assert sum(groups.values()) <= SLICE_BUDGET_SECONDS, (shard, groups)


def test_contributing_lists_the_nightly_tests_as_marked(nightly_tests: list[NightlyTest]) -> None:
    assert section(CONTRIBUTING.read_text()) == table(nightly_tests), "run: .venv/bin/python -m tests.nightly"
