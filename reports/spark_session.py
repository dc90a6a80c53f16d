"""One quiet SparkSession per report, always stopped, with progress on long steps.

The master URL comes only from the caller (``--master``; ``local[*]`` is the CLI's default),
so a nightly store can be aggregated on a real cluster with the same code. Locally the job must
share a 2-core machine with Kafka clusters, so: no UI, few shuffle partitions, log level WARN,
and the JVM is stopped in ``finally`` on every path, so no SparkSubmit outlives a report.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
_JAVA_OPTIONS = "-Dlog4j2.level=WARN"


def _shuffle_partitions(master: str) -> int:
    """Small for local runs (per-partition overhead dominates on a laptop); Spark's default
    elsewhere, where the cluster's size is unknown here."""
    if master.startswith("local"):
        inside = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
        if inside in ("*", ""):
            cores = os.cpu_count() or 2
        else:
            cores = int(inside.split(",")[0] or 1)
        return max(2, 2 * cores)
    return 200


@contextmanager
def spark_session(
    master: str, app_name: str = "highwater-report", driver_memory: str | None = None
) -> Iterator[SparkSession]:
    """A SparkSession for one report; stopped (JVM included) however the block exits."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # our own, quieter progress below
        .config("spark.sql.shuffle.partitions", str(_shuffle_partitions(master)))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        # The runs are listed from one local folder of symlinks: listing it in the driver takes
        # milliseconds, while the default (a Spark job above 32 paths) took ~10 s for 1,000 runs.
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
    )
    if master.startswith("local"):
        # Local mode talks only to itself: keep it on loopback instead of the host's address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # The driver JVM is the executor too. The throughput collector: these are batch
        # passes, no one waits on a pause, and G1's concurrent work competes for the 2 cores
        # (1,000-run benchmark: Spark passes 107 s with G1, 97 s with it).
        builder = (
            builder.config("spark.driver.extraJavaOptions", f"{_JAVA_OPTIONS} -XX:+UseParallelGC")
            .config("spark.driver.memory", driver_memory or "3g")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    else:
        builder = builder.config("spark.driver.extraJavaOptions", _JAVA_OPTIONS)
        if driver_memory:
            builder = builder.config("spark.driver.memory", driver_memory)
    spark = builder.getOrCreate()
    try:
        spark.sparkContext.setLogLevel("WARN")
        yield spark
    finally:
        spark.stop()
        stop_gateway()


def stop_gateway() -> None:
    """``SparkSession.stop`` leaves the py4j gateway's JVM (SparkSubmit) running until Python
    exits; a long-lived caller (pytest) would accumulate them, so shut it down too."""
    from pyspark import SparkContext

    gw = getattr(SparkContext, "_gateway", None)
    if gw is None:
        return
    proc = getattr(gw, "proc", None)
    try:
        gw.shutdown()
    except Exception as e:  # noqa: BLE001 - the JVM may already be gone; the wait below decides
        print(f"highwater report: py4j gateway shutdown: {e}", file=sys.stderr)
    if proc is not None:
        try:
            proc.stdin.close()  # SparkSubmit's PythonGatewayServer exits when stdin closes
            proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            proc.kill()
            proc.wait(timeout=10)
    SparkContext._gateway = None
    SparkContext._jvm = None


class Progress:
    """Step messages with elapsed time, and task counts of running Spark stages while a step
    takes longer than a few seconds (stage names alone say nothing to a user)."""

    def __init__(self, out: TextIO | None = None, interval: float = 5.0, enabled: bool = True):
        self.out = out or sys.stderr
        self.interval = interval
        self.enabled = enabled
        self.t0 = time.monotonic()

    def say(self, msg: str) -> None:
        if self.enabled:
            print(f"highwater report [{time.monotonic() - self.t0:6.1f}s] {msg}", file=self.out, flush=True)

    @contextmanager
    def step(self, name: str, spark: SparkSession | None = None) -> Iterator[None]:
        self.say(f"{name} ...")
        start = time.monotonic()
        stop = threading.Event()
        watcher = None
        if spark is not None and self.enabled:
            watcher = threading.Thread(target=self._watch, args=(spark, name, stop), daemon=True)
            watcher.start()
        try:
            yield
        finally:
            stop.set()
            if watcher is not None:
                watcher.join(timeout=2)
            self.say(f"{name}: done in {time.monotonic() - start:.1f}s")

    def _watch(self, spark: SparkSession, name: str, stop: threading.Event) -> None:
        tracker: Callable[[], object] = spark.sparkContext.statusTracker
        while not stop.wait(self.interval):
            st = tracker()
            parts = []
            try:
                for sid in st.getActiveStageIds():  # type: ignore[attr-defined]
                    info = st.getStageInfo(sid)  # type: ignore[attr-defined]
                    if info is not None:
                        parts.append(f"stage {sid}: {info.numCompletedTasks}/{info.numTasks} tasks")
            except Exception as e:  # noqa: BLE001 - the session may be stopping under us
                parts.append(f"(status unavailable: {e.__class__.__name__})")
            if parts:
                self.say(f"{name}: " + ", ".join(parts))
