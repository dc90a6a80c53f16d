"""Fewer passes of Python's cyclic garbage collector while records stream through.

Each record written makes short-lived objects that survive a while: a send's outcome callback
waits in the library (confluent-kafka holds up to 100,000 of them in its queue) and in the
harness's table of pending sends. With the default first-generation threshold (700
allocations), the collector runs every few hundred sends and walks all of those objects again
each time; measured on a 200,000-record produce through confluent-kafka's worker
(``benchmarks/client_throughput.py``): the worker's main thread used 2.7 s of CPU with the
defaults and 1.4 s with a threshold of 50,000, and the harness 1.6 s against 1.1 s. Reference
counting still frees every acyclic object at once; only cycles wait longer to be found.

``STREAMING`` is the threshold a worker process sets for its whole life and a run sets for its
workload phase (``streaming``), restored afterwards so the rest of a pytest session keeps the
interpreter's defaults.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: the first generation's threshold while records stream (the interpreter's default is 700)
STREAMING = 50_000


def set_streaming() -> None:
    """The streaming threshold for the rest of this process's life (a client worker)."""
    _, second, third = gc.get_threshold()
    gc.set_threshold(STREAMING, second, third)


@contextmanager
def streaming() -> Iterator[None]:
    """The streaming threshold for the block (a run's workload), the previous one after it."""
    before = gc.get_threshold()
    set_streaming()
    try:
        yield
    finally:
        gc.set_threshold(*before)
