"""The backends by name: the registry above them (``--backend NAME``), apart from the protocols
of ``harness.backend`` that every backend implements and imports. Each backend's module is
imported only when it is started or attached, so a missing extra (the docker SDK of the compose
backend) costs nothing to the others, and no backend module imports this one.

A backend is an entry (``BackendEntry``): how to start a cluster of a ``ClusterSpec`` and, for
one kept up by ``highwater cluster up``, how to attach to it again."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from highwater.core.errors import HighwaterError
from highwater.core.progress import Progress
from highwater.harness.backend import ClusterBackend
from highwater.harness.clock import find_libfaketime
from highwater.harness.config import ClusterSpec

DEFAULT_BACKEND = "local"


class BackendError(HighwaterError, ValueError):
    """An unknown backend name, or a backend asked for something it cannot do."""


@dataclass(frozen=True)
class BackendEntry:
    name: str
    description: str
    #: start (or connect to) a cluster of ``spec``; returns it ready for clients
    start: Callable[[ClusterSpec, Progress | None], ClusterBackend]
    #: a handle on a cluster this backend keeps up in another process (``highwater cluster up``
    #: then ``highwater fault``), from the directory it recorded; None: cannot be kept up
    attach: Callable[[Path, Progress | None], ClusterBackend] | None = None
    #: applies ``ClusterSpec.broker_cpus``/``broker_memory``; a backend that cannot refuses them
    resource_limits: bool = False
    #: can put the nodes' log directories on lossyfs (``ClusterSpec.disk="lossy"``, disk faults)
    lossy_disks: bool = False
    #: can start the node JVMs on libfaketime (``ClusterSpec.clock="faked"``, clock faults)
    faked_clocks: bool = False
    #: can give its nodes a shared remote store directory (``ClusterSpec.tiered``, KIP-405)
    tiered_storage: bool = False

    def check_spec(self, spec: ClusterSpec) -> None:
        """A one-line :class:`BackendError` for what this backend cannot run (before any I/O)."""
        if spec.has_limits and not self.resource_limits:
            raise BackendError(f"cpu/memory limits need the compose backend (backend {self.name!r} cannot apply them)")
        if spec.disk != "plain" and not self.lossy_disks:
            raise BackendError(
                f"disk {spec.disk!r} (the disk fault layer) needs the local backend: backend {self.name!r} "
                "cannot mount it into its brokers"
            )
        if spec.clock != "real" and not self.faked_clocks:
            raise BackendError(
                f"clock {spec.clock!r} (the clock fault layer, libfaketime) needs the local backend: "
                f"backend {self.name!r} cannot preload it into its brokers"
            )
        if spec.clock == "faked":
            find_libfaketime()  # a missing library: one line (ClockError), before anything starts
        if spec.tiered and not self.tiered_storage:
            raise BackendError(
                f"tiered storage needs the local backend: backend {self.name!r} cannot give its brokers "
                "a shared remote store directory"
            )


_REGISTRY: dict[str, BackendEntry] = {}


def register_backend(entry: BackendEntry) -> None:
    _REGISTRY[entry.name] = entry


def backend_names() -> Sequence[str]:
    return sorted(_REGISTRY)


def get_backend(name: str) -> BackendEntry:
    """The entry for ``name``, or a one-line :class:`BackendError` naming the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise BackendError(f"unknown backend {name!r} (known: {', '.join(backend_names())})") from None


def start_backend(name: str, spec: ClusterSpec, progress: Progress | None = None) -> ClusterBackend:
    entry = get_backend(name)
    entry.check_spec(spec)
    return entry.start(spec, progress)


def _start_local(spec: ClusterSpec, progress: Progress | None) -> ClusterBackend:
    from .local.cluster import Cluster

    return Cluster(spec, progress).start()


def _attach_local(cluster_dir: Path, progress: Progress | None) -> ClusterBackend:
    from .local.cluster import Cluster

    return Cluster.attach(cluster_dir, progress)


register_backend(
    BackendEntry(
        "local",
        "KRaft nodes as local JVMs from Maven jars, every link behind its own Toxiproxy proxy",
        _start_local,
        _attach_local,
        lossy_disks=True,
        faked_clocks=True,
        tiered_storage=True,
    )
)


def _start_compose(spec: ClusterSpec, progress: Progress | None) -> ClusterBackend:
    from .compose.backend import start_compose  # imports the docker SDK: only when asked for

    return start_compose(spec, progress)


def _attach_compose(cluster_dir: Path, progress: Progress | None) -> ClusterBackend:
    from .compose.backend import ComposeCluster

    return ComposeCluster.attach(cluster_dir, progress)


register_backend(
    BackendEntry(
        "compose",
        "the same model in containers (docker SDK, host networking on 127.x, a Toxiproxy container)",
        _start_compose,
        _attach_compose,
        resource_limits=True,
    )
)


def _start_external(spec: ClusterSpec, progress: Progress | None) -> ClusterBackend:
    from .external import connect

    return connect(spec, progress)


register_backend(
    BackendEntry(
        "external",
        "a cluster highwater did not start, described by --cluster-file (docs/external-clusters.md)",
        _start_external,
    )
)
