"""Clients on the road between releases: ``client-restart --version/--group-protocol`` as a fault
spec, the refusals of what a client or a release lacks (at the fault and before the run), the
restart's override read once by the workload that owns the worker, and the road a scripted
nemesis plans (``highwater.client_road``). No cluster, no worker process."""

from __future__ import annotations

from dataclasses import replace as dataclass_replace
from typing import Any

import pytest

from highwater.client_road import client_road, road_refusal
from highwater.core.manifest import NemesisRecord, ScriptedStep
from highwater.faults.clients import relaunch_refusal
from highwater.faults.common import FaultError
from highwater.faults.spec import FaultKind, parse_fault
from highwater.harness.clients import ConsumerSettings, Relaunch, registered
from highwater.harness.clients.worker import WorkerInfo, request_restart, take_relaunch, take_restart
from highwater.harness.workload.consumer import ConsumerConfig, ConsumerWorker
from highwater.run_spec import RunSpec

JAVA = WorkerInfo("consumer-0", "consumer", "java 4.1.0", "rack-a", "g", "classic")


def test_client_restart_takes_a_version_and_a_group_protocol() -> None:
    spec = parse_fault("client-restart --target client:consumer-0 --version 4.1.0 --group-protocol consumer")
    assert spec.kind is FaultKind.CLIENT_RESTART
    assert (spec.param("version"), spec.param("group_protocol")) == ("4.1.0", "consumer")
    assert parse_fault(spec.to_args()) == spec
    plain = parse_fault("client-restart --target client:consumer-0")
    assert "--version" not in plain.to_args() and "--group-protocol" not in plain.to_args()


@pytest.mark.parametrize(
    "text,why",
    [
        ("client-restart --target client:consumer-0 --group-protocol eager", "takes one of classic, consumer"),
        ("client-restart --target client:consumer-0 --version x!", "takes a client version"),
        ("client-kill --target client:consumer-0 --version 4.1.0", "has no option --version"),
    ],
)
def test_a_bad_relaunch_is_one_line(text: str, why: str) -> None:
    with pytest.raises(FaultError, match=why) as exc:
        parse_fault(text)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "worker,relaunch,kafka,why",
    [
        (
            WorkerInfo("producer-0", "producer", "java 4.1.0"),
            Relaunch(group_protocol="consumer"),
            "4.4.0",
            "a producer",
        ),
        (
            WorkerInfo("consumer-0", "consumer", "java 4.1.0", "rack-a"),
            Relaunch(group_protocol="consumer"),
            "4.4.0",
            "outside a group",
        ),
        (
            WorkerInfo("consumer-0", "consumer", "kafka-python 3.0.12", "rack-a", "g", "classic"),
            Relaunch(group_protocol="consumer"),
            "4.4.0",
            "only the classic group protocol",
        ),
        (JAVA, Relaunch("3.9.1", "consumer"), "4.4.0", "since java 4.0"),
        (JAVA, Relaunch(group_protocol="consumer"), "3.9.1", "since Kafka 4.0"),
        # a member already on the consumer protocol restarted on an older client keeps it
        (dataclass_replace(JAVA, group_protocol="consumer"), Relaunch("3.9.1"), "4.4.0", "since java 4.0"),
    ],
)
def test_a_relaunch_the_client_or_release_lacks_is_refused(
    worker: WorkerInfo, relaunch: Relaunch, kafka: str, why: str
) -> None:
    refused = relaunch_refusal([worker], relaunch, kafka)
    assert refused is not None and why in refused and "\n" not in refused


def test_a_relaunch_the_client_and_release_have_is_not_refused() -> None:
    assert relaunch_refusal([JAVA], Relaunch("4.4.0", "consumer"), "4.4.0") is None
    assert relaunch_refusal([JAVA], Relaunch(group_protocol="classic"), "3.9.1") is None
    producer = WorkerInfo("producer-0", "producer", "kafka-python 3.0.9")
    assert relaunch_refusal([producer], Relaunch("3.0.12"), "4.4.0") is None


def test_a_restart_s_override_is_read_once_and_a_plain_restart_clears_it() -> None:
    request_restart("road-0", Relaunch("4.1.0", "consumer"))
    assert take_restart("road-0") and not take_restart("road-0")
    assert take_relaunch("road-0") == Relaunch("4.1.0", "consumer")
    assert take_relaunch("road-0") == Relaunch()
    request_restart("road-0", Relaunch("4.1.0"))
    request_restart("road-0")  # a healed kill after it asks for nothing new
    assert take_restart("road-0") and take_relaunch("road-0") == Relaunch()


