"""Run modes: what each kind of run does in the runner's phases (``base.RunMode``), one module
per mode. ``run_modes`` chooses a run's from its spec; ``highwater.runner`` only sequences the
phases. Adding a mode: docs/architecture.md, "Adding a run mode"."""

from __future__ import annotations

from highwater.harness.backend import ClusterBackend
from highwater.modes.base import ReaderMode, RunMode, Workload
from highwater.modes.copy import Copy
from highwater.modes.group import Group
from highwater.modes.plain import Assign, PlainProducers
from highwater.modes.share import Share
from highwater.modes.transactional import Transactional
from highwater.run_spec import RunSpec

__all__ = ["ReaderMode", "RunMode", "Workload", "run_modes"]


def run_modes(spec: RunSpec, cluster: ClusterBackend, group_protocols: tuple[str, ...] = ()) -> Workload:
    """``spec``'s modes on ``cluster`` (whose names its topics take): the consumers' by
    ``consumer_mode`` ("share", "subscribe", else assign), the producers' by ``transactional``,
    and a copy with ``copiers``. ``group_protocols``: every group protocol the run's members run
    on (``highwater.client_road``; default: the spec's)."""
    reader: ReaderMode
    if spec.consumer_mode == "share":
        reader = Share(spec, cluster)
    elif spec.consumer_mode == "subscribe":
        reader = Group(spec, group_protocols)
    else:
        reader = Assign(spec)
    writer: RunMode = Transactional(spec) if spec.transactional else PlainProducers(spec)
    return Workload(reader, writer, Copy(spec, cluster) if spec.copiers else None)
