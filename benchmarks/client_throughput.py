#!/usr/bin/env python3
"""How fast do the clients go through highwater's drivers, next to Kafka's own perf tools?

On one 3-broker cluster (local backend, 3 racks, every link through Toxiproxy), each run
produces N records (acks=all) to a fresh RF=3 topic of 3 partitions and reads them back:

  - with Kafka's ``kafka-producer-perf-test`` / ``kafka-consumer-perf-test``
    (``org.apache.kafka.tools.ProducerPerformance`` / ``ConsumerPerformance``, run with Java on
    the Kafka distribution's classpath plus the ``kafka-tools`` jar, which the distribution
    lacks: fetched once from Maven Central into ``~/.cache/highwater/perf-tools/<version>/``);
  - with every client of ``harness.clients.client_names()`` whose driver can be made, through
    the ``ProducerDriver`` / ``ConsumerDriver`` protocols (what a run's workers use).

Both sides get highwater's workload settings (acks=all, no idempotence hence one request in
flight, linger 2 ms, retries 3; consumer: 500 records per poll, fetch wait 500 ms) and connect
through the no-rack clients' proxies. Timed: producing from the first send until every outcome
is in (the tool: its own "records/sec"); consuming from the first poll after assign + seek to
the beginning until N records (the tool: ``fetch.nMsg.sec``, which leaves out its group join).
Prints every run, then medians and the ratio highwater / perf tool per client (the goal: no
worse than 0.5, i.e. within 2x). The Python libraries are also measured alone (``<client> bare``
rows: the same settings, no worker, no driver, no history; ``--no-bare`` skips them; only for
the version installed with highwater, as they run in this interpreter; kafkajs too), produce and consume, and
a last table gives each client through its worker / the bare library (the goal: >= 0.8): what
highwater adds, apart from what the library costs. Keep N large enough (default 200,000) that
connecting and the first fetch do not dominate: librdkafka fetches up to 100,000 records per
partition ahead of the application (``queued.min.messages``), so at 50,000 records a bare
confluent-kafka consumer reads from its own queue and its rate mostly measures how soon the
fetches began. The Java client (``java``) runs in
highwater's JVM worker (``harness.clients.java``), so its figures include the worker's JSON-lines
protocol (a line per send and per outcome, every polled record encoded by the JVM and decoded by
Python) and a fresh JVM per producer and consumer, which maps the worker's class archive
(``harness.clients.java_archive``) once the first worker of its role made it: the first run of
a fresh cache trains it and is slower. kafkajs (``kafkajs``) runs in highwater's Node.js worker
(``clients/node``); its bare rows run ``benchmarks/node_bare.js`` on the same kafkajs tree
(its consume figure includes connecting and a group join on both sides: kafkajs has no assign,
and the worker's consumer connects at its first poll, so the bare side's clock starts before it
connects). @confluentinc/kafka-javascript (``ckjs``) runs in its own Node.js worker and is
measured bare by the same script through its kafkajs-compatible API (``"library": "ckjs"``).
franz-go (``franz-go``) and Sarama (``sarama``) run in highwater's Go workers (``clients/go``);
their bare rows, at any version, run a small Go program of each with its worker's settings
(``benchmarks/go_bare/franz``, ``benchmarks/go_bare/sarama``), built against the version measured
as the worker is (a copy, ``go mod edit -require``, ``go mod tidy``, ``go build``), once per
version, into ``~/.cache/highwater/go-bare/<library>/<version>/``.

Every round measures each client through its worker and then alone, one after the other on one
cluster (interleaved): the bare rate of a library swings by 2-3x within a session on a shared
2-core machine, so the last table also gives the median of the per-round ratios, which pairs
each worker figure with the bare figure measured next to it. ``--only produce`` (or
``consume``) and ``--no-tool`` leave out what a question does not need, for more rounds in the
time; ``--cpu`` prints the CPU each thread of the harness and of the worker used during each
produce and each consume (``/proc/<pid>/task``), a bare Node.js or Go process's own (the program
measures its timed part), and the whole machine's busy and idle seconds (``/proc/stat``: the
brokers and proxies too): where the time went, and whether the two cores had any to spare.

    .venv/bin/python benchmarks/client_throughput.py [--records 200000] [--runs 3]
        [--value-bytes 100] [--clients kafka-python,java] [--kafka-version V] [--no-bare]
        [--only produce|consume] [--no-tool] [--cpu]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from highwater.harness.backend import ClusterBackend
from highwater.harness.backends import start_backend  # noqa: E402
from highwater.harness.client_common import installed_version  # noqa: E402
from highwater.harness.clients import (  # noqa: E402
    ClientDriver,
    ConsumerSettings,
    PositionChange,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    TruncationSignal,
    client_label,
    client_names,
    get_driver,
)
from highwater.harness.clients.base import send_batch  # noqa: E402
from highwater.harness.clients.ckjs import ensure_tree as ckjs_tree  # noqa: E402
from highwater.harness.clients.franz_go import WORKER as FRANZ_GO_WORKER  # noqa: E402
from highwater.harness.clients.go_worker import GoWorker, build_module, exact_version, find_go  # noqa: E402
from highwater.harness.clients.kafkajs import ensure_tree, find_node  # noqa: E402
from highwater.harness.clients.sarama import WORKER as SARAMA_WORKER  # noqa: E402
from highwater.harness.config import ClusterSpec  # noqa: E402
from highwater.harness.distribution import default_version, ensure_kafka  # noqa: E402
from highwater.harness.gcpasses import streaming  # noqa: E402
from highwater.harness.java_runtime import find_java  # noqa: E402
from highwater.harness.paths import home  # noqa: E402

PARTITIONS = 3
TOOL = "kafka perf tools"
#: the same settings as the drivers get (highwater's producer workload defaults)
TOOL_PRODUCER_PROPS = {
    "acks": "all",
    "enable.idempotence": "false",
    "max.in.flight.requests.per.connection": "1",
    "retries": "3",
    "request.timeout.ms": "5000",
    "delivery.timeout.ms": "20000",
    "linger.ms": "2",
}
TOOL_CONSUMER_PROPS = {"max.poll.records": "500", "fetch.max.wait.ms": "500", "auto.offset.reset": "earliest"}
TOOL_TIMEOUT_S = 300.0
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int | str) -> dict[str, float]:
    """CPU seconds (user + system) of each thread of process ``pid`` (``"self"``: this one), by
    ``<thread name>/<tid>``; a thread that ended is not listed."""
    out: dict[str, float] = {}
    root = Path(f"/proc/{pid}/task")
    for task in root.iterdir() if root.is_dir() else ():
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        out[f"{name}/{task.name}"] = (int(fields[11]) + int(fields[12])) * _TICK_S
    return out


def machine_busy() -> tuple[float, float]:
    """The whole machine's busy and idle CPU seconds so far (``/proc/stat``, every core)."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields) - idle) * _TICK_S, idle * _TICK_S


