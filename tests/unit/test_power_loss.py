"""The power-loss suite's pure parts: the ``replicas:`` selector, the policy's power-loss rule, the
ELR refusal, the measures a run writes (``core.checks.power_measures``) and the report's table
(``reports.power``). No cluster."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from highwater.core.checks import TIMED_CHECKS, run_checks
from highwater.core.checks.power_measures import power_measures
from highwater.core.policy import allowed
from highwater.core.run_dir import POWER_MEASURES
from highwater.faults.common import FaultError
from highwater.faults.target import ReplicasTarget, parse_target
from highwater.harness.features import elr_refusal
from highwater.reports.layout import RunInfo
from highwater.reports.power import power_rows
from highwater.run_spec import RunSpec
from tests.synth.histories import HistoryBuilder
from tests.unit import fault_topology


class View:
    """A live cluster's answers: partition t/0 led by 2, replicas 3, 1, 2."""

    def leader(self, topic: str, partition: int) -> int | None:
        return 2

    def replicas(self, topic: str, partition: int) -> Sequence[int]:
        return [3, 1, 2]

    def active_controller(self) -> int | None:
        return 1

    def coordinator(self, key_type: str, key: str) -> int | None:
        return 1


def test_replicas_selector_parses_and_takes_the_leader_first() -> None:
    topo = fault_topology.topo(brokers=3, racks=3)
    assert parse_target("replicas:t/0") == ReplicasTarget("t", 0)
    assert str(parse_target("replicas:t/0:2")) == "replicas:t/0:2"
    assert parse_target("replicas:t/0:2").resolve(topo, View()) == {"kafka-2", "kafka-1"}
    assert parse_target("replicas:t/0").resolve(topo, View()) == {"kafka-1", "kafka-2", "kafka-3"}
    assert parse_target("replicas:t/0:1").resolve(topo, View()) == {"kafka-2"}
    with pytest.raises(FaultError, match="has 3"):
        parse_target("replicas:t/0:4").resolve(topo, View())
    for bad in ("replicas:t", "replicas:t/0:0", "replicas:t/x"):
        with pytest.raises(FaultError, match="malformed"):
            parse_target(bad)


def test_the_policy_allows_loss_only_from_min_insync_replicas_lost_at_once() -> None:
    base = {"acks": "all", "min_insync_replicas": 2}
    for check in ("lost-write", "uncommitted-read", "hw-regression"):
        assert allowed(check, base) is None
        assert allowed(check, {**base, "power_loss_replicas": 1}) is None, "one replica's page cache: no excuse"
        assert "power loss took 2 replicas" in (allowed(check, {**base, "power_loss_replicas": 2}) or "")
    assert allowed("poll-skip", {**base, "power_loss_replicas": 3}) is None, "a skip is never allowed"


@pytest.mark.parametrize("check", TIMED_CHECKS)
def test_the_timed_checks_are_allowed_only_when_the_power_loss_took_the_controller_quorum(check: str) -> None:
    base = {"acks": "all", "min_insync_replicas": 2, "power_loss_replicas": 2}
    assert "2 of the 3 KRaft controller voters" in (
        allowed(check, {**base, "controller_voters": 3, "controller_voters_lost": 2}) or ""
    )
    assert "3 of the 5" in (allowed(check, {**base, "controller_voters": 5, "controller_voters_lost": 3}) or "")
    # look-alikes: a minority of the voters, half of an even quorum, dedicated controllers (none lost)
    assert allowed(check, {**base, "controller_voters": 3, "controller_voters_lost": 1}) is None
    assert allowed(check, {**base, "controller_voters": 4, "controller_voters_lost": 2}) is None
    assert allowed(check, base) is None


def test_a_safety_check_is_never_allowed_by_the_lost_quorum() -> None:
    lost = {"acks": "all", "min_insync_replicas": 2, "controller_voters": 3, "controller_voters_lost": 3}
    for check in ("poll-skip", "nonmonotonic-poll", "truncation-undetected", "inconsistent-offsets", "unseen"):
        assert allowed(check, lost) is None, check


@pytest.mark.parametrize(
    ("replicas", "controllers", "header"),
    [
        (2, 0, {"controller_voters": 3, "controller_voters_lost": 2}),
        (3, 0, {"controller_voters": 3, "controller_voters_lost": 3}),
        (1, 0, {"controller_voters": 3, "controller_voters_lost": 1}),
        (2, 3, {}),  # dedicated controllers: a broker's power loss takes no voter
        (0, 0, {}),  # no power loss
    ],
)
def test_the_header_counts_the_voters_a_power_loss_takes(replicas: int, controllers: int, header: dict) -> None:
    assert RunSpec(suite="power-loss", scenario="s", power_loss_replicas=replicas).quorum_loss(3, controllers) == header


def test_asking_for_elr_on_a_release_without_it_is_refused_in_one_line() -> None:
    assert elr_refusal("4.4.0", True) is None and elr_refusal("3.9.1", False) is None
    refusal = elr_refusal("3.9.1", True) or ""
    assert "Kafka 3.9.1 has no eligible leader replicas" in refusal and "\n" not in refusal


