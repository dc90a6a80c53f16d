"""How a client authenticates and encrypts: one typed value every client of a run is built with.

Real clusters rarely listen in plaintext, so the observer, the final read and every client
driver take a ``ClientSecurity``. It is written in Kafka's own terms (``security.protocol``,
``sasl.mechanism``, ...) and each library's spelling is derived from it here, once, so the
drivers cannot drift apart: kafka-python's keyword arguments (``as_kafka_python``) and
librdkafka's properties (``as_librdkafka``).

A cluster file gives these settings in kafka-python's spelling (``security_protocol``,
``sasl_plain_username``, ...): ``ClientSecurity.from_kafka_python`` reads that table and refuses
an unknown key or value with a message that names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: what both kafka-python and librdkafka implement
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class SecurityError(ValueError):
    """A security setting that no client could use; ``key`` names it (for one-line errors)."""

    def __init__(self, key: str, what: str) -> None:
        super().__init__(f"{key}: {what}")
        self.key = key
        self.what = what


@dataclass(frozen=True)
class ClientSecurity:
    """``protocol`` is Kafka's ``security.protocol``; the SASL fields apply to SASL_*, the SSL
    fields (PEM files) to *SSL. ``ssl_check_hostname`` off is for test certificates only."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: str | None = None
    ssl_check_hostname: bool = True

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise SecurityError("security_protocol", f"{self.protocol!r} is not one of {', '.join(PROTOCOLS)}")
        if self.uses_sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise SecurityError(
                    "sasl_mechanism", f"{self.sasl_mechanism!r} is not one of {', '.join(SASL_MECHANISMS)}"
                )
            if not self.sasl_username or self.sasl_password is None:
                raise SecurityError("sasl_plain_username", f"{self.protocol} needs a username and a password")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.protocol.endswith("SSL")

    @classmethod
    def from_kafka_python(cls, table: Mapping[str, Any]) -> ClientSecurity:
        """Read settings spelled as kafka-python's keyword arguments (a cluster file's
        ``[security]``); unknown keys are refused rather than silently dropped."""
        unknown = sorted(set(table) - set(_FROM_KAFKA_PYTHON))
        if unknown:
            raise SecurityError(unknown[0], f"unknown setting (known: {', '.join(sorted(_FROM_KAFKA_PYTHON))})")
        kwargs: dict[str, Any] = {}
        for key, value in table.items():
            field_name = _FROM_KAFKA_PYTHON[key]
            if field_name == "ssl_check_hostname":
                if not isinstance(value, bool):
                    raise SecurityError(key, "must be true or false")
                kwargs[field_name] = value
            elif isinstance(value, str) and value:
                kwargs[field_name] = value.upper() if field_name in ("protocol", "sasl_mechanism") else value
            else:
                raise SecurityError(key, "must be a non-empty string")
        return cls(**kwargs)

    def as_kafka_python(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python's clients (empty for plaintext, so its defaults stand)."""
        if self.protocol == "PLAINTEXT":
            return {}
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_sasl:
            out.update(
                sasl_mechanism=self.sasl_mechanism,
                sasl_plain_username=self.sasl_username,
                sasl_plain_password=self.sasl_password,
            )
        if self.uses_ssl:
            out["ssl_check_hostname"] = self.ssl_check_hostname
            for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password"):
                if getattr(self, name) is not None:
                    out[name] = getattr(self, name)
        return out

    def as_librdkafka(self) -> dict[str, str]:
        """librdkafka's configuration properties (empty for plaintext)."""
        if self.protocol == "PLAINTEXT":
            return {}
        out = {"security.protocol": self.protocol.lower()}
        if self.uses_sasl:
            out.update(
                {
                    "sasl.mechanism": str(self.sasl_mechanism),
                    "sasl.username": str(self.sasl_username),
                    "sasl.password": str(self.sasl_password),
                }
            )
        if self.uses_ssl:
            out["ssl.endpoint.identification.algorithm"] = "https" if self.ssl_check_hostname else "none"
            for name, prop in _LIBRDKAFKA_SSL.items():
                value = getattr(self, name)
                if value is not None:
                    out[prop] = value
        return out

    def describe(self) -> str:
        """For logs and manifests: never the password."""
        if self.uses_sasl:
            return f"{self.protocol} {self.sasl_mechanism} as {self.sasl_username}"
        return self.protocol


PLAINTEXT = ClientSecurity()

#: cluster-file (kafka-python) key -> field
_FROM_KAFKA_PYTHON = {
    "security_protocol": "protocol",
    "sasl_mechanism": "sasl_mechanism",
    "sasl_plain_username": "sasl_username",
    "sasl_plain_password": "sasl_password",
    "ssl_cafile": "ssl_cafile",
    "ssl_certfile": "ssl_certfile",
    "ssl_keyfile": "ssl_keyfile",
    "ssl_password": "ssl_password",
    "ssl_check_hostname": "ssl_check_hostname",
}

_LIBRDKAFKA_SSL = {
    "ssl_cafile": "ssl.ca.location",
    "ssl_certfile": "ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location",
    "ssl_password": "ssl.key.password",
}
