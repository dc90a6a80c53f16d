"""The group run (``RunSpec.consumer_mode`` "subscribe"): the consumers are the members of
one group (``RunSpec.group_id``), in the classic protocol or KIP-848's (``group_protocol``),
their commits recorded; ``core.checks.groups`` judges them and the report's group measures
compare the protocols."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from highwater.core.checks.verdict import Input
from highwater.harness.backend import ClusterBackend
from highwater.harness.clients.groups import group_configs
from highwater.harness.workload import ConsumerWorker
from highwater.modes.base import Consumer
from highwater.modes.plain import Assign
from highwater.run_spec import RunSpec


class Group(Assign):
    """The consumers of ``Assign``, in one group."""

    def __init__(self, spec: RunSpec, protocols: tuple[str, ...] = ()) -> None:
        super().__init__(spec)
        self.group = spec.group_id()
        #: every protocol the members run on: the spec's, and those steps restart them on
        self.protocols = protocols or (spec.group_protocol,)

    def prepare(self, cluster: ClusterBackend) -> None:
        """A ``consumer``-protocol group's session timeout is a group config (KIP-848), set
        before any member joins on it (at the start, or migrated onto it by a step)."""
        if self.group is not None and "consumer" in self.protocols and self.spec.session_timeout_ms is not None:
            cluster.observer().set_group_config(self.group, group_configs(self.spec.session_timeout_ms))

    def inputs(self) -> set[Input]:
        return {Input.POLLS, Input.COMMITS}

    def caught_up(self, topic: str, hws: list[int], consumers: Sequence[Consumer]) -> tuple[Callable[[], bool], str]:
        """Each partition is read by one member at a time: per partition, not a sum of records
        read (a rebalance re-delivers what was read but not committed, and the duplicates would
        count for records still unread)."""
        members = [c for c in consumers if isinstance(c, ConsumerWorker)]
        return (
            (lambda: all(max((c.read_past(topic, p) for c in members), default=0) >= hw for p, hw in enumerate(hws))),
            f"the group has read every partition up to its high watermark ({sum(hws)} records)",
        )