def _history(*, back: bool, lost: bool, power_loss: bool = True) -> HistoryBuilder:
    """Partition 0 written every 100 ms for 2 s; a power loss of kafka-1 at 1 s, healed at 1.5 s;
    with ``back=False`` no write is acknowledged after the power loss, with ``lost`` the final log
    misses the last acknowledged record."""
    b = HistoryBuilder({"power_loss_replicas": 2, "eligible_leader_replicas": 1}, step_ms=0)
    b.meta("t", 0, leader=1, isr=[1, 2, 3], hw=0, epoch=0)
    acked: list[str] = []
    for i in range(20):
        if i == 10 and power_loss:
            b.event(
                "nemesis",
                "ok",
                "fault",
                {"kind": "power_loss", "targets": ["kafka-1"], "params": {}, "lost": {"kafka-1": {"bytes": 512}}},
            )
        if i == 15 and power_loss:
            b.event("nemesis", "ok", "heal", {"kind": "power_loss", "targets": ["kafka-1"], "params": {}})
        if back or i < 10 or not power_loss:
            b.send("producer-0", "t", 0, f"v{len(acked)}", offset=len(acked))
            acked.append(f"v{len(acked)}")
        b.advance(100 if i not in (10, 11, 12) else 400 if back else 100)
    kept = acked[:-1] if lost else acked
    b.final("t", 0, 2, len(kept), list(enumerate(kept)))
    return b


def test_power_measures_count_the_loss_and_the_longest_gap() -> None:
    h = _history(back=True, lost=True).data()
    m = power_measures(h, run_checks(h))
    assert m is not None
    assert (m.power_loss_replicas, m.eligible_leader_replicas, m.lost_bytes) == (2, 1, 512)
    assert m.acked_lost == 1, "the last acknowledged record is in no final log"
    assert [u.partition for u in m.unavailable] == [0]
    assert m.longest_unavailable_ms is not None and m.longest_unavailable_ms >= 400


def test_a_partition_that_never_takes_a_write_again_is_never_back() -> None:
    h = _history(back=False, lost=False).data()
    m = power_measures(h, run_checks(h))
    assert m is not None and m.acked_lost == 0
    assert m.unavailable[0].unavailable_ms is None and m.longest_unavailable_ms is None


def test_no_power_loss_no_measures_and_unknown_is_not_zero() -> None:
    h = _history(back=True, lost=False, power_loss=False).data()
    assert power_measures(h, run_checks(h)) is None
    h = _history(back=True, lost=False).data()
    unknown = [v.with_(valid=None) if v.check == "lost-write" else v for v in run_checks(h)]
    m = power_measures(h, unknown)
    assert m is not None and m.acked_lost is None


def test_the_lost_bytes_come_from_the_fault_events_of_a_written_history(tmp_path: Path) -> None:
    from highwater.core.checks import load

    path = _history(back=True, lost=False).write(tmp_path / "history.jsonl")
    h = load(path)
    m = power_measures(h, run_checks(h))
    assert m is not None and m.lost_bytes == 512


def _run_dir(tmp_path: Path, name: str, measures: dict[str, Any]) -> RunInfo:
    d = tmp_path / name
    d.mkdir()
    (d / POWER_MEASURES).write_text(json.dumps(measures))
    return RunInfo(
        0, "c", name, d, suite="power-loss", scenario=name.split("@")[0], kafka_version="4.4.0", client="java"
    )


def _measures(replicas: int, lost: int | None, gap: int | None) -> dict[str, Any]:
    return {
        "power_loss_replicas": replicas,
        "min_insync_replicas": 2,
        "eligible_leader_replicas": 1,
        "unclean_leader_election": False,
        "acked_lost": lost,
        "served_vanished": 0,
        "lost_bytes": 100,
        "unavailable": [{"targets": ["kafka-1"], "topic": "t", "partition": 0, "unavailable_ms": gap}],
    }


def test_the_report_table_keeps_the_worst_run_and_what_kafka_promises(tmp_path: Path) -> None:
    runs = [
        _run_dir(tmp_path, "leader@1", _measures(1, 0, 4000)),
        _run_dir(tmp_path, "leader@2", _measures(1, 2, 5000)),
        _run_dir(tmp_path, "all@1", _measures(3, 40, None)),
        _run_dir(tmp_path, "all@2", _measures(3, None, 100)),
    ]
    rows = {r["scenario"]: r for r in power_rows(runs)}
    leader, every = rows["power-loss/leader"], rows["power-loss/all"]
    assert (leader["runs"], leader["promised"], leader["acked_lost"], leader["longest_unavailable_ms"]) == (
        2,
        True,
        2,
        5000,
    )
    assert every["promised"] is False and every["acked_lost"] is None, "an unjudged run makes the row unknown"
    assert every["longest_unavailable_ms"] is None, "a partition never back in one run"


def test_the_html_table_marks_a_broken_promise(tmp_path: Path) -> None:
    from highwater.reports.render_html import _power

    rows = power_rows([_run_dir(tmp_path, "leader@1", _measures(1, 2, 4000))])
    html = _power(type("D", (), {"power": rows})())
    assert "power-table" in html and "<td class='v-false'>2</td>" in html and "no loss" in html