def print_machine(before: tuple[float, float]) -> None:
    """How busy the machine was since ``before``: the brokers, the proxies and everything else too."""
    busy, idle = (a - b for a, b in zip(machine_busy(), before))
    print(f"      cpu machine: {busy:.2f} s busy, {idle:.2f} s idle", flush=True)


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0) > 0.005}


def print_cpu(label: str, spent: dict[str, float]) -> None:
    """One line: the total and the threads that used most, in CPU seconds."""
    top = sorted(spent.items(), key=lambda kv: -kv[1])[:6]
    threads = ", ".join(f"{k} {v:.2f}" for k, v in top)
    print(f"      cpu {label}: {sum(spent.values()):.2f} s ({threads})", flush=True)


#: set by ``--cpu``: print each produce's CPU per thread
SHOW_CPU = False


def ensure_perf_tools(version: str) -> Path:
    """The ``kafka-tools`` jar of ``version`` (ProducerPerformance, ConsumerPerformance), fetched
    once with Maven into the cache (its dependencies are on the broker distribution's path)."""
    root = home() / "perf-tools" / version
    jar = root / f"kafka-tools-{version}.jar"
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if not mvn:
        raise SystemExit("benchmark: Maven (mvn) not found: it fetches org.apache.kafka:kafka-tools")
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent) as tmp:
        res = subprocess.run(
            [
                mvn,
                "-B",
                "-q",
                "dependency:copy",
                f"-Dartifact=org.apache.kafka:kafka-tools:{version}",
                f"-DoutputDirectory={tmp}",
            ],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=600,
        )
        got = Path(tmp) / jar.name
        if res.returncode != 0 or not got.is_file():
            raise SystemExit(f"benchmark: Maven could not fetch kafka-tools {version}: {res.stdout[-300:]}")
        root.mkdir(parents=True, exist_ok=True)
        got.replace(jar)  # atomic: a half-fetched jar is never seen
    return jar


