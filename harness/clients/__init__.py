"""Kafka client libraries under test, each behind the driver protocol of ``harness.clients.base``.

``CLIENTS`` maps a client's name to a factory of its driver; a driver module (and its library)
is imported only when that client is asked for. ``client_names()`` lists what ``--client``
accepts; ``get_driver(name)`` gives the driver or one clear line for an unknown name.

To add a client: write ``harness/clients/<lib>.py`` with a class that satisfies ``ClientDriver``
(and its ``ProducerDriver`` / ``ConsumerDriver``), keep every import and quirk of the library in
that module, and register a factory here.
"""

from __future__ import annotations

from collections.abc import Callable

from .base import (
    DEFAULT_CLIENT,
    ClientDriver,
    ConsumerDriver,
    ConsumerListener,
    ConsumerSettings,
    Outcome,
    PolledRecord,
    PositionChange,
    PositionReason,
    ProducerDriver,
    ProducerSettings,
    SendOutcome,
    TopicPartition,
    TruncationSignal,
    UnknownClientError,
    client_label,
)


def _kafka_python() -> ClientDriver:
    from .kafka_python import KafkaPythonDriver

    return KafkaPythonDriver()


#: client name -> driver factory
CLIENTS: dict[str, Callable[[], ClientDriver]] = {
    "kafka-python": _kafka_python,
}


def client_names() -> list[str]:
    """The names ``get_driver`` accepts (what ``--client`` offers)."""
    return list(CLIENTS)


def get_driver(name: str) -> ClientDriver:
    """The driver of client ``name``; ``UnknownClientError`` (one line) for an unknown name."""
    factory = CLIENTS.get(name)
    if factory is None:
        raise UnknownClientError(f"unknown client {name!r} (known: {', '.join(client_names())})")
    return factory()


def resolve_driver(client: str | ClientDriver) -> ClientDriver:
    """A driver given either its client's name or the driver itself."""
    return get_driver(client) if isinstance(client, str) else client


__all__ = [
    "CLIENTS",
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
    "SendOutcome",
    "TopicPartition",
    "TruncationSignal",
    "UnknownClientError",
    "client_label",
    "client_names",
    "get_driver",
    "resolve_driver",
]
