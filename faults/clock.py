"""Clock faults: ``clock_jump`` and ``clock_drift`` applied to and healed on nodes whose JVMs read
their wall clock through libfaketime (``harness.clock``; a backend with
:class:`~harness.backend.ClockControl`). The injector (``faults.inject``) resolves the targets and
records the history; this module only acts on the clocks.

A jump sets the node's offset at once (``--offset`` seconds, either sign); a drift starts the
node's stepper from its offset now (``--rate`` ms per second, either sign). Heal stops any drift
first (so nothing writes the clock file after), notes where the clock had got to, and puts it back
to +0. A restarted node keeps its clock's offset: the file outlives the JVM, as a machine's clock
outlives a broker restart.
"""

from __future__ import annotations

from collections.abc import Sequence

from highwater.faults.common import FaultError
from highwater.faults.spec import FaultKind, FaultSpec
from highwater.faults.target import ClientTarget
from highwater.harness.backend import (
    Capability,
    ClockControl,
    ClockHandle,
    ClusterBackend,
    backend_name,
    has_capability,
)
from highwater.harness.clients.clocks import client_clock


def enabled(cluster: object) -> bool:
    """The cluster's node clocks are faked (``ClusterSpec(clock="faked")``)."""
    return has_capability(cluster, Capability.CLOCK_CONTROL)


def control(cluster: object) -> ClockControl:
    """The cluster's clock control (refused before by ``faults.capability``; here for the types)."""
    if not isinstance(cluster, ClockControl) or not cluster.clocks_enabled:
        raise FaultError(f"backend {backend_name(cluster)!r} has no clock control")
    return cluster


def _clock(cluster: object, name: str, clients: bool) -> ClockHandle:
    """A node's clock, or a client worker's (``harness.clients.clocks``) for a client target."""
    return client_clock(name) if clients else control(cluster).clock(name)


def on_clients(spec: FaultSpec) -> bool:
    """The fault moves clients' clocks (a client selector), not nodes'."""
    return isinstance(spec.target, ClientTarget)


def apply(cluster: object, spec: FaultSpec, nodes: Sequence[str]) -> dict[str, float]:
    """Jump or start drifting each node's (or client's) clock; the offset each holds now, seconds."""
    offsets: dict[str, float] = {}
    for name in nodes:
        clock = _clock(cluster, name, on_clients(spec))
        if spec.kind is FaultKind.CLOCK_JUMP:
            if clock.drifting():  # its stepper would overwrite the jump at its next step
                raise FaultError(f"{name}'s clock is drifting: heal the drift before a jump")
            clock.set_offset(float(spec.param("offset")))
        elif spec.kind is FaultKind.CLOCK_DRIFT:
            clock.start_drift(float(spec.param("rate")))
        else:  # pragma: no cover - the injector sends only clock kinds here
            raise FaultError(f"{spec.kind.cli} is not a clock fault")
        offsets[name] = clock.offset()
    return offsets


def heal(cluster: object, nodes: Sequence[str], clients: bool = False) -> dict[str, float]:
    """Each node's (``clients``: client's) clock back to +0, its drift stopped; the offset each
    had reached, seconds."""
    reached: dict[str, float] = {}
    for name in nodes:
        clock = _clock(cluster, name, clients)
        clock.stop_drift()
        reached[name] = clock.offset()
        clock.set_offset(0.0)
    return reached


def reset_all(cluster: ClusterBackend) -> None:
    """Every node's clock at +0 with no drift, whatever an interrupted run left (``heal_all``)."""
    clocks = control(cluster)
    for node in cluster.topo.nodes:
        clocks.clock(node.name).reset()
