"""Backends: the local backend implements every protocol; a fault needing a capability the
backend lacks is refused before the run starts, in one line; unknown backend names get one
line; a fault that cannot be applied when scheduled is recorded in the history.

The fakes below stand in for a backend only in these pure checks (capability refusal happens
before any cluster is touched; a fault that cannot resolve never reaches one)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from highwater import cli
from highwater.core.errors import HighwaterError
from highwater.faults.capability import CapabilityError, check_capabilities, declared_faults, refusal
from highwater.faults.common import FaultError
from highwater.faults.inject import Injector
from highwater.faults.schedule import Schedule, ScheduleConfig, ScheduledFault, topology_summary
from highwater.faults.spec import FaultKind, parse_fault
from highwater.harness.backend import (
    Capability,
    ClusterBackend,
    ControlledNode,
    LinkControl,
    NodeState,
    ProcessControl,
    capabilities,
)
from highwater.harness.backends import DEFAULT_BACKEND, BackendError, backend_names, get_backend
from highwater.harness.config import ClusterSpec
from highwater.harness.local.cluster import Cluster
from highwater.harness.local.node import KafkaNode
from highwater.harness.observe import Observer, PartitionState
from highwater.harness.security import PLAINTEXT, ClientSecurity
from highwater.harness.topology import Topology
from highwater.nemesis import Step, scheduled, scripted
from highwater.run_spec import RunSpec
from highwater.runner import execute_run
from tests.unit.fault_topology import topo


def _members(protocol: type) -> set[str]:
    names = {n for n in vars(protocol) if not n.startswith("_")}
    return names | set(getattr(protocol, "__annotations__", {}))


# -- the local backend --------------------------------------------------------------------------


def _has(obj: object, name: str) -> bool:
    try:
        inspect.getattr_static(obj, name)  # never runs a property (topo raises until started)
        return True
    except AttributeError:
        return False


def test_local_backend_has_every_member_of_every_protocol() -> None:
    # mypy proves the signatures (harness/local/cluster.py's _implements); this checks the names at runtime.
    cluster = Cluster(ClusterSpec(brokers=3, racks=3))
    for protocol in (ClusterBackend, LinkControl, ProcessControl):
        missing = sorted(m for m in _members(protocol) if not _has(cluster, m))
        assert not missing, f"Cluster lacks {protocol.__name__} members {missing}"
    missing = sorted(m for m in _members(ControlledNode) - {"state"} if not _has(KafkaNode, m))
    assert not missing, f"KafkaNode lacks {missing}"


def test_local_backend_is_link_and_process_control_at_runtime() -> None:
    cluster = Cluster(ClusterSpec(brokers=3, racks=3))  # not started: nothing runs
    assert isinstance(cluster, LinkControl) and isinstance(cluster, ProcessControl)
    assert capabilities(cluster) == {
        Capability.LINK_CONTROL,
        Capability.PROCESS_CONTROL,
        Capability.FILE_CONTROL,
        Capability.RELEASE_CONTROL,
    }
    assert cluster.backend_name == "local"


def test_the_registry_knows_local_and_refuses_unknown_names_in_one_line() -> None:
    assert DEFAULT_BACKEND == "local" and "local" in backend_names()
    entry = get_backend("local")
    assert entry.attach is not None  # 'cluster up' can keep it up and 'fault' attach to it
    with pytest.raises(BackendError) as err:
        get_backend("nope")
    assert str(err.value) == f"unknown backend 'nope' (known: {', '.join(backend_names())})"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--backend", "nope"],
        ["campaign", "--backend", "nope"],
        ["cluster", "up", "--backend", "nope"],
    ],
)
def test_cli_refuses_an_unknown_backend_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 4  # refused: highwater.exit_codes.Exit.HARNESS
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"highwater: error: unknown backend 'nope' (known: {', '.join(backend_names())})"]


def test_pytest_plugin_refuses_an_unknown_backend(tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--backend",
            "nope",
            str(tmp_path / "test_nothing.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert res.returncode == 4, res.stdout + res.stderr
    assert f"unknown backend 'nope' (known: {', '.join(backend_names())})" in res.stderr


# -- capability refusal -------------------------------------------------------------------------


class FakeBackend:
    """Only what every backend must do (e.g. a cluster highwater did not start)."""

    backend_name = "external"

    def __init__(self, topology: Topology | None = None, leader: int = -1) -> None:
        self._topo = topology or topo(3, 3)
        self._leader = leader
        self.touched: list[str] = []

    @property
    def spec(self) -> ClusterSpec:
        return ClusterSpec(brokers=3, racks=3)

    @property
    def topo(self) -> Topology:
        return self._topo

    @property
    def broker_ids(self) -> list[int]:
        return [b.node_id for b in self._topo.brokers]

    def rack_of(self, broker_id: int) -> str:
        return str(self._topo.node(broker_id).rack)

    @property
    def kafka_version(self) -> str:
        return "4.3.1"

    def bootstrap(self, rack: str | None = None) -> list[str]:
        return ["127.0.0.1:9"]

    @property
    def client_security(self) -> ClientSecurity:
        return PLAINTEXT

    def topic_name(self, name: str) -> str:
        return name

    def observer(self, rack: str | None = None) -> Observer:
        raise AssertionError("the fake has no Kafka")

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, str] | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.touched.append("create_topic")
        raise AssertionError("a refused run must not create its topic")

    def partition_state(
        self, topic: str, partition: int = 0, offsets: bool = True, timeout: float = 15.0
    ) -> PartitionState:
        return PartitionState(topic, partition, self._leader, 0, (1, 2, 3), (1, 2, 3))

    def wait_for_isr(
        self, topic: str, partition: int, cond: Callable[[PartitionState], bool], timeout: float, message: str
    ) -> PartitionState:
        return self.partition_state(topic, partition)

    def wait_for_brokers(self, timeout: float = 90.0, ids: list[int] | None = None) -> None:
        pass

    def collect_logs(self, dest: Path) -> Path:
        return dest

    def stop(self, collect_logs_to: Path | None = None) -> None:
        pass


class FakeProcessBackend(FakeBackend):
    """A backend with process control but no link control."""

    backend_name = "compose"

    @property
    def nodes(self) -> Mapping[int, ControlledNode]:
        return {}

    def node(self, key: int | str) -> ControlledNode:
        raise AssertionError("no fault should reach a node in these tests")


def test_fakes_are_what_they_claim() -> None:
    assert isinstance(FakeBackend(), ClusterBackend) and capabilities(FakeBackend()) == frozenset()
    assert capabilities(FakeProcessBackend()) == {Capability.PROCESS_CONTROL}


def test_every_fault_kind_declares_its_capability() -> None:
    for kind in FaultKind:
        expected = Capability.LINK_CONTROL if kind.is_link else Capability.PROCESS_CONTROL
        special = {
            kind.is_disk: Capability.DISK_CONTROL,
            kind.is_clock: Capability.CLOCK_CONTROL,
            kind.is_corruption: Capability.FILE_CONTROL,
            kind is FaultKind.ROLL: Capability.RELEASE_CONTROL,
        }.get(True)
        if kind.is_client or kind is FaultKind.FINALIZE:
            assert kind.capability is None  # client workers are ours; a finalization is an Admin API call
        else:
            assert kind.capability is (special or expected)
    assert parse_fault("latency --target broker:1 --latency 5").capability is Capability.LINK_CONTROL


def test_a_fault_needing_a_missing_capability_is_refused_in_one_line() -> None:
    with pytest.raises(CapabilityError) as err:
        check_capabilities(FakeBackend(), [parse_fault("cut --target broker:2")])
    assert str(err.value) == "fault 'cut' needs link control, which backend 'external' does not have"
    with pytest.raises(
        CapabilityError, match="^fault 'rolling-restart' needs process control, which backend 'external' does not have$"
    ):
        check_capabilities(FakeBackend(), [FaultKind.ROLLING_RESTART])
    check_capabilities(FakeProcessBackend(), [FaultKind.KILL, FaultKind.PAUSE])  # has what they need
    assert refusal(FakeProcessBackend(), [FaultKind.KILL, FaultKind.LATENCY]) is not None
    # the local backend can do all; the disk faults on a cluster started with disk="lossy" only,
    # the clock faults on one started with clock="faked" only (tests/unit/test_clock.py)
    check_capabilities(Cluster(ClusterSpec()), [k for k in FaultKind if not k.is_disk and not k.is_clock])
    with pytest.raises(CapabilityError, match=r"^fault 'power-loss' needs disk control, .*disk='lossy'\)\)$"):
        check_capabilities(Cluster(ClusterSpec()), [FaultKind.POWER_LOSS])
    assert issubclass(CapabilityError, HighwaterError)  # the CLI prints it as 'highwater: error: ...'


def test_lossy_disks_are_the_local_backend_s_alone() -> None:
    from highwater.harness.backends import BackendError, get_backend
    from highwater.harness.config import SpecError

    get_backend("local").check_spec(ClusterSpec(disk="lossy"))
    for name in ("compose", "external"):
        with pytest.raises(BackendError, match="needs the local backend"):
            get_backend(name).check_spec(ClusterSpec(disk="lossy"))
    with pytest.raises(SpecError, match="disk must be one of plain, lossy"):
        ClusterSpec(disk="fast")


def test_nemeses_declare_their_fault_kinds() -> None:
    nemesis = scripted(
        [
            Step(1, "kill --target leader:{topic}/0", 1),
            Step(1, "cut --target broker:{follower}", 1),
            Step(1, "kill --target broker:1", 1),
        ]
    )
    assert declared_faults(nemesis) == (FaultKind.KILL, FaultKind.CUT)
    assert declared_faults(lambda injector, cluster, spec: None) == ()


def test_the_runner_refuses_before_the_run_starts(tmp_path: Path) -> None:
    backend = FakeProcessBackend()
    nemesis = scripted([Step(5, "latency --target broker:2 --latency 100", 5)])
    spec = RunSpec(suite="unit", scenario="refused", results_root=tmp_path)
    with pytest.raises(
        CapabilityError, match="^fault 'latency' needs link control, which backend 'compose' does not have$"
    ):
        execute_run(backend, spec, nemesis)
    assert backend.touched == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        ({"linger_ms": -1}, "linger_ms must be 0 or more, not -1"),
        ({"max_poll_records": 0}, "max_poll_records must be 1 or more, not 0"),
        ({"max_in_flight": 6, "idempotence": True}, "max_in_flight must be 5 with idempotence, not 6"),
        ({"max_in_flight": 0}, "max_in_flight must be 1 or more, not 0"),
    ],
)
def test_the_runner_refuses_client_settings_no_library_takes(tmp_path: Path, fields: dict, line: str) -> None:
    backend = FakeProcessBackend()
    spec = RunSpec(suite="unit", scenario="refused", results_root=tmp_path, **fields)
    with pytest.raises(HighwaterError, match=f"^{line}$"):
        execute_run(backend, spec, scripted([]))
    assert backend.touched == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "fields",
    [{"linger_ms": 0}, {"max_in_flight": 5, "idempotence": True}, {"max_in_flight": 8}, {"max_poll_records": 1}],
)
def test_client_settings_a_library_takes_are_not_refused(fields: dict) -> None:
    assert RunSpec(suite="unit", scenario="ok", **fields).client_settings_refusal() is None


def test_the_injector_refuses_and_records_the_refusal() -> None:
    history = ListHistory()
    with pytest.raises(CapabilityError):
        Injector(FakeBackend(), history).apply(parse_fault("kill --target broker:2"))
    assert [(e[0], e[1], e[2]["kind"]) for e in history.events] == [("fail", "fault", "kill")]
    assert "needs process control" in str(history.events[0][3])


# -- a fault that cannot be applied when scheduled is recorded --------------------------------


class ListHistory:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any], Any]] = []

    def invoke(self, process: str, f: str, value: Any = None, error: None = None) -> Any:
        self.events.append(("invoke", f, value, error))

    def ok(self, process: str, f: str, value: Any = None, error: None = None) -> Any:
        self.events.append(("ok", f, value, error))

    def fail(self, process: str, f: str, value: Any = None, error: Any = None) -> Any:
        self.events.append(("fail", f, value, error))


def test_a_scheduled_fault_that_cannot_apply_is_a_fail_event_with_the_reason() -> None:
    backend = FakeProcessBackend(leader=-1)  # hw/0 has no leader right now
    spec = parse_fault("kill --target leader:hw/0")
    schedule = Schedule(
        seed=1,
        config=ScheduleConfig(),
        topology=topology_summary(backend.topo),
        faults=(ScheduledFault(1, 0.0, 0.0, spec),),
    )
    history = ListHistory()
    injector = Injector(backend, history)
    scheduled(schedule)(injector, backend, RunSpec(suite="unit", scenario="s"))
    assert len(history.events) == 1
    typ, f, value, error = history.events[0]
    assert (typ, f, value["kind"], value["spec"]) == ("fail", "fault", "kill", str(spec))
    assert isinstance(error, FaultError) and "hw/0 has no leader right now" in str(error)
    assert injector.active == {}


def test_a_conflicting_fault_is_a_fail_event_too() -> None:
    history = ListHistory()
    backend = FakeProcessBackend(leader=1)
    injector = Injector(backend, history)
    # Not applied for real: the fake's node() refuses; the conflict check runs before it.
    injector.active["f0"] = _active(parse_fault("pause --target broker:2"))
    with pytest.raises(FaultError, match="broker:2|kafka-2"):
        injector.apply(parse_fault("kill --target broker:2"))
    assert [(e[0], e[1]) for e in history.events] == [("fail", "fault")]


def _active(spec: Any) -> Any:
    from highwater.faults.inject import ActiveFault

    return ActiveFault(id="f0", spec=spec, nodes=("kafka-2",))


def test_node_state_is_shared_by_backend_and_node_modules() -> None:
    import highwater.harness.local.node

    assert highwater.harness.local.node.NodeState is NodeState
