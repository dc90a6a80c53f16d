"""Periodic ``meta`` events: leader, leader epoch, ISR, HW and per-replica LEO of each
partition, and on a tiered topic the leader's log start and local log start, as Kafka reports
them (see harness.observe).

This is observation, not a client under test: ``harness.observe.Observer`` speaks to the
brokers with kafka-python's admin and protocol classes whichever client driver
(``harness.clients``) the run's producers and consumers use."""

from __future__ import annotations

from highwater.harness.observe import Observer
from highwater.harness.security import PLAINTEXT, ClientSecurity

from .base import HistorySink, Worker


class ObserverWorker(Worker):
    def __init__(
        self,
        bootstrap: list[str],
        history: HistorySink,
        topic: str,
        partitions: int,
        interval: float = 1.0,
        name: str = "probe",
        security: ClientSecurity = PLAINTEXT,
        starts: bool = False,
    ) -> None:
        super().__init__(name, history)
        self.topic = topic
        #: observe each leader's log start and local log start too (a tiered topic's)
        self.starts = starts
        self.partitions = partitions
        self.interval = interval
        self._observer = Observer(bootstrap, client_id="highwater-probe", security=security)

    def run(self) -> None:
        partitions = list(range(self.partitions))
        while not self.stopping.is_set():
            # The metadata (leader, ISR) is read first, the offsets after it, and a frozen broker
            # can hold those reads for a request timeout: the events are written seconds later,
            # so they say when the observation began (``observed_ns``).
            began = self.history.clock_ns()
            try:
                states = self._observer.partition_states(self.topic, partitions, starts=self.starts)
            except Exception as exc:  # noqa: BLE001 - an observation that failed is recorded as such
                for p in partitions:
                    self.history.info(self.name, "meta", {"topic": self.topic, "partition": p}, error=exc)
            else:
                for state in states:
                    self.history.ok(self.name, "meta", {**state.to_event_value(), "observed_ns": began})
            self.stopping.wait(self.interval)  # the observation period

    def close(self) -> None:
        self._observer.close()
