"""Clock faults without a cluster: the kinds and their params, refusals (backends without faked
clocks, a missing libfaketime), the clock file a node's JVM reads, the drift's stepping (with an
injected time source), the injector's apply, heal and history on a fake backend, and a real
drift stepper process started, stopped and stopping by itself when its cluster's owner is gone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from highwater.faults.capability import CapabilityError, check_capabilities
from highwater.faults.common import FaultError
from highwater.faults.conflicts import check_no_conflicts
from highwater.faults.inject import Injector
from highwater.faults.spec import FaultKind, FaultSpec, kind_help, parse_fault
from highwater.harness.backend import Capability, ClockControl, has_capability
from highwater.harness.backends import BackendError, get_backend
from highwater.harness.clock import (
    CLOCK_FILE,
    ClockError,
    Drift,
    NodeClock,
    faked_env,
    find_libfaketime,
    format_offset,
    parse_offset,
    remove_shm,
    run_drift,
)
from highwater.harness.config import ClusterSpec, SpecError
from highwater.harness.local.cluster import Cluster
from highwater.harness.procs import ProcessRegistry
from highwater.harness.topology import Topology
from highwater.harness.waiting import wait_until
from tests.unit.fault_topology import topo

# -- kinds and params --------------------------------------------------------------------------


def test_clock_jump_takes_a_signed_fractional_offset_and_round_trips() -> None:
    spec = parse_fault("clock-jump --target broker:2 --offset -300")
    assert spec.kind is FaultKind.CLOCK_JUMP and spec.param("offset") == -300.0
    assert spec.kind.is_clock and spec.kind.is_process and not spec.kind.is_disk
    assert spec.capability is Capability.CLOCK_CONTROL
    assert parse_fault(spec.to_args()) == spec and FaultSpec.from_dict(spec.to_dict()) == spec
    assert parse_fault("clock_jump --target broker:1 --offset=+3600.5").param("offset") == 3600.5
    assert parse_fault("clock-jump --target broker:1").param("offset") == 60.0  # the default


def test_clock_drift_takes_a_signed_rate_and_process_targets() -> None:
    spec = parse_fault("clock-drift --target leader:orders/0 --rate -20.5")
    assert spec.kind is FaultKind.CLOCK_DRIFT and spec.param("rate") == -20.5
    assert parse_fault(spec.to_args()) == spec
    for target in ("controller", "rack:rack-a", "brokers", "minority:3", "follower-in:rack-b@t/0"):
        assert parse_fault(f"clock-drift --target {target} --rate 5").param("rate") == 5.0


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("clock-jump --target broker:1 --offset soon", "--offset expects float"),
        ("clock-jump --target broker:1 --offset nan", "--offset must be a finite number"),
        ("clock-drift --target broker:1 --rate inf", "--rate must be a finite number"),
        ("clock-jump --target broker:1 --peer broker:2", "process fault and takes no --peer"),
        ("clock-jump --target clients:rack-a", "not a process"),  # links of a rack's clients, not workers
        ("clock-drift --target broker:1 --offset 5", "clock-drift has no option --offset"),
    ],
)
def test_bad_clock_faults_get_one_clear_line(text: str, fragment: str) -> None:
    with pytest.raises(FaultError) as err:
        parse_fault(text)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_kind_help_names_the_params_and_what_the_cluster_needs() -> None:
    text = kind_help(FaultKind.CLOCK_DRIFT)
    assert "--rate FLOAT  ms gained per second" in text and "clock='faked'" in text
    assert "clock-jump" in kind_help() and "clock-drift" in kind_help()


def test_two_clock_faults_on_a_node_conflict_a_clock_fault_and_a_kill_do_not() -> None:
    t = topo(3)
    check_no_conflicts(t, [parse_fault("clock-jump --target broker:1"), parse_fault("kill --target broker:1")])
    check_no_conflicts(t, [parse_fault("clock-drift --target broker:1"), parse_fault("pause --target rack:rack-a")])
    check_no_conflicts(t, [parse_fault("clock-jump --target broker:1"), parse_fault("clock-drift --target broker:2")])
    with pytest.raises(FaultError, match="contradictory"):
        check_no_conflicts(
            t, [parse_fault("clock-jump --target broker:1"), parse_fault("clock-drift --target brokers")]
        )


# -- refusals ---------------------------------------------------------------------------------


def test_only_a_cluster_with_faked_clocks_has_clock_control() -> None:
    with pytest.raises(CapabilityError, match=r"^fault 'clock-jump' needs clock control, .*clock='faked'\)\)$"):
        check_capabilities(Cluster(ClusterSpec()), [FaultKind.CLOCK_JUMP])
    faked = Cluster(ClusterSpec(clock="faked"))
    assert has_capability(faked, Capability.CLOCK_CONTROL)
    check_capabilities(faked, [FaultKind.CLOCK_JUMP, FaultKind.CLOCK_DRIFT])


def test_faked_clocks_are_the_local_backend_s_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("highwater.harness.backends.find_libfaketime", lambda: tmp_path / "libfaketime.so.1")
    get_backend("local").check_spec(ClusterSpec(clock="faked"))
    for name in ("compose", "external"):
        with pytest.raises(BackendError, match=r"^clock 'faked' .* needs the local backend: backend") as err:
            get_backend(name).check_spec(ClusterSpec(clock="faked"))
        assert "\n" not in str(err.value)
        get_backend(name).check_spec(ClusterSpec())  # a real clock: nothing to refuse
    with pytest.raises(SpecError, match="clock must be one of real, faked"):
        ClusterSpec(clock="slow")


def test_a_missing_libfaketime_is_one_line_naming_the_package(tmp_path: Path) -> None:
    with pytest.raises(ClockError) as err:
        find_libfaketime([str(tmp_path / "*" / "libfaketime.so.1")])
    assert "apt-get install libfaketime" in str(err.value) and "make" in str(err.value)
    (tmp_path / "x86_64-linux-gnu").mkdir()
    lib = tmp_path / "x86_64-linux-gnu" / "libfaketime.so.1"
    lib.write_bytes(b"")
    assert find_libfaketime([str(tmp_path / "nope.so"), str(tmp_path / "*" / "libfaketime.so.1")]) == lib


def test_a_cluster_with_faked_clocks_refuses_a_missing_library_before_starting_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIGHWATER_HOME", str(tmp_path / "home"))

    def missing() -> Path:
        raise ClockError("libfaketime not found: install it with 'apt-get install libfaketime' (or 'make')")

    monkeypatch.setattr("highwater.harness.local.cluster.find_libfaketime", missing)
    with pytest.raises(ClockError, match="apt-get install libfaketime"):
        Cluster(ClusterSpec(clock="faked"), progress=lambda _msg: None).start()
    assert not (tmp_path / "home").exists(), "nothing was started or created"
    monkeypatch.setattr("highwater.harness.backends.find_libfaketime", missing)
    with pytest.raises(ClockError, match="apt-get install libfaketime"):  # the registry's check, first
        get_backend("local").check_spec(ClusterSpec(clock="faked"))


# -- the clock file ---------------------------------------------------------------------------


def test_the_clock_file_holds_one_signed_offset_in_seconds(tmp_path: Path) -> None:
    clock = NodeClock(tmp_path, "kafka-1").create()
    assert (tmp_path / CLOCK_FILE).read_text() == "+0.000000\n" and clock.offset() == 0.0
    clock.set_offset(3600)
    assert (tmp_path / CLOCK_FILE).read_text() == "+3600.000000\n"
    clock.set_offset(-0.25)
    assert (tmp_path / CLOCK_FILE).read_text() == "-0.250000\n" and clock.offset() == -0.25
    assert sorted(p.name for p in tmp_path.iterdir()) == [CLOCK_FILE], "written through a rename, no leftovers"
    assert format_offset(-0.0) == "+0.000000\n"
    assert parse_offset("# a comment\n+60\n") == 60.0 and parse_offset("-300") == -300.0
    with pytest.raises(ClockError):
        format_offset(float("nan"))
    with pytest.raises(ClockError, match="not a clock offset"):
        parse_offset("+1y x2")


def test_a_node_without_a_clock_file_has_no_faked_clock(tmp_path: Path) -> None:
    clock = NodeClock(tmp_path, "kafka-2")
    assert not clock.enabled
    with pytest.raises(ClockError, match="^kafka-2 has no faked clock: start the cluster with"):
        clock.set_offset(5)
    with pytest.raises(ClockError, match="^kafka-2 has no faked clock"):
        clock.offset()


def test_the_jvm_environment_preloads_libfaketime_on_the_node_s_clock_file(tmp_path: Path) -> None:
    lib = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
    env = faked_env(tmp_path / CLOCK_FILE, lib, base={"PATH": "/bin"})
    assert env["LD_PRELOAD"] == str(lib) and env["FAKETIME_TIMESTAMP_FILE"] == str(tmp_path / CLOCK_FILE)
    assert env["FAKETIME_CACHE_DURATION"] == "0" and env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"
    assert env["FAKETIME_FORCE_MONOTONIC_FIX"] == "0" and env["LC_NUMERIC"] == "C" and env["PATH"] == "/bin"
    assert "FAKETIME" not in env, "the file, not the variable, holds the offset (the variable would win)"
    assert faked_env(tmp_path, lib, base={"LD_PRELOAD": "/x.so"})["LD_PRELOAD"] == f"{lib}:/x.so"


def test_what_libfaketime_kept_for_a_dead_process_is_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    for pid in (dead.pid, os.getpid()):
        (tmp_path / f"faketime_shm_{pid}").write_bytes(b"")
        (tmp_path / f"sem.faketime_sem_{pid}").write_bytes(b"")
    assert len(remove_shm(dead.pid, tmp_path)) == 2
    assert remove_shm(os.getpid(), tmp_path) == [], "a live process keeps its own"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"faketime_shm_{os.getpid()}",
        f"sem.faketime_sem_{os.getpid()}",
    ]


# -- drift stepping ---------------------------------------------------------------------------


class FakeTime:
    """A monotonic clock that only moves when slept on, or by ``write_cost`` per clock-file write."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


