"""The plain run: consumers in assign mode (each reads every partition of the topic, one per
broker rack) and producers that send one record at a time, each outcome recorded."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from highwater.core.checks.verdict import Input
from highwater.core.history import HistoryWriter
from highwater.harness.backend import ClusterBackend
from highwater.harness.workload import ConsumerConfig, ConsumerWorker, ProducerConfig, ProducerWorker
from highwater.harness.workload.base import ConsumersGone
from highwater.modes.base import Consumer, Extras
from highwater.run_spec import RunSpec


def consumer_names(racks: int) -> list[str]:
    """The consumers' names, one per broker rack (the names the header's racks give them too)."""
    return [f"consumer-{i}" for i in range(racks)]


class Assign(Extras):
    """Consumers in assign mode (``RunSpec.consumer_mode`` "assign"): no group; each reads
    every partition, so each has caught up once it has read every record."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        #: the consumers' group (``Group``'s); None: no group
        self.group: str | None = None

    def inputs(self) -> set[Input]:
        return {Input.POLLS}

    def consumers_header(self, racks: int) -> dict[str, dict[str, str | bool]]:
        """Each consumer's isolation level, and its group when it has one."""
        out: dict[str, dict[str, str | bool]] = {}
        for i, name in enumerate(consumer_names(racks)):
            own: dict[str, str | bool] = {"isolation_level": self.spec.isolation_of(i, racks)}
            if self.group is not None:
                own["group"] = self.group
            out[name] = own
        return out

    def consumers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[Consumer]:
        """One consumer per broker rack, through its rack's bootstrap servers, ``client.rack`` set
        unless the spec turns it off (``RunSpec.client_rack``)."""
        spec, racks = self.spec, cluster.topo.racks
        return [
            ConsumerWorker(
                f"consumer-{i}",
                cluster.bootstrap(rack),
                history,
                ConsumerConfig(
                    spec.topic,
                    spec.partitions,
                    mode=spec.consumer_mode,
                    client_rack=rack if spec.client_rack else None,
                    group_id=self.group,
                    isolation_level=spec.isolation_of(i, len(racks)),
                    max_poll_records=spec.max_poll_records,
                    session_timeout_ms=spec.session_timeout_ms,
                    group_protocol=spec.group_protocol,
                    group_remote_assignor=spec.group_remote_assignor,
                    preferred_replica_recheck_ms=spec.preferred_replica_recheck_ms,
                ),
                client=spec.client,
                security=cluster.client_security,
            )
            for i, rack in enumerate(racks)
        ]

    def caught_up(self, topic: str, hws: list[int], consumers: Sequence[Consumer]) -> tuple[Callable[[], bool], str]:
        """Every consumer returned a record at each partition's high watermark less one: by
        position, not by count (a consumer that retention moved past deleted records never
        returns them, one that re-read returns some twice). A consumer still behind whose client
        worker died with no restart asked for (``Worker.gone_for_good``: a library that crashed)
        never will be: ``ConsumersGone``, so the wait ends at once, not at its timeout."""
        readers = [c for c in consumers if isinstance(c, ConsumerWorker)]

        def done() -> bool:
            behind = [c for c in readers if any(c.read_past(topic, p) < hw for p, hw in enumerate(hws))]
            gone = [c.name for c in behind if c.gone_for_good()]
            if gone:
                raise ConsumersGone(f"the client workers of {', '.join(gone)} exited and no restart is asked for")
            return not behind

        return done, f"every consumer has read up to the high watermarks {hws}"


def producer_config(spec: RunSpec) -> ProducerConfig:
    """What every producer of the run sends, and how fast."""
    return ProducerConfig(
        spec.topic,
        spec.partitions,
        spec.acks,
        spec.idempotence,
        spec.rate,
        value_size=spec.value_size,
        linger_ms=spec.linger_ms,
        max_in_flight=spec.max_in_flight,
    )


class PlainProducers(Extras):
    """Producers without transactions (``RunSpec.transactional`` off), without a rack: they
    always write to the leader."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec

    def producers(self, cluster: ClusterBackend, history: HistoryWriter, seed: int | None) -> list[ProducerWorker]:
        config = producer_config(self.spec)
        return [
            ProducerWorker(
                f"producer-{i}",
                cluster.bootstrap(),
                history,
                config,
                client=self.spec.client,
                security=cluster.client_security,
            )
            for i in range(self.spec.producers)
        ]
