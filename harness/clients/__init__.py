"""Kafka client libraries under test, each behind the driver protocol of ``harness.clients.base``.

``CLIENTS`` maps a client's name to a factory of its driver; a driver module (and its library)
is imported only when that client is asked for. ``client_names()`` lists what ``--client``
accepts; ``get_driver(spec)`` gives the driver or one clear line for an unknown name.

A *client spec* names a client and, optionally, its version: ``kafka-python``,
``confluent-kafka==2.3.0``, ``java:3.9.1`` (``==`` and ``:`` are the same separator), or a
local build of a Python client, ``kafka-python@/path/to/checkout`` (a source tree or a wheel;
the path is made absolute when parsed).
``parse_client_specs("kafka-python,java:3.9.1")`` splits the comma-separated list that
``--client`` takes. Without a version a client is the one installed with highwater (the Java
client: the default Kafka release's ``kafka-clients``); a versioned client is installed into
its own place in the cache (``~/.cache/highwater/clients/<name>/<version>``), so several
versions live side by side.

Every client runs in worker processes of its own, speaking the one worker protocol
(``harness.clients.worker``, ``docs/adding-a-client.md``): the Python clients through
``clients/python/highwater_worker.py`` on the interpreter of their version's virtual
environment (``harness.clients.python``), the Java client through ``clients/java``. To add a
client: write its worker (``clients/<kind>/``), a ``WorkerLauncher`` that starts it, and
register a factory ``(version or None) -> driver`` here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from highwater.harness.client_common import (
    ConsumerListener,
    ConsumerSettings,
    Outcome,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerSettings,
    Revocation,
    RevocationListener,
    RevocationReason,
    SendOutcome,
    TopicPartition,
    TruncationSignal,
    report_revocation,
)

from .base import (
    DEFAULT_CLIENT,
    ClientDriver,
    ConsumerDriver,
    ProducerDriver,
    TransactionalClient,
    TransactionalProducerDriver,
    UnknownClientError,
    client_label,
)
from .worker import Relaunch, WorkerError, WorkerGone, restart_asked, take_relaunch, take_restart


def _kafka_python(version: str | None) -> ClientDriver:
    from .python import python_driver

    return python_driver("kafka-python", version)


def _confluent_kafka(version: str | None) -> ClientDriver:
    from .python import python_driver

    return python_driver("confluent-kafka", version)


def _java(version: str | None) -> ClientDriver:
    from .java import JavaDriver

    return JavaDriver(version)


def _kafkajs(version: str | None) -> ClientDriver:
    from .kafkajs import kafkajs_driver

    return kafkajs_driver(version)


def _ckjs(version: str | None) -> ClientDriver:
    from .ckjs import ckjs_driver

    return ckjs_driver(version)


def _franz_go(version: str | None) -> ClientDriver:
    from .franz_go import WORKER
    from .go_worker import go_driver

    return go_driver(WORKER, version)


def _sarama(version: str | None) -> ClientDriver:
    from .go_worker import go_driver
    from .sarama import WORKER

    return go_driver(WORKER, version)


#: client name -> driver factory, given the version asked for (None: the default one)
CLIENTS: dict[str, Callable[[str | None], ClientDriver]] = {
    "kafka-python": _kafka_python,
    "confluent-kafka": _confluent_kafka,
    "java": _java,
    "kafkajs": _kafkajs,
    "ckjs": _ckjs,
    "franz-go": _franz_go,
    "sarama": _sarama,
}

#: the clients whose workers have a transactional producer (KIP-98)
TRANSACTIONAL_CLIENTS = frozenset({"kafka-python", "confluent-kafka", "java", "kafkajs", "ckjs", "franz-go", "sarama"})


def transactions_refusal(client: str, client_version: str) -> str | None:
    """Why ``client`` cannot run a transactional workload in highwater (one line), or None."""
    if client in TRANSACTIONAL_CLIENTS:
        return None
    return f"{client} {client_version} has no transactional producer in highwater's worker yet"


#: client name -> driver factory of a local build at a path (the Python clients, kafkajs; the Java client
#: names a build published to the local Maven repository by its version)
LOCAL_BUILDS: dict[str, Callable[[Path], ClientDriver]] = {
    "kafka-python": lambda path: _local("kafka-python", path),
    "confluent-kafka": lambda path: _local("confluent-kafka", path),
    "kafkajs": lambda path: _local_kafkajs(path),
}


def _local(dist: str, path: Path) -> ClientDriver:
    from .python import local_driver

    return local_driver(dist, path)


def _local_kafkajs(path: Path) -> ClientDriver:
    from .kafkajs import kafkajs_local_driver

    return kafkajs_local_driver(path)


_SPEC = re.compile(
    r"^(?P<name>[A-Za-z][A-Za-z0-9_.-]*?)(?:(?:==|:)(?P<version>[0-9][A-Za-z0-9_.+-]*)|@(?P<path>[^,]+))?$"
)


class ClientSpec(NamedTuple):
    """A client and the version asked for (None: the default one), or the path of a local build."""

    name: str
    version: str | None = None
    path: str | None = None

    def __str__(self) -> str:
        if self.path is not None:
            return f"{self.name}@{self.path}"
        return self.name if self.version is None else f"{self.name}=={self.version}"


@contextmanager
def registered(driver: ClientDriver) -> Iterator[str]:
    """``driver`` as the client named ``driver.name`` for as long as the block lasts (a
    program of the user's in the workload, ``highwater.scenarios.App``): the runner and its
    workers name their client by a string. A name taken already is refused."""
    name = driver.name
    if name in CLIENTS:
        raise UnknownClientError(f"client {name!r} is registered already ({', '.join(CLIENTS)})")
    CLIENTS[name] = lambda _version: driver
    try:
        yield name
    finally:
        CLIENTS.pop(name, None)


def client_names() -> list[str]:
    """The names ``get_driver`` accepts (what ``--client`` offers)."""
    return list(CLIENTS)


def parse_client_spec(text: str) -> ClientSpec:
    """``name``, ``name==version`` or ``name:version``; one clear line for anything else or an
    unknown name. The version is checked when the driver is made (it may need installing)."""
    m = _SPEC.match(text.strip())
    if m is None:
        raise UnknownClientError(f"bad client {text!r}: expected NAME, NAME==VERSION, NAME:VERSION or NAME@PATH")
    name = m.group("name")
    if name not in CLIENTS:
        raise UnknownClientError(f"unknown client {name!r} (known: {', '.join(client_names())})")
    if m.group("path") is not None:
        if name not in LOCAL_BUILDS:
            raise UnknownClientError(
                f"a local build of {name} is named by its version once published to the local Maven "
                f"repository (--client {name}:4.5.0-SNAPSHOT), not by a path"
            )
        return ClientSpec(name, path=str(Path(m.group("path")).expanduser().resolve()))
    return ClientSpec(name, m.group("version"))


def parse_client_specs(text: str) -> list[ClientSpec]:
    """A comma-separated list of client specs (``--client kafka-python,java:3.9.1``)."""
    specs = [parse_client_spec(part) for part in text.split(",") if part.strip()]
    if not specs:
        raise UnknownClientError(f"no client in {text!r} (known: {', '.join(client_names())})")
    return specs


def get_driver(spec: str | ClientSpec) -> ClientDriver:
    """The driver of a client spec (``"java:3.9.1"``); ``UnknownClientError`` (one line) for an
    unknown name or a bad spec."""
    parsed = parse_client_spec(spec) if isinstance(spec, str) else spec
    if parsed.path is not None:
        return LOCAL_BUILDS[parsed.name](Path(parsed.path))
    return CLIENTS[parsed.name](parsed.version)


def resolve_driver(client: str | ClientDriver) -> ClientDriver:
    """A driver given either its client's name or the driver itself."""
    return get_driver(client) if isinstance(client, str) else client


__all__ = [
    "CLIENTS",
    "Relaunch",
    "ClientSpec",
    "DEFAULT_CLIENT",
    "ClientDriver",
    "ConsumerDriver",
    "ConsumerListener",
    "ConsumerSettings",
    "Outcome",
    "PolledRecord",
    "PositionChange",
    "PositionReason",
    "ProducerDriver",
    "ProducerSettings",
    "Revocation",
    "RevocationListener",
    "RevocationReason",
    "SendOutcome",
    "TopicPartition",
    "TransactionalClient",
    "TRANSACTIONAL_CLIENTS",
    "transactions_refusal",
    "TransactionalProducerDriver",
    "TruncationSignal",
    "UnknownClientError",
    "WorkerError",
    "WorkerGone",
    "take_relaunch",
    "restart_asked",
    "take_restart",
    "client_label",
    "client_names",
    "report_revocation",
    "get_driver",
    "parse_client_spec",
    "parse_client_specs",
    "resolve_driver",
]
