"""The phases every run mode has, as ``highwater.runner`` sequences them (``RunMode``), and
what a run's consumers add to them (``ReaderMode``).

A run's workload is three parts (``Workload``), because its modes combine: how the consumers
read (``reader``: assign, a group in subscribe mode, a share group), how the producers write
(``writer``: plain or in transactions) and, optionally, an exactly-once copy beside them
(``copy``: copiers and the copy's reader). A transactional run can be a group run
(``coordinators-kill``), a copy runs beside plain or transactional producers and beside any
reader, so one mode chosen by precedence would lose what the others need; three slots, each
filled from the spec by ``highwater.modes.run_modes``, say every combination the spec can ask
for. Every part answers every phase (``Extras`` gives the phases a part has nothing to do in),
and the runner asks the parts in the order reader, writer, copy: the consumers of the header
and of the cast come before the copy's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from highwater.core.checks.verdict import Input
from highwater.core.history import HistoryWriter
from highwater.harness.backend import ClusterBackend
from highwater.harness.workload import ConsumerWorker, ProducerWorker
from highwater.harness.workload.copy import CopyWorker
from highwater.harness.workload.share import ShareConsumerWorker

#: a consumer-side process of the history: a consumer, a share group's member, a copier
Consumer = ConsumerWorker | CopyWorker | ShareConsumerWorker

#: the order of the inputs a history's header promises (``core.checks.PROMISED_KEY``)
INPUT_ORDER = (
    Input.RACKS,
    Input.SENDS,
    Input.POLLS,
    Input.SHARE,
    Input.META,
    Input.FINAL_READS,
    Input.TXNS,
    Input.COMMITS,
)

#: a feature the run holds: feature name -> (the header's key, the level the run asks for; None:
#: as the cluster has it)
Features = dict[str, tuple[str, int | None]]


class RunMode(Protocol):
    """One part of a run's workload, in the runner's phases (docs/architecture.md, "A run")."""

    #: its records include transaction markers and aborted records, which take offsets no
    #: read_committed consumer returns: settling waits until the reads stand still instead of
    #: until they reach the high watermarks
    writes_transactions: bool

    def refuse(self, client: str, version: str, kafka: str) -> None:
        """Phase 1: raise, in one line, when the client or the release lacks what this mode needs."""
        ...

    def topics(self) -> list[str]:
        """The topics it writes besides the run's own: created as it is, read at the end."""
        ...

    def prepare(self, cluster: ClusterBackend) -> None:
        """Phase 2: the group configs, set before a member joins."""
        ...

    def features(self, kafka_version: str) -> Features:
        """Phase 2: the cluster features the run holds for this mode (restored after it)."""
        ...

    def consumers_header(self, racks: int) -> dict[str, dict[str, str | bool]]:
        """The header's ``config.consumers`` entries of its consumer-side processes."""
        ...

    def header(self) -> dict[str, Any]:
        """Its entries of the header's config (what its checks read)."""
        ...

    def inputs(self) -> set[Input]:
        """The inputs it records besides every run's (racks, sends, meta, final reads)."""
        ...

    def producers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[ProducerWorker]:
        """Phase 3's producers of this mode (not started yet)."""
        ...

    def consumers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[Consumer]:
        """Phase 3's consumer-side processes of this mode (not started yet)."""
        ...

    def settling(self, cluster: ClusterBackend) -> AbstractContextManager[None]:
        """Phase 4: what it holds open while the run settles."""
        ...

    def record_state(self, cluster: ClusterBackend, history: HistoryWriter) -> None:
        """Phase 4, after settling and stopping the consumers: what the cluster's state says,
        into the history (before the final read)."""
        ...


class ReaderMode(RunMode, Protocol):
    """How a run's consumers read: also what 'caught up' means for them when settling."""

    def caught_up(self, topic: str, hws: list[int], consumers: Sequence[Consumer]) -> tuple[Callable[[], bool], str]:
        """Whether the consumers have read everything up to the high watermarks ``hws``, and
        what the settle wait says it waits for."""
        ...


class Extras:
    """The phases a mode has nothing to do in: a mode inherits this and writes only its own."""

    writes_transactions = False

    def refuse(self, client: str, version: str, kafka: str) -> None:
        return None

    def topics(self) -> list[str]:
        return []

    def prepare(self, cluster: ClusterBackend) -> None:
        return None

    def features(self, kafka_version: str) -> Features:
        return {}

    def consumers_header(self, racks: int) -> dict[str, dict[str, str | bool]]:
        return {}

    def header(self) -> dict[str, Any]:
        return {}

    def inputs(self) -> set[Input]:
        return set()

    def producers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[ProducerWorker]:
        return []

    def consumers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[Consumer]:
        return []

    @contextmanager
    def settling(self, cluster: ClusterBackend) -> Iterator[None]:
        yield

    def record_state(self, cluster: ClusterBackend, history: HistoryWriter) -> None:
        return None


@dataclass(frozen=True)
class Workload:
    """A run's modes: how its consumers read, how its producers write, and its copy if any."""

    reader: ReaderMode
    writer: RunMode
    copy: RunMode | None = None

    @property
    def parts(self) -> list[RunMode]:
        """Every part, in the order the runner asks them: reader, writer, copy."""
        return [self.reader, *self.writers]

    @property
    def writers(self) -> list[RunMode]:
        """The parts that write: the producers' mode and the copy."""
        return [self.writer, *([self.copy] if self.copy is not None else [])]

    @property
    def writes_transactions(self) -> bool:
        return any(m.writes_transactions for m in self.parts)
