"""Refusing, before a run starts, a fault the backend cannot apply.

Every fault kind declares the capability it needs (``FaultKind.capability``: link faults need
:class:`~harness.backend.LinkControl`, process faults :class:`~harness.backend.ProcessControl`).
:func:`check_capabilities` is pure: it looks only at the backend's type (the runtime-checkable
protocols), never at the cluster, and raises one line naming the fault and the backend::

    fault 'cut' needs link control, which backend 'external' does not have

A nemesis (``highwater.nemesis``) declares the kinds it may apply (:class:`DeclaresFaults`), so
the runner checks them before the workload starts; :meth:`faults.inject.Injector.apply` checks
each fault again, for nemeses that declare nothing and for ``highwater fault apply``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from highwater.faults.common import FaultError
from highwater.faults.spec import FaultKind, FaultSpec
from highwater.faults.target import TargetKind
from highwater.harness.backend import Capability, backend_name, has_capability


class CapabilityError(FaultError):
    """A fault needs a capability the backend does not have."""


@runtime_checkable
class DeclaresFaults(Protocol):
    """A nemesis that says up front which fault kinds it may apply."""

    @property
    def fault_kinds(self) -> tuple[FaultKind, ...]: ...


def declared_faults(nemesis: object) -> tuple[FaultKind, ...]:
    """The fault kinds ``nemesis`` declares (none for a plain function)."""
    return tuple(nemesis.fault_kinds) if isinstance(nemesis, DeclaresFaults) else ()


def refusal(backend: object, faults: Iterable[FaultKind | FaultSpec]) -> CapabilityError | None:
    """The error for the first fault ``backend`` cannot apply, or None if it can apply all."""
    for fault in faults:
        kind = fault.kind if isinstance(fault, FaultSpec) else fault
        need = kind.capability
        if need is None:
            continue  # client workers are processes of ours on every backend; Admin API calls work on any
        if not has_capability(backend, need):
            hint = " (a local cluster has it when started with ClusterSpec(disk='lossy'))" if kind.is_disk else ""
            if kind.is_clock:
                hint = " (a local cluster has it when started with ClusterSpec(clock='faked'))"
            return CapabilityError(
                f"fault {kind.cli!r} needs {need.value}, which backend {backend_name(backend)!r} does not have{hint}"
            )
        if isinstance(fault, FaultSpec) and fault.target.kind is TargetKind.STORE and not _store_faultable(backend):
            return CapabilityError(
                f"fault {kind.cli!r} --target store needs a tiered cluster whose disks are lossy "
                f"(ClusterSpec(tiered=True, disk='lossy'): its remote store on lossyfs); {backend_name(backend)!r}'s is not"
            )
    return None


def _store_faultable(backend: object) -> bool:
    """The backend's cluster tiers and mounted its disks, the remote store's too, on lossyfs."""
    spec = getattr(backend, "spec", None)
    return bool(getattr(spec, "tiered", False)) and has_capability(backend, Capability.DISK_CONTROL)


def check_capabilities(backend: object, faults: Iterable[FaultKind | FaultSpec]) -> None:
    """Raise :class:`CapabilityError` (one line) if ``backend`` lacks what a fault needs."""
    error = refusal(backend, faults)
    if error is not None:
        raise error