@dataclass
class PerfTools:
    """Kafka's perf tools, run as ``java -cp <distribution>:<kafka-tools> <class>``."""

    java: str
    classpath: str

    def _run(self, cls: str, args: list[str]) -> str:
        cmd = [self.java, "-Xmx256m", "-cp", self.classpath, f"org.apache.kafka.tools.{cls}", *args]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
        if res.returncode != 0:
            raise RuntimeError(f"{cls} exited {res.returncode}: {(res.stderr or res.stdout)[-400:]}")
        return res.stdout

    def produce(self, bootstrap: str, topic: str, records: int, size: int) -> float:
        """records/s as ProducerPerformance reports it (its final summary line)."""
        props = [f"{k}={v}" for k, v in {"bootstrap.servers": bootstrap, **TOOL_PRODUCER_PROPS}.items()]
        out = self._run(
            "ProducerPerformance",
            ["--topic", topic, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1"]
            + ["--producer-props", *props],
        )
        found = re.findall(rf"^{records} records sent, ([\d.]+) records/sec", out, re.M)
        if not found:
            raise RuntimeError(f"ProducerPerformance printed no summary: {out[-300:]}")
        return float(found[-1])

    def consume(self, bootstrap: str, topic: str, records: int) -> float:
        """``fetch.nMsg.sec`` of ConsumerPerformance (records/s after its group join)."""
        with tempfile.NamedTemporaryFile("w", suffix=".properties") as cfg:
            cfg.write("".join(f"{k}={v}\n" for k, v in TOOL_CONSUMER_PROPS.items()))
            cfg.flush()
            out = self._run(
                "ConsumerPerformance",
                ["--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records)]
                + ["--consumer.config", cfg.name, "--timeout", "30000", "--group", f"perf-{topic}"],
            )
        lines = [ln for ln in out.splitlines() if ln.count(",") >= 9]
        if len(lines) < 2 or "fetch.nMsg.sec" not in lines[0]:
            raise RuntimeError(f"ConsumerPerformance printed no stats: {out[-300:]}")
        row = dict(zip((h.strip() for h in lines[0].split(",")), (v.strip() for v in lines[1].split(", "))))
        if int(row["data.consumed.in.nMsg"]) < records:
            raise RuntimeError(f"ConsumerPerformance read {row['data.consumed.in.nMsg']} of {records} records")
        return float(row["fetch.nMsg.sec"])


class _NoMoves:
    """A consumer listener: the benchmark assigns and seeks itself, moves are not recorded."""

    def on_position_change(self, change: PositionChange) -> None:
        pass


def bench_producer_settings(bootstrap: list[str], topic: str) -> ProducerSettings:
    """highwater's producer workload defaults (``ProducerConfig``), as the drivers get them."""
    return ProducerSettings(
        bootstrap=bootstrap,
        client_id=f"bench-{topic}",
        acks="all",
        idempotence=False,
        retries=3,
        request_timeout_ms=5000,
        delivery_timeout_ms=20000,
        linger_ms=2,
        max_in_flight=1,
    )


class _Counted:
    """The outcomes of a benchmark's sends, counted (``BatchOutcomes``): ``done`` once all are in."""

    def __init__(self, records: int) -> None:
        self.records = records
        self.outcomes: dict[str, int] = {}
        self.done = threading.Event()
        self._lock = threading.Lock()

    def _count(self, outcome: str, n: int) -> None:
        with self._lock:
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + n
            if sum(self.outcomes.values()) == self.records:
                self.done.set()

    def acked(self, indexes: Sequence[int], offsets: Sequence[int]) -> None:
        self._count("ok", len(indexes))

    def ended(self, index: int, outcome: SendOutcome) -> None:
        self._count(outcome.outcome.value, 1)


def driver_produce(driver: ClientDriver, bootstrap: list[str], topic: str, records: int, size: int) -> float:
    """records/s through the driver: from the first send until every outcome arrived. The
    sends are handed over as one batch (``send_batch``), as the producer workload hands over
    every send that is due at once, and as the bare library is given them in one loop."""
    values = [f"v{i}:".ljust(size, ".") for i in range(records)]
    partitions = [i % PARTITIONS for i in range(records)]
    counted = _Counted(records)
    producer = driver.producer(bench_producer_settings(bootstrap, topic))
    pid = getattr(getattr(producer, "process", None), "pid", None)  # a worker's
    try:
        own, theirs, machine = thread_cpu("self"), thread_cpu(pid) if pid else {}, machine_busy()
        t0 = time.monotonic()
        send_batch(producer, topic, partitions, values, counted)
        producer.flush(60.0)
        if not counted.done.wait(60.0):
            raise RuntimeError(f"only {sum(counted.outcomes.values())} of {records} outcomes within 60 s after flush")
        elapsed = time.monotonic() - t0
        if SHOW_CPU:
            print_cpu("harness", cpu_delta(own, thread_cpu("self")))
            if pid:
                print_cpu("worker", cpu_delta(theirs, thread_cpu(pid)))
            print_machine(machine)
    finally:
        producer.close(10.0)
    if counted.outcomes.get("ok", 0) != records:
        raise RuntimeError(f"outcomes {counted.outcomes}: not every send was acknowledged")
    return records / elapsed


def driver_consume(driver: ClientDriver, bootstrap: list[str], topic: str, records: int) -> float:
    """records/s through the driver: from the first poll (after assign and seek to the log
    start) until ``records`` records came back."""
    consumer = driver.consumer(ConsumerSettings(bootstrap=bootstrap, client_id=f"bench-c-{topic}"), _NoMoves())
    pid = getattr(getattr(consumer, "process", None), "pid", None)  # a worker's
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek_to_beginning(tp)
        got = 0
        own, theirs, machine = thread_cpu("self"), thread_cpu(pid) if pid else {}, machine_busy()
        t0 = time.monotonic()
        deadline = t0 + 120.0
        while got < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"read {got} of {records} records within 120 s")
            polled = consumer.poll(500)
            if isinstance(polled, TruncationSignal):
                raise RuntimeError(f"truncation detected on a fresh topic: {polled}")
            got += len(polled)
        elapsed = time.monotonic() - t0
        if SHOW_CPU:
            print_cpu("harness", cpu_delta(own, thread_cpu("self")))
            if pid:
                print_cpu("worker", cpu_delta(theirs, thread_cpu(pid)))
            print_machine(machine)
    finally:
        consumer.close()
    return got / elapsed


def _bare_process(cmd: list[str], runtime: str, env: dict[str, str] | None = None) -> float:
    """records/s of a bare program (``node_bare.js``, a ``go_bare`` program): one JSON line out,
    ``{"rate", "cpu", "machine"}``; when it fails, its first line of error (then a stack, if any)."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0:
        # the program's one line of error first, then the stack
        raise RuntimeError((done.stderr.strip().splitlines() or ["(no output)"])[0])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if SHOW_CPU:  # the program measures its timed part itself: the process's start is not in it
        print(f"      cpu bare: {result['cpu']:.2f} s ({runtime})", flush=True)
        if result.get("machine"):
            busy, idle = result["machine"]
            print(f"      cpu machine: {busy:.2f} s busy, {idle:.2f} s idle", flush=True)
    return float(result["rate"])


def node_bare(library: str, version: str, args: dict[str, Any]) -> float:
    """records/s of the Node.js ``library`` (kafkajs, ckjs) at ``version`` alone
    (``benchmarks/node_bare.js``, on the cache's tree of that version): the worker's settings, no
    worker protocol, no history."""
    node, _ = find_node()
    tree = ckjs_tree(version) if library == "ckjs" else ensure_tree(version)
    env = {**os.environ, "NODE_PATH": str(tree)}
    env.pop("NODE_ENV", None)  # as for the worker: "test" loads other retry defaults
    script = str(Path(__file__).with_name("node_bare.js"))
    return _bare_process([node, script, json.dumps({**args, "library": library})], "node", env)


#: each Go library's bare program (a folder of ``GO_BARE``) and worker (its module, its versions)
_GO_BARE: dict[str, tuple[str, GoWorker]] = {
    "franz-go": ("franz", FRANZ_GO_WORKER),
    "sarama": ("sarama", SARAMA_WORKER),
}
#: the Go libraries' bare programs, a module each
GO_BARE = Path(__file__).with_name("go_bare")
#: the module the bare programs share (``highwater/bench``, their ``replace`` of it: ``../bench``)
GO_BARE_SHARED = "bench"


def go_bare_binary(library: str, version: str) -> Path:
    """The bare program of the Go ``library`` (franz-go, sarama) built against its ``version``,
    once, in ``<cache>/go-bare/<library>/<version>/bare``, as its worker is built
    (``go_worker.build_module`` on a copy of ``benchmarks/go_bare/<folder>``, the shared
    ``benchmarks/go_bare/bench`` copied next to it); built again when the program's or the
    shared module's sources changed."""
    folder, worker = _GO_BARE[library]
    version = exact_version(worker, version)
    digest = hashlib.sha256()
    for name in (folder, GO_BARE_SHARED):
        for path in sorted(p for p in (GO_BARE / name).iterdir() if p.suffix in (".go", ".mod", ".sum")):
            digest.update(f"{name}/{path.name}".encode() + b"\0" + path.read_bytes())
    root = home() / "go-bare" / library / version
    binary, marker, stamp = root / "bare", root / ".complete", digest.hexdigest()[:16]
    if binary.is_file() and marker.is_file() and marker.read_text().strip() == stamp:
        return binary
    go = find_go("the Go libraries' bare programs")
    print(f"  building the {library} {version} bare program with go (once) in {root}", flush=True)
    root.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:  # a failed build leaves nothing
        here = Path(tmp) / folder
        shutil.copytree(GO_BARE / folder, here)
        shutil.copytree(GO_BARE / GO_BARE_SHARED, Path(tmp) / GO_BARE_SHARED)  # its ../bench
        build_module(go, worker, version, here, Path(tmp) / "bare", what="bare program")
        (Path(tmp) / "bare").replace(binary)
    marker.write_text(stamp + "\n")
    return binary


def go_bare(library: str, version: str, args: dict[str, Any]) -> float:
    """records/s of the Go ``library`` (franz-go, sarama) at ``version`` alone (its program in
    ``benchmarks/go_bare``, built against that version: ``go_bare_binary``): the worker's
    settings, no worker protocol, no history."""
    return _bare_process([str(go_bare_binary(library, version)), json.dumps(args)], "go")


def bare_produce(driver: ClientDriver, bootstrap: list[str], topic: str, records: int, size: int) -> float:
    """records/s of the library alone: the producer the driver would make (the same
    settings), ``records`` sends to the partitions in turn, timed until every delivery report
    is in; no worker, no history."""
    library = driver.name
    if library in NODE_LIBRARIES or library in GO_LIBRARIES:
        args = {"mode": "produce", "bootstrap": bootstrap, "topic": topic, "records": records, "size": size}
        run = node_bare if library in NODE_LIBRARIES else go_bare
        return run(library, driver.version, {**args, "partitions": PARTITIONS})
    settings = bench_producer_settings(bootstrap, topic)
    values = [f"v{i}:".ljust(size, ".").encode() for i in range(records)]
    if library == "kafka-python":
        import kafka

        from highwater.clients.python.kafka_python import producer_config as kafka_python_config

        producer = kafka.KafkaProducer(**kafka_python_config(settings))
        try:
            t0 = time.monotonic()
            futures = [producer.send(topic, value=v, partition=i % PARTITIONS) for i, v in enumerate(values)]
            producer.flush(60.0)
            failed = sum(1 for f in futures if not f.succeeded())
            elapsed = time.monotonic() - t0
        finally:
            producer.close(10.0)
    else:
        import confluent_kafka

        from highwater.clients.python.confluent import producer_config

        producer = confluent_kafka.Producer(producer_config(settings))
        errors: list[object] = []

        def report(err: object, _msg: object) -> None:
            if err is not None:
                errors.append(err)

        own, machine = thread_cpu("self"), machine_busy()
        t0 = time.monotonic()
        for i, v in enumerate(values):
            while True:
                try:
                    producer.produce(topic, v, partition=i % PARTITIONS, on_delivery=report)
                    break
                except BufferError:  # the local queue is full: serve delivery reports, then retry
                    producer.poll(0.05)
            producer.poll(0)
        if producer.flush(60.0):
            raise RuntimeError("delivery reports still missing 60 s after the last send")
        failed = len(errors)
        elapsed = time.monotonic() - t0
        if SHOW_CPU:
            print_cpu("bare", cpu_delta(own, thread_cpu("self")))
            print_machine(machine)
    if failed:
        raise RuntimeError(f"{failed} of {records} sends failed")
    return records / elapsed


def bare_consume(driver: ClientDriver, bootstrap: list[str], topic: str, records: int) -> float:
    """records/s of the library alone (no highwater driver, no history): the same
    settings, assign + seek to the log start, then ``records`` records with their values read.
    Next to the driver's figure it says what highwater adds and what the library costs."""
    library = driver.name
    if library in NODE_LIBRARIES or library in GO_LIBRARIES:
        args = {"mode": "consume", "bootstrap": bootstrap, "topic": topic, "records": records}
        if library in NODE_LIBRARIES:  # a group's consumer: every partition of the topic
            return node_bare(library, driver.version, args)
        return go_bare(library, driver.version, {**args, "partitions": PARTITIONS})
    tps = range(PARTITIONS)
    got = 0
    if library == "kafka-python":
        import kafka

        consumer = kafka.KafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, max_poll_records=500, fetch_max_wait_ms=500
        )
        try:
            parts = [kafka.TopicPartition(topic, p) for p in tps]
            consumer.assign(parts)
            consumer.seek_to_beginning(*parts)
            t0 = time.monotonic()
            while got < records:
                for batch in consumer.poll(timeout_ms=500).values():
                    got += sum(1 for r in batch if r.value is not None)
            return got / (time.monotonic() - t0)
        finally:
            consumer.close()
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": ",".join(bootstrap),
            "group.id": f"bare-{topic}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 500,
            "enable.partition.eof": False,
        }
    )
    try:
        t0 = time.monotonic()
        consumer.list_topics(topic, timeout=10)  # as the driver does before assign
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in tps])
        while got < records:
            got += sum(1 for m in consumer.consume(num_messages=500, timeout=0.5) if m.value() is not None)
        return got / (time.monotonic() - t0)
    finally:
        consumer.close()


