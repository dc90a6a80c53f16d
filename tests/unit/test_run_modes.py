"""The run modes (``highwater.modes``): which a spec chooses, and what each adds to the runner's
phases 2 and 3 (``runner._prepare`` on a fake cluster: the topics, group configs, features, the
header's config and promised inputs), so a mode's move between modules changes none of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from highwater.core.manifest import NemesisRecord
from highwater.core.run_dir import RunDir
from highwater.harness.client_common import TopicPartition
from highwater.harness.workload import ConsumerWorker
from highwater.harness.workload.base import ConsumersGone, Worker
from highwater.harness.workload.transactions import TransactionsUnsupported
from highwater.modes import run_modes
from highwater.modes.copy import Copy
from highwater.modes.group import Group
from highwater.modes.plain import Assign, PlainProducers
from highwater.modes.share import Share
from highwater.modes.transactional import Transactional
from highwater.run_spec import RunSpec
from highwater.runner import _prepare
from tests.unit.test_backend import FakeBackend


class _Observer:
    def __init__(self, calls: list[tuple[Any, ...]]) -> None:
        self.calls = calls

    def set_group_config(self, group: str, configs: dict[str, str]) -> None:
        self.calls.append(("group-config", group, sorted(configs)))

    def feature_level(self, feature: str) -> int:
        return 1

    def set_feature_level(self, feature: str, level: int) -> None:
        self.calls.append(("feature", feature, level))


class _Cluster(FakeBackend):
    """A fake that takes topics and group configs, on a release with transaction.version."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, ...]] = []

    @property
    def kafka_version(self) -> str:
        return "4.3.1"

    def observer(self, rack: str | None = None) -> Any:
        return _Observer(self.calls)

    def create_topic(self, name: str, partitions: int = 1, *args: Any, **kw: Any) -> None:
        self.calls.append(("topic", name))


WORKLOADS: dict[str, dict[str, Any]] = {
    "plain": {},
    "group": {"consumer_mode": "subscribe", "group_protocol": "consumer", "session_timeout_ms": 6000},
    "transactional": {"transactional": True, "consumer_mode": "subscribe"},
    "copy": {"transactional": True, "copiers": 2},
    "share": {"consumer_mode": "share"},
}


@pytest.mark.parametrize(
    ("workload", "parts"),
    [
        ("plain", [Assign, PlainProducers]),
        ("group", [Group, PlainProducers]),
        ("transactional", [Group, Transactional]),
        ("copy", [Assign, Transactional, Copy]),
        ("share", [Share, PlainProducers]),
    ],
)
def test_a_spec_chooses_a_reader_a_writer_and_a_copy(workload: str, parts: list[type]) -> None:
    modes = run_modes(RunSpec(suite="u", scenario="x", **WORKLOADS[workload]), _Cluster())
    assert [type(m) for m in modes.parts] == parts
    assert modes.writes_transactions is (workload in ("transactional", "copy"))


def _prepared(workload: str, tmp_path: Path) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    cluster = _Cluster()
    spec = RunSpec(suite="u", scenario="x", topic="t", results_root=tmp_path, **WORKLOADS[workload])
    run = _prepare(cluster, spec, run_modes(spec, cluster), NemesisRecord("none"), "client")
    run.history.close()
    header = json.loads(RunDir(run.out).history.read_text(encoding="utf-8").splitlines()[0])
    return header, cluster.calls


def test_a_plain_run_prepares_its_topic_alone(tmp_path: Path) -> None:
    header, calls = _prepared("plain", tmp_path)
    assert calls == [("topic", "t")]
    assert header["records"] == ["racks", "sends", "polls", "meta", "final-reads"]
    assert header["config"]["consumers"] == {f"consumer-{i}": {"isolation_level": "read_uncommitted"} for i in range(3)}
    assert not {"share", "copy", "transaction_version"} & set(header["config"])


def test_a_group_run_sets_its_session_timeout_and_promises_commits(tmp_path: Path) -> None:
    header, calls = _prepared("group", tmp_path)
    assert calls == [
        ("topic", "t"),
        ("group-config", "t-group", ["consumer.heartbeat.interval.ms", "consumer.session.timeout.ms"]),
    ]
    assert header["records"] == ["racks", "sends", "polls", "meta", "final-reads", "commits"]
    assert header["config"]["consumers"]["consumer-0"] == {"isolation_level": "read_uncommitted", "group": "t-group"}


