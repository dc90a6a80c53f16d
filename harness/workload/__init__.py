"""Workloads that write a ``highwater.history/1`` history: producers and consumers over the
client under test (any driver of ``harness.clients``), a cluster observer (``meta`` events) and
the final read of every replica's log. The observer and the final read observe the cluster with
kafka-python's admin and protocol classes; they are instruments, not the client under test, and
stay the same whichever client a run tests."""

from .base import HistorySink, Worker
from .consumer import ConsumerConfig, ConsumerWorker
from .final_read import final_read
from .meta_events import ObserverWorker
from .producer import ProducerConfig, ProducerWorker

__all__ = [
    "HistorySink",
    "Worker",
    "ConsumerConfig",
    "ConsumerWorker",
    "final_read",
    "ObserverWorker",
    "ProducerConfig",
    "ProducerWorker",
]
