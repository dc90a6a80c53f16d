"""Attribution: does a violation lie with the broker or with a client?

One client alone cannot say whether the broker or the client broke a promise. When runs of the
same suite/scenario against the same Kafka version were made with two or more clients (each a
label ``"<name> <version>"``: ``"java 4.4.0"`` and ``"java 3.9.1"`` are two clients), the
matrix rows of those runs say it: a promise every client saw broken was broken by the broker;
one only some clients saw broken was broken by those clients.

It is decided **per check** (two clients failing different checks do not put either check on
the broker), then summed up per (suite/scenario, Kafka version). Pure functions over the
aggregated matrix rows (``reports.aggregate._matrix``: ``suite``, ``scenario``,
``kafka_version``, ``client``, ``check``, ``passed``, ``failed``, ``unknown``, ...); no Spark.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

BROKER = "broker"
CLIENTS = "clients"
NONE = "none"
SINGLE = "single-client"
UNDECIDED = "undecided"
VERDICTS = (BROKER, CLIENTS, NONE, SINGLE, UNDECIDED)

#: which check-level verdict names a group: the first present in this order wins
GROUP_ORDER = (BROKER, CLIENTS, UNDECIDED, SINGLE)

Key = tuple[str, str, str]  # suite, scenario, Kafka version


def client_status(row: Mapping[str, Any]) -> str | None:
    """One client's standing on one check, from its matrix row: ``"failed"`` (at least one run
    violated it; allowed anomalies count as passed, as in the matrix), ``"ok"`` (none violated
    it and at least one run judged it valid), ``"undecided"`` (runs exist but none settled it:
    unknown only, never counted as ok or failed), or None (the check did not apply in any run:
    this client is no witness for it)."""
    if int(row.get("failed") or 0) > 0:
        return "failed"
    if int(row.get("passed") or 0) > 0:
        return "ok"
    if int(row.get("unknown") or 0) > 0:
        return "undecided"
    return None


def attribute_check(statuses: Mapping[str, str | None]) -> dict[str, Any]:
    """The attribution of one check for one (suite/scenario, Kafka version), from each client's
    status (``client_status``). Clients with status None (not applicable) are left out.

    - fewer than two witnesses: ``single-client`` (cannot attribute);
    - otherwise the verdict is the one that holds however the undecided clients would have
      turned out, else ``undecided``:
      every witness failed -> ``broker``; some failed and some passed -> ``clients`` (those that
      failed; an undecided third client does not change that, since a passing one shows the
      broker can keep the promise); nobody failed and everyone passed -> ``none``; a failure
      with only undecided others, or no failure but some undecided -> ``undecided``.

    Returns ``{"verdict", "clients" (blamed, sorted), "failed", "passed", "undecided"}``."""
    w = {c: s for c, s in statuses.items() if s is not None}
    failed = sorted(c for c, s in w.items() if s == "failed")
    passed = sorted(c for c, s in w.items() if s == "ok")
    undecided = sorted(c for c, s in w.items() if s == "undecided")
    if len(w) < 2:
        verdict = SINGLE
    elif failed and passed:
        verdict = CLIENTS
    elif failed and not undecided:
        verdict = BROKER
    elif not failed and not undecided:
        verdict = NONE
    else:
        verdict = UNDECIDED
    return {
        "verdict": verdict,
        "clients": failed if verdict == CLIENTS else [],
        "failed": failed,
        "passed": passed,
        "undecided": undecided,
    }


def attribute(matrix: Iterable[Mapping[str, Any]]) -> dict[Key, dict[str, Any]]:
    """Attribution per (suite, scenario, Kafka version) of the matrix rows.

    Each value: ``verdict`` in ``VERDICTS``, ``clients`` (the clients blamed by any check),
    ``labels`` (every client label with runs there), ``undecided`` (the undecided clients of
    the checks attributed ``undecided``) and ``checks`` (check -> ``attribute_check`` result).

    With one client label only, the verdict is ``single-client``. Otherwise it is the first of
    broker, clients, undecided, single-client that some check has, where a check with a single
    witness counts only when that witness did not pass (a failure nobody else could judge);
    else ``none``. So one broker-attributed check makes the group ``broker``; ``clients`` still
    lists clients blamed by other checks.
    """
    groups: dict[Key, dict[str, dict[str, str | None]]] = defaultdict(lambda: defaultdict(dict))
    labels: dict[Key, set[str]] = defaultdict(set)
    for m in matrix:
        k = (str(m["suite"]), str(m["scenario"]), str(m["kafka_version"]))
        labels[k].add(str(m["client"]))
        groups[k][str(m["check"])][str(m["client"])] = client_status(m)
    out: dict[Key, dict[str, Any]] = {}
    for k in sorted(groups):
        checks = {c: attribute_check(st) for c, st in groups[k].items() if any(s is not None for s in st.values())}
        if len(labels[k]) < 2:
            verdict = SINGLE
        else:
            counted = {a["verdict"] for a in checks.values() if a["verdict"] != SINGLE or not a["passed"]}
            verdict = next((v for v in GROUP_ORDER if v in counted), NONE)
        out[k] = {
            "verdict": verdict,
            "clients": sorted({c for a in checks.values() for c in a["clients"]}),
            "labels": sorted(labels[k]),
            "undecided": sorted({c for a in checks.values() if a["verdict"] == UNDECIDED for c in a["undecided"]}),
            "checks": checks,
        }
    return out


def describe(a: Mapping[str, Any]) -> str:
    """A check-level (or group-level) attribution as a short phrase for messages and tooltips:
    ``attributed to: broker``, ``attributed to: client java 4.4.0``, ``not attributed: ...``."""
    v = a["verdict"]
    if v == BROKER:
        return "attributed to: broker"
    if v == CLIENTS:
        names = a["clients"]
        return f"attributed to: client{'s' if len(names) > 1 else ''} {', '.join(names)}"
    if v == NONE:
        return "attributed to: none (no client failed)"
    if v == SINGLE:
        return "not attributed: single client"
    und = a.get("undecided") or []
    return "attribution undecided" + (f" (could not be judged with {', '.join(und)})" if und else "")