def test_a_drift_steps_the_offset_by_its_rate_once_a_second(tmp_path: Path) -> None:
    clock_file = tmp_path / CLOCK_FILE
    fake = FakeTime()
    seen: list[float] = []

    def keep_going() -> bool:
        if clock_file.exists():
            seen.append(parse_offset(clock_file.read_text()))
        fake.t += 0.3  # a slow step: the next sleep is shorter, the grid is kept
        return len(seen) < 4

    steps = run_drift(clock_file, Drift(base=2.0, rate_ms=-500), keep_going, now=fake.now, sleep=fake.sleep)
    assert steps == 4
    # each step is written 0.3 s after the grid point it follows (keep_going's cost), so the
    # offsets are base + rate * (k + 0.3 s)
    assert seen == [pytest.approx(2.0 - 0.5 * (k + 0.3)) for k in range(4)]
    assert fake.sleeps == [pytest.approx(0.7)] * 4
    assert Drift(0.0, 250).offset_after(8) == 2.0 and Drift(-1.0, -1000).offset_after(1.5) == -2.5


def test_a_drift_that_is_told_to_stop_writes_nothing(tmp_path: Path) -> None:
    fake = FakeTime()
    assert run_drift(tmp_path / CLOCK_FILE, Drift(0, 100), lambda: False, now=fake.now, sleep=fake.sleep) == 0
    assert not (tmp_path / CLOCK_FILE).exists() and fake.sleeps == []