#: the Python libraries also measured alone (``bare_produce``, ``bare_consume``), by driver name
BARE_LIBRARIES = ("kafka-python", "confluent-kafka")
#: the Node.js libraries, measured bare at any version on that version's tree (``node_bare``)
NODE_LIBRARIES = ("kafkajs", "ckjs")
#: the Go libraries, measured bare at any version by a program built against it (``go_bare``)
GO_LIBRARIES = ("franz-go", "sarama")


def _bare_measurable(driver: ClientDriver) -> bool:
    """A Node.js library at any version (its bare rows run on that version's tree), a Go library
    at any version (its bare program is built against it), or a Python library at the version
    installed with highwater: the one this interpreter imports for its bare rows (a worker of
    another version runs in a venv of its own)."""
    if driver.name in NODE_LIBRARIES or driver.name in GO_LIBRARIES:
        return True
    return driver.name in BARE_LIBRARIES and installed_version(driver.name) == driver.version


@dataclass
class Series:
    produce: list[float] = field(default_factory=list)
    consume: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def make_drivers(names: list[str]) -> dict[str, ClientDriver]:
    """The drivers that can be made; one line for each that cannot."""
    out: dict[str, ClientDriver] = {}
    for name in names:
        try:
            d = get_driver(name)
            out[client_label(d)] = d
        except Exception as e:  # noqa: BLE001 -- a driver module not written yet, a library missing, ...
            print(f"skipped {name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
    return out


def timed(series: Series, what: str, label: str, run: int, fn: Callable[..., float], *args: Any) -> None:
    """One measurement, printed; a driver's with the collector setting of a run's workload
    phase (``harness.gcpasses.streaming``), a bare library's with the interpreter's defaults."""
    try:
        if fn in (driver_produce, driver_consume):
            with streaming():
                v = fn(*args)
        else:
            v = fn(*args)
    except Exception as e:  # noqa: BLE001 -- one failed measurement must not lose the others
        series.errors.append(f"run {run} {what}: {type(e).__name__}: {e}")
        print(f"  run {run} {label:28} {what:8} FAILED: {type(e).__name__}: {str(e)[:200]}", flush=True)
        return
    getattr(series, what).append(v)
    print(f"  run {run} {label:28} {what:8} {v:10.0f} records/s", flush=True)


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def fmt_rate(xs: list[float]) -> str:
    m = med(xs)
    return "-" if m is None else f"{m:9.0f} ({min(xs):.0f}-{max(xs):.0f})"


def fmt_ratio(xs: list[float], ref: list[float]) -> str:
    a, b = med(xs), med(ref)
    return "-" if a is None or not b else f"{a / b:5.2f}"


def fmt_paired(ratios: list[float]) -> str:
    m = med(ratios)
    return "-" if m is None else f"{m:.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--clients", default=",".join(client_names()), help="comma-separated client specs")
    ap.add_argument("--kafka-version", default=None)
    ap.add_argument("--no-bare", action="store_true", help="skip the libraries' own rates (without highwater)")
    ap.add_argument("--only", choices=("produce", "consume"), help="measure one direction only")
    ap.add_argument("--no-tool", action="store_true", help="skip Kafka's perf tools")
    ap.add_argument(
        "--cpu", action="store_true", help="print each produce's and consume's CPU per thread (harness, worker)"
    )
    args = ap.parse_args()
    global SHOW_CPU
    SHOW_CPU = args.cpu
    produce, consume = args.only in (None, "produce"), args.only in (None, "consume")
    version = args.kafka_version or default_version()
    dist = ensure_kafka(version)
    tools = PerfTools(str(find_java(version).executable), f"{dist.classpath}:{ensure_perf_tools(version)}")
    drivers = make_drivers([c for c in args.clients.split(",") if c.strip()])
    print(
        f"Kafka {version}, 3 brokers / 3 racks, {args.records} records of {args.value_bytes} B per run, "
        f"{args.runs} runs, topics of {PARTITIONS} partitions x RF 3, acks=all, one request in flight",
        flush=True,
    )
    bare = set() if args.no_bare else {label for label, d in drivers.items() if _bare_measurable(d)}
    results: dict[str, Series] = {TOOL: Series()}
    for label in drivers:
        results[label] = Series()
        if label in bare:
            results[f"{label} bare"] = Series()
    # each round's worker / bare ratio, per client and direction: paired within the round
    paired: dict[tuple[str, str], list[float]] = {}
    cluster: ClusterBackend = start_backend("local", ClusterSpec(brokers=3, racks=3, kafka_version=version))
    try:
        boot = cluster.bootstrap()
        for run in range(1, args.runs + 1):
            if not args.no_tool:
                topic = f"perf-{run}"
                cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
                s = results[TOOL]
                if produce:
                    timed(s, "produce", TOOL, run, tools.produce, ",".join(boot), topic, args.records, args.value_bytes)
                if consume:
                    timed(s, "consume", TOOL, run, tools.consume, ",".join(boot), topic, args.records)
            for i, (label, d) in enumerate(drivers.items()):
                topic = f"bench-{i}-{run}"
                cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
                s = results[label]
                if produce:
                    timed(s, "produce", label, run, driver_produce, d, boot, topic, args.records, args.value_bytes)
                else:  # consuming needs the records: written, not measured
                    timed(
                        Series(),
                        "produce",
                        f"{label} (writing)",
                        run,
                        driver_produce,
                        d,
                        boot,
                        topic,
                        args.records,
                        args.value_bytes,
                    )
                if consume:
                    timed(s, "consume", label, run, driver_consume, d, boot, topic, args.records)
                if label in bare:
                    b = f"{label} bare"
                    if consume:
                        timed(results[b], "consume", b, run, bare_consume, d, boot, topic, args.records)
                    if produce:
                        bare_topic = f"bare-{i}-{run}"
                        cluster.create_topic(bare_topic, partitions=PARTITIONS, replication_factor=3)
                        produce_args = (d, boot, bare_topic, args.records, args.value_bytes)
                        timed(results[b], "produce", b, run, bare_produce, *produce_args)
                    for what in ("produce", "consume"):
                        mine, theirs = getattr(s, what), getattr(results[b], what)
                        if len(mine) == run and len(theirs) == run and theirs[-1]:
                            paired.setdefault((label, what), []).append(mine[-1] / theirs[-1])
    finally:
        cluster.stop()
    ref = results[TOOL]
    print(f"\nmedians over {args.runs} runs, records/s (min-max); ratio = highwater / perf tool (goal >= 0.5)")
    print(f"{'client':28} {'produce':>22} {'ratio':>6} {'consume':>22} {'ratio':>6}")
    for label, s in results.items():
        pr = "" if label == TOOL else fmt_ratio(s.produce, ref.produce)
        cr = "" if label == TOOL else fmt_ratio(s.consume, ref.consume)
        print(f"{label:28} {fmt_rate(s.produce):>22} {pr:>6} {fmt_rate(s.consume):>22} {cr:>6}")
        for e in s.errors:
            print(f"  {label}: {e}")
    if bare:
        print("\nthrough highwater's worker / the bare library (goal >= 0.8): ratio of the medians;")
        print("the median of the per-round ratios (min-max) pairs each worker figure with its round's bare one")
        print(f"{'client':28} {'produce':>8} {'per round':>20} {'consume':>8} {'per round':>20}")
        for label in sorted(bare):
            s, b = results[label], results[f"{label} bare"]
            rounds = [fmt_paired(paired.get((label, what), [])) for what in ("produce", "consume")]
            print(
                f"{label:28} {fmt_ratio(s.produce, b.produce):>8} {rounds[0]:>20} "
                f"{fmt_ratio(s.consume, b.consume):>8} {rounds[1]:>20}"
            )
    return 1 if any(s.errors for s in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
