"""The share-group run (KIP-932, ``RunSpec.consumer_mode`` "share"): the consumers are the
members of one share group (``RunSpec.share_group_id``), each delivery and acknowledgement
recorded (``harness.workload.share``); its members release or reject a seeded share of their
deliveries on purpose."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from highwater.core.checks.verdict import Input
from highwater.core.history import HistoryWriter
from highwater.harness.backend import ClusterBackend
from highwater.harness.clients.share import ShareGroupError, ShareGroupSettings, ShareSettings, share_refusal
from highwater.harness.config import fast_failure_defaults
from highwater.harness.workload.share import (
    AckPolicy,
    GroupOwes,
    ShareConfig,
    ShareConsumerWorker,
    ShareLedger,
    record_share_state,
)
from highwater.modes.base import Consumer, Extras
from highwater.modes.plain import consumer_names
from highwater.run_spec import RunSpec


def share_group(spec: RunSpec, cluster: ClusterBackend) -> ShareGroupSettings:
    """The share group's settings: its group configs and the bounds the share checks read (the
    delivery limit is the brokers' ``group.share.delivery.count.limit``)."""
    group = spec.share_group_id()
    if group is None:
        raise ValueError(f"a share group needs consumer_mode 'share', not {spec.consumer_mode!r}")
    broker = {**fast_failure_defaults(cluster.spec.brokers), **dict(cluster.spec.broker_config)}
    return ShareGroupSettings(
        group,
        spec.topic,
        lock_ms=spec.share_lock_ms,
        session_ms=spec.share_session_ms,
        heartbeat_ms=min(1000, spec.share_session_ms // 3),
        delivery_limit=int(broker.get("group.share.delivery.count.limit", "5")),
    )


class Share(Extras):
    """One share group of the consumers, one member per broker rack."""

    def __init__(self, spec: RunSpec, cluster: ClusterBackend) -> None:
        self.spec = spec
        self.share = share_group(spec, cluster)
        #: what every record's deliveries settled to
        self.ledger = ShareLedger(self.share.delivery_limit)
        self._owes: GroupOwes | None = None

    def refuse(self, client: str, version: str, kafka: str) -> None:
        refused = share_refusal(client, version, kafka)
        if refused is not None:
            raise ShareGroupError(refused)

    def prepare(self, cluster: ClusterBackend) -> None:
        """Before a member joins: the group reads from the earliest record."""
        cluster.observer().set_group_config(self.share.group, self.share.group_configs())

    def consumers_header(self, racks: int) -> dict[str, dict[str, str | bool]]:
        return {
            name: {"isolation_level": self.spec.isolation_of(i, racks)} for i, name in enumerate(consumer_names(racks))
        }

    def header(self) -> dict[str, Any]:
        return {"share": self.share.header()}

    def inputs(self) -> set[Input]:
        return {Input.SHARE}

    def consumers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[Consumer]:
        spec = self.spec
        return [
            ShareConsumerWorker(
                f"consumer-{i}",
                cluster.bootstrap(rack),
                history,
                ShareConfig(spec.topic, self.share, AckPolicy(spec.share_release, spec.share_reject, seed or 0)),
                self.ledger,
                client=spec.client,
                security=cluster.client_security,
            )
            for i, rack in enumerate(cluster.topo.racks)
        ]

    @contextmanager
    def settling(self, cluster: ClusterBackend) -> Iterator[None]:
        """A lost answer to an applied acknowledgement: the group's state settles it (``GroupOwes``)."""
        state = ShareSettings(cluster.bootstrap(), "share-settle", self.share.group, security=cluster.client_security)
        self._owes = GroupOwes(
            self.spec.client, state, self.spec.topic, self.spec.partitions, 2 * self.share.lock_ms / 1000
        )
        try:
            yield
        finally:
            self._owes.close()
            self._owes = None

    def caught_up(self, topic: str, hws: list[int], consumers: Sequence[Consumer]) -> tuple[Callable[[], bool], str]:
        """Every record accepted or archived."""
        owes = self._owes
        return (
            lambda: self.ledger.settled_below(topic, hws) or (owes is not None and owes.nothing()),
            f"the share group has settled (accepted or archived) all {sum(hws)} records",
        )

    def record_state(self, cluster: ClusterBackend, history: HistoryWriter) -> None:
        """What the group's state says, after settling."""
        spec = self.spec
        record_share_state(
            history,
            spec.client,
            cluster.bootstrap(),
            self.share.group,
            spec.topic,
            spec.partitions,
            cluster.client_security,
        )