def test_a_drift_stepper_moves_the_clock_stops_when_told_and_when_its_owner_is_gone(tmp_path: Path) -> None:
    registry = ProcessRegistry(tmp_path / "processes.json")
    clock = NodeClock(tmp_path / "kafka-1", "kafka-1", registry, owner_pid=os.getpid()).create()
    clock.set_offset(10.0)
    clock.start_drift(100_000)  # 100 s per second: the first step after the start shows it
    try:
        assert clock.drifting() and [r.name for r in registry.load()] == ["clock-drift-kafka-1"]
        with pytest.raises(ClockError, match="already drifting"):
            clock.start_drift(5)
        wait_until(lambda: clock.offset() > 10.0, 10, "the stepper moves the offset")
    finally:
        clock.stop_drift()
    assert not clock.drifting()
    stopped_at = clock.offset()
    clock.reset()
    assert clock.offset() == 0.0 and stopped_at > 10.0

    owner = subprocess.Popen(["sleep", "60"])
    orphan = NodeClock(tmp_path / "kafka-2", "kafka-2", registry, owner_pid=owner.pid).create()
    orphan.start_drift(-1)
    try:
        assert orphan.drifting()
        owner.kill()
        owner.wait()
        wait_until(lambda: not orphan.drifting(), 10, "the stepper stops once its cluster's owner is gone")
    finally:
        orphan.stop_drift()
        owner.kill()


