"""What ``highwater bisect`` prints for a write-up, and the client versions it refuses up front."""

from __future__ import annotations

import pytest

from highwater.bisect import BisectError, BisectResult, Probe, report_lines
from highwater.cli_sweep import check_driven


def test_report_names_the_versions_probed_the_runs_and_the_minutes() -> None:
    span = ["2.16.1", "2.14.2", "2.12.2", "2.10.1", "2.8.2", "2.6.1"]
    result = BisectResult(
        last_good="2.10.1",
        first_bad="2.8.2",
        between_unknown=[],
        probes=[
            Probe("2.16.1", 2, 0),
            Probe("2.6.1", 2, 2),
            Probe("2.12.2", 2, 0),
            Probe("2.10.1", 2, 0),
            Probe("2.8.2", 2, 1),
        ],
    )
    lines = report_lines(result, 2, span, 30 * 60 + 6)
    assert lines[0] == "first release with the bad verdict: 2.8.2 (last good: 2.10.1)"
    # probed in the order of the search span, not of the probing
    assert lines[-1] == "probed 5 of 6 versions (2.16.1, 2.12.2, 2.10.1, 2.8.2, 2.6.1), 10 runs in 30.1 min"


def test_report_without_span_is_unchanged() -> None:
    result = BisectResult("a", "b", [], [Probe("a", 1, 0), Probe("b", 1, 1)])
    assert not any(line.startswith("probed") for line in report_lines(result, 1))


@pytest.mark.parametrize(
    ("name", "ends", "refused"),
    [
        ("confluent-kafka", ["2.1.0", "2.16.1"], None),
        ("confluent-kafka", ["2.0.2", "2.16.1"], "2.0.2"),
        ("java", ["3.3.1", "4.4.0"], None),
        ("java", ["4.4.0", "3.2.3"], "3.2.3"),
        ("kafka-python", ["3.0.0", "3.0.12"], None),
        ("kafka-python", ["3.0.12", "2.3.3"], "2.3.3"),
        ("franz-go", ["1.19.0", "1.22.3"], None),
        ("franz-go", ["1.22.3", "1.18.1"], "1.18.1"),
    ],
)
def test_client_versions_older_than_the_driver_are_refused_before_any_run(
    name: str, ends: list[str], refused: str | None
) -> None:
    if refused is None:
        check_driven(name, ends)
    else:
        with pytest.raises(BisectError, match=f"{name} {refused} is older than its driver supports"):
            check_driven(name, ends)
