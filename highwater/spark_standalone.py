"""A standalone Spark cluster on this machine's loopback, for ``highwater sweep --master`` to be
tried and measured where no Spark cluster exists (the integration test, the benchmark).

A master and workers started from the pyspark in this environment (``spark-class``), bound to
127.0.0.1 (``SPARK_LOCAL_IP`` binds the web UIs there too). They are ours as a Kafka cluster's
processes are: a directory under the cache's ``clusters/`` holds an owner lock and a registry
of the master and workers (``harness.procs``), so what a killed owner left is reaped by the next
start (``harness.lifecycle.reap_stale``, which every cluster start and this one call); they get
``PR_SET_PDEATHSIG`` too, so they die with their owner, and their executors with them (Spark's
worker watcher). Every process of the cluster, and everything it starts (executors, Python
workers, the runs), carries ``OWNER_ENV`` in its environment: ``owned_pids`` finds them all, and
the block does not end before they are gone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from highwater.harness.lifecycle import accepts_connection, address_free, pick_base_port, reap_stale
from highwater.harness.paths import clusters_dir
from highwater.harness.procs import OwnerLock, ProcessRegistry, is_zombie_or_gone, signal_and_wait, spawn
from highwater.harness.waiting import wait_until

OWNER_ENV = "HIGHWATER_SPARK_OWNER"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def owned_pids(owner: Path) -> list[int]:
    """Every live process (but this one) carrying ``owner``'s mark in its environment."""
    mark = f"{OWNER_ENV}={owner}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if mark in environ.split(b"\0") and not is_zombie_or_gone(int(entry.name)):
            found.append(int(entry.name))
    return found


def _free_port() -> int:
    return wait_until(
        lambda: p if address_free("127.0.0.1", (p := pick_base_port(1))) else None, 10, "a free port on 127.0.0.1"
    )


def _alive_workers(ui: str) -> int:
    with urllib.request.urlopen(f"{ui}/json/", timeout=5) as resp:
        return int(json.load(resp)["aliveworkers"])


@dataclass(frozen=True)
class Standalone:
    owner: Path  # the cluster's directory: lock, registry, logs, work directories
    url: str  # spark://127.0.0.1:PORT
    ui: str  # the master's web UI (JSON at /json/)
    env: dict[str, str]  # what the master and workers run with, the owner's mark included

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


@contextmanager
def standalone(workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[Standalone]:
    """A master and ``workers`` workers of ``cores`` cores each on 127.0.0.1, registered, and
    stopped (every process of it proven gone) however the block exits."""
    reap_stale()  # what a killed earlier owner left
    owner = clusters_dir() / f"spark-{uuid.uuid4().hex[:8]}"
    lock = OwnerLock(owner / "owner.lock")
    if not lock.try_acquire():
        raise RuntimeError(f"{owner} is someone else's")
    registry = ProcessRegistry(owner / "processes.json")
    port, ui_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(owner / "logs"),
        "SPARK_WORKER_DIR": str(owner / "work"),
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": f"-Dhighwater.owner={owner}",  # the registry's command-line marker
        "PYSPARK_PYTHON": sys.executable,
        OWNER_ENV: str(owner),
    }
    spark_class = str(spark_home() / "bin" / "spark-class")
    ui = f"http://127.0.0.1:{ui_port}"
    try:
        master = spawn(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
            + ["--port", str(port), "--webui-port", str(ui_port)],
            log_path=owner / "master.log",
            env=env,
        )
        registry.add("spark-master", master.pid, str(owner))
        wait_until(lambda: accepts_connection("127.0.0.1", port), 60, f"the Spark master on 127.0.0.1:{port}")
        for i in range(workers):
            worker = spawn(
                [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1"]
                + ["--cores", str(cores), "--memory", memory, "--webui-port", "0"]
                + ["--work-dir", str(owner / f"work-{i}"), f"spark://127.0.0.1:{port}"],
                log_path=owner / f"worker-{i}.log",
                env=env,
            )
            registry.add(f"spark-worker-{i}", worker.pid, str(owner))
        wait_until(
            lambda: _alive_workers(ui) == workers,
            60,
            lambda: f"{workers} Spark workers registered with the master (log: {owner / 'master.log'})",
        )
        yield Standalone(owner, f"spark://127.0.0.1:{port}", ui, env)
    finally:
        try:
            for rec in reversed(registry.load()):  # workers first: they stop their executors
                if rec.still_ours():
                    signal_and_wait(rec.pid, signal.SIGTERM, 20)
            registry.kill_all()
            wait_until(
                lambda: not owned_pids(owner), 60, lambda: f"no process of {owner.name} left: {owned_pids(owner)}"
            )
            shutil.rmtree(owner, ignore_errors=True)
        finally:
            lock.release()  # a directory left behind is reaped by the next start (its owner is gone)