# -- the injector on a fake backend ------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.value = 0.0
        self.rate: float | None = None

    def offset(self) -> float:
        return self.value

    def set_offset(self, seconds: float) -> None:
        self.value = seconds

    def start_drift(self, rate_ms: float) -> None:
        self.rate = rate_ms
        self.value += 7.5  # as if it had drifted a while when it is read next

    def stop_drift(self) -> None:
        self.rate = None

    def drifting(self) -> bool:
        return self.rate is not None

    def reset(self) -> None:
        self.stop_drift()
        self.value = 0.0


class FakeClockBackend:
    """Just enough of a backend for the injector's clock faults: a topology and clocks."""

    backend_name = "local"

    def __init__(self) -> None:
        self.topo: Topology = topo(3)
        self.clocks = {n.name: FakeClock() for n in self.topo.nodes}

    @property
    def clocks_enabled(self) -> bool:
        return True

    def clock(self, key: int | str) -> FakeClock:
        return self.clocks[self.topo.node(key).name]


class Sink:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def invoke(self, process: str, f: str, value: Any = None, error: None = None) -> Any:
        self.events.append(("invoke", f, value))

    def ok(self, process: str, f: str, value: Any = None, error: None = None) -> Any:
        self.events.append(("ok", f, value))

    def fail(self, process: str, f: str, value: Any = None, error: Any = None) -> Any:
        self.events.append(("fail", f, value))


def test_the_injector_jumps_and_drifts_clocks_heals_them_and_records_the_offsets() -> None:
    backend = FakeClockBackend()
    assert isinstance(backend, ClockControl)
    sink = Sink()
    injector = Injector(backend, sink)  # type: ignore[arg-type]  # only what clock faults use
    jump = injector.apply(parse_fault("clock-jump --target broker:2 --offset -300"))
    assert backend.clocks["kafka-2"].value == -300.0 and jump.nodes == ("kafka-2",)
    applied = sink.events[-1]
    assert applied[:2] == ("ok", "fault")
    assert applied[2]["params"] == {"offset": -300.0} and applied[2]["clock"] == {"kafka-2": -300.0}
    injector.heal(jump)
    assert backend.clocks["kafka-2"].value == 0.0
    assert sink.events[-1][:2] == ("ok", "heal") and sink.events[-1][2]["clock"] == {"kafka-2": -300.0}

    drift = injector.apply(parse_fault("clock-drift --target broker:1 --rate 250"))
    assert backend.clocks["kafka-1"].rate == 250.0
    injector.heal(drift)
    assert not backend.clocks["kafka-1"].drifting() and backend.clocks["kafka-1"].value == 0.0
    assert sink.events[-1][2]["clock"] == {"kafka-1": 7.5}, "the heal says where the drift had got to"

    injector.apply(parse_fault("clock-drift --target brokers --rate -10"))
    injector.heal_all()  # heals the fault, then puts every clock back whatever was left
    assert all(c.value == 0.0 and not c.drifting() for c in backend.clocks.values())
    assert not injector.active