class _Driver:
    """A client that builds nothing: it records the settings each consumer is made with."""

    def __init__(self, name: str, version: str) -> None:
        self.name, self.version = name, version
        self.made: list[ConsumerSettings] = []

    def producer(self, settings: Any) -> Any:
        raise AssertionError("no producer here")

    def consumer(self, settings: ConsumerSettings, listener: Any) -> Any:
        self.made.append(settings)
        return object()


class _History:
    def invoke(self, *a: Any, **k: Any) -> None: ...
    def ok(self, *a: Any, **k: Any) -> None: ...
    def fail(self, *a: Any, **k: Any) -> None: ...
    def info(self, *a: Any, **k: Any) -> None: ...


def _member(driver: _Driver, assignor: str | None = "uniform", protocol: str = "consumer") -> ConsumerWorker:
    config = ConsumerConfig(
        topic="t", partitions=1, mode="subscribe", group_id="g", group_protocol=protocol, group_remote_assignor=assignor
    )
    return ConsumerWorker("consumer-0", ["127.0.0.1:9092"], _History(), config, driver)  # type: ignore[arg-type]


def test_a_member_relaunched_on_another_protocol_keeps_it_and_its_assignor_rules() -> None:
    driver = _Driver("java", "4.4.0")
    member = _member(driver, assignor=None, protocol="classic")
    member._relaunch(Relaunch(group_protocol="consumer"))
    assert member.settings.group_protocol == member.config.group_protocol == "consumer"
    member._relaunch(Relaunch())  # a later plain restart: unchanged
    assert member.settings.group_protocol == "consumer"
    back = _member(driver)
    back._relaunch(Relaunch(group_protocol="classic"))  # a classic member names no server-side assignor
    assert back.settings.group_protocol == "classic" and back.settings.group_remote_assignor is None


def test_a_member_relaunched_on_another_version_runs_that_version_s_driver() -> None:
    older, newer = _Driver("road-client", "1.0.0"), _Driver("road-client", "2.0.0")
    member = _member(older)
    with registered(newer):  # get_driver("road-client==2.0.0") -> newer
        member._relaunch(Relaunch("2.0.0"))
    assert member.client is newer
    member._relaunch(Relaunch("2.0.0"))  # already on it: the same driver
    assert member.client is newer


def _record(*faults: str) -> NemesisRecord:
    return NemesisRecord("scripted", tuple(ScriptedStep(4, f, 4) for f in faults))


def test_a_scripted_road_is_planned_and_refused_before_the_run() -> None:
    spec = RunSpec("groups", "road", consumer_mode="subscribe", client_to="4.4.0")
    road = client_road(
        _record(
            "kill --target broker:1",
            "kill --target broker:{follower}",  # a broker only the live cluster can name: not parsed
            "client-restart --target client:consumer-0 --version {client_to}",
            "client-restart --target client:consumer-0 --group-protocol consumer",
        ),
        spec,
        "java",
        "3.9.1",
    )
    assert road.versions == ("3.9.1", "4.4.0") and road.protocols == ("classic", "consumer")
    assert road.client_path == "java 3.9.1->4.4.0" and road.protocol_path == "classic->consumer"
    assert road.stops == (("4.4.0", "classic"), ("4.4.0", "consumer"))
    assert road_refusal(road, spec, "4.4.0") is None
    refused = road_refusal(road, spec, "3.9.1")
    assert refused is not None and "since Kafka 4.0" in refused
    early = client_road(
        _record("client-restart --target client:consumer-0 --group-protocol consumer"), spec, "java", "3.9.1"
    )
    assert "since java 4.0" in str(road_refusal(early, spec, "4.4.0"))
    assign = RunSpec("groups", "road", consumer_mode="assign")
    moved = client_road(_record("client-restart --target consumers --group-protocol consumer"), assign, "java", "4.4.0")
    assert "not in a group" in str(road_refusal(moved, assign, "4.4.0"))
    plain = client_road(_record("client-restart --target consumers"), spec, "java", "4.4.0")
    assert plain.client_path is None and plain.protocol_path is None and road_refusal(plain, spec, "4.4.0") is None
