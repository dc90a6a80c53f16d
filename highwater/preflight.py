"""Refuse bad input before anything starts: the one check every entry point runs first.

``highwater run``, ``campaign``, ``sweep`` and ``bisect`` call ``preflight`` before they start a
child pytest, and the pytest plugin calls it at session start (before collection), so a Kafka
release that does not exist or a client version that cannot be installed is one line
(``highwater: error: ...``, exit code 2; pytest: ``ERROR: ...``, exit code 4) instead of a test
error buried in the output of a run.

- Every Kafka release asked for is assembled (``ensure_kafka``: checked against Maven Central's
  list, then fetched into the cache, where the runs would fetch it anyway). With the external
  backend no broker is started here, so the release is only looked up in Maven Central's list.
- Every client spec asked for is made once (``get_driver``: it installs or builds that client
  version if needed, and says in one line when it cannot).
- The known findings (``core/findings.toml`` and the files of ``$HIGHWATER_FINDINGS``) are read
  and each record's checks named, so a malformed record is refused before the first run, not
  when that run is judged.
"""

from __future__ import annotations

from collections.abc import Iterable

from highwater.core.checks import CHECKS
from highwater.core.findings import configured, validate
from highwater.core.progress import Progress, quiet
from highwater.harness.clients import ClientSpec, get_driver, parse_client_spec
from highwater.harness.distribution import check_published, ensure_kafka


def split_versions(raw: Iterable[str]) -> list[str]:
    """``--kafka-version`` values (repeatable, each maybe comma-separated) as one list, in order,
    without repeats."""
    out: list[str] = []
    for item in raw:
        for v in item.split(","):
            if v.strip() and v.strip() not in out:
                out.append(v.strip())
    return out


def preflight(
    kafka_versions: Iterable[str] = (),
    clients: Iterable[str | ClientSpec] = (),
    *,
    backend: str | None = None,
    progress: Progress = quiet,
) -> None:
    """Raise ``HighwaterError`` (one line) unless every Kafka release and client asked for can
    be used, and unless the known findings can be read. Each is checked once, in the order given;
    nothing is started."""
    validate(configured(), CHECKS)
    for version in split_versions(kafka_versions):
        if backend == "external":
            check_published(version)
        else:
            ensure_kafka(version, progress)
    seen: list[ClientSpec] = []
    for client in clients:
        spec = parse_client_spec(client) if isinstance(client, str) else client
        if spec not in seen:
            seen.append(spec)
            get_driver(spec)
