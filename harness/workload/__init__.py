"""Workloads on kafka-python that write a ``highwater.history/1`` history: producers,
consumers, a cluster observer (``meta`` events) and the final read of every replica's log."""

from .base import HistorySink, Worker
from .consumer import ConsumerConfig, ConsumerWorker
from .final_read import final_read
from .observer import ObserverWorker
from .producer import ProducerConfig, ProducerWorker

__all__ = ["HistorySink", "Worker", "ConsumerConfig", "ConsumerWorker", "final_read", "ObserverWorker",
           "ProducerConfig", "ProducerWorker"]