def test_a_transactional_run_holds_the_transaction_version(tmp_path: Path) -> None:
    header, calls = _prepared("transactional", tmp_path)
    assert calls == [("topic", "t"), ("feature", "transaction.version", 1)]
    assert header["records"] == ["racks", "sends", "polls", "meta", "final-reads", "transactions", "commits"]
    assert header["config"]["transaction_version"] == 1


def test_a_copy_run_adds_its_sink_its_copiers_and_its_reader(tmp_path: Path) -> None:
    header, calls = _prepared("copy", tmp_path)
    assert calls == [("topic", "t"), ("topic", "t-copy"), ("feature", "transaction.version", 1)]
    assert header["records"] == ["racks", "sends", "polls", "meta", "final-reads", "transactions", "commits"]
    config = header["config"]
    assert list(config)[-3:] == ["consumers", "transaction_version", "copy"]
    assert config["copy"] == {"source": "t", "sink": "t-copy", "group": "t-copy-group"}
    assert list(config["consumers"]) == [
        "consumer-0",
        "consumer-1",
        "consumer-2",
        "copier-0",
        "copier-1",
        "copy-reader",
    ]
    assert config["consumers"]["copier-1"] == {
        "isolation_level": "read_committed",
        "group": "t-copy-group",
        "copier": True,
    }


def test_a_share_run_configures_its_group_and_promises_share_events(tmp_path: Path) -> None:
    header, calls = _prepared("share", tmp_path)
    assert calls[0] == ("topic", "t") and calls[1][:2] == ("group-config", "t-share") and len(calls) == 2
    assert header["records"] == ["racks", "sends", "share", "meta", "final-reads"]
    assert header["config"]["share"]["group"] == "t-share"
    assert "group" not in header["config"]["consumers"]["consumer-0"]


def _reader(read_past: list[int], name: str = "c", gone: bool = False) -> ConsumerWorker:
    """A consumer worker that has returned records of t up to ``read_past`` (per partition);
    ``gone``: its client worker died and no restart is asked for (``Worker.gone_for_good``)."""
    c = object.__new__(ConsumerWorker)
    Worker.__init__(c, name, history=None)  # type: ignore[arg-type]
    c._next = {TopicPartition("t", p): o for p, o in enumerate(read_past)}
    c._awaiting_restart = gone
    return c


def test_an_assign_reader_has_caught_up_when_every_consumer_read_up_to_every_high_watermark() -> None:
    """By position, not by count: a consumer that retention moved past deleted records read
    fewer records than the high watermarks and is still caught up; one a partition short is not."""
    spec = RunSpec(suite="u", scenario="x", topic="t", partitions=2)
    consumers = [_reader([5, 5]), _reader([5, 4])]
    done, what = Assign(spec).caught_up("t", [5, 5], consumers)
    assert not done() and what == "every consumer has read up to the high watermarks [5, 5]"
    consumers[1]._next[TopicPartition("t", 1)] = 5
    assert done()


def test_the_assign_reader_stops_waiting_for_a_consumer_that_died_for_good() -> None:
    """One still behind whose worker died with no restart asked for never catches up:
    ConsumersGone, naming it, so settling ends at once. One that died after it caught up, or
    that is behind but alive, is no reason to stop."""
    mode = Assign(RunSpec(suite="u", scenario="x", topic="t", partitions=2))
    done, _ = mode.caught_up("t", [10, 10], [_reader([10, 10], "c0"), _reader([4, 4], "c1", gone=True)])
    with pytest.raises(ConsumersGone, match="c1"):
        done()
    done, _ = mode.caught_up("t", [10, 10], [_reader([10, 10], "c0", gone=True), _reader([4, 4], "c1")])
    assert not done()
    done, _ = mode.caught_up("t", [10, 10], [_reader([10, 10], "c0", gone=True), _reader([10, 10], "c1")])
    assert done()


@pytest.mark.parametrize("transactional", [True, False])
def test_a_client_without_a_transactional_producer_is_refused_a_transactional_or_copy_run(transactional: bool) -> None:
    spec = RunSpec(suite="unit", scenario="s", transactional=transactional, copiers=0 if transactional else 2)
    mode = Transactional(spec) if transactional else Copy(spec, FakeBackend())
    # a client highwater has no transactional worker for is refused by name
    with pytest.raises(TransactionsUnsupported, match="^segmentio 0.4.49 has no transactional producer"):
        mode.refuse("segmentio", "0.4.49", "4.4.0")
    for client in ("kafka-python", "confluent-kafka", "java", "kafkajs", "franz-go", "sarama"):
        mode.refuse(client, "1.0", "4.4.0")  # look-alikes: every other client has one
