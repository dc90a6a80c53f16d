"""The clients' road through a run: the client versions and group protocols that a scripted
nemesis's ``client-restart --version/--group-protocol`` steps move workers onto, known before the
run starts (``highwater.runner``) so that

- what the client or the release lacks is refused in one line before anything starts (a member
  rolled to KIP-848's protocol on a client or a Kafka release without it, a producer asked to
  change group protocol), as the run's own group protocol is;
- every version on the road is installed before the workload begins: a restart waits a minute
  for its new worker, and installing a client (pip, Maven, npm, ``go build``) can take longer;
- a group whose members move onto the ``consumer`` protocol gets its group session timeout
  before any member joins (``modes.group.Group.prepare``);
- the history's header says where the run's clients went: ``config.client_path``
  (``"java 3.9.1->4.1.0"``) and ``config.group_protocol_path`` (``"classic->consumer"``), beside
  the top-level ``client`` and ``config.group_protocol`` the run started on (as
  ``config.upgrade_path`` is beside ``kafka_version``).

Where each worker went, and when, is the fault events' ``members`` (``faults.inject``); this is
the plan, not the record. A seeded schedule never draws a relaunch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from highwater.core.manifest import NemesisRecord
from highwater.faults.spec import FaultKind, parse_fault
from highwater.harness.clients import ClientSpec, get_driver
from highwater.harness.clients.groups import group_protocol_refusal
from highwater.nemesis import fill
from highwater.run_spec import RunSpec

#: how a path's steps are joined (``A->B->C``), as an upgrade path's
ARROW = "->"


@dataclass(frozen=True)
class ClientRoad:
    """The run's client and the versions and group protocols its workers pass through, the
    start first, each once, in the order the steps reach them."""

    client: str
    versions: tuple[str, ...]
    protocols: tuple[str, ...]
    #: (version, protocol) after each relaunch step, in order (the workers a step names reach it)
    stops: tuple[tuple[str, str], ...] = ()

    @property
    def client_path(self) -> str | None:
        """``"<client> A->B"`` when a step moves a worker to another version, else None."""
        return f"{self.client} {ARROW.join(self.versions)}" if len(self.versions) > 1 else None

    @property
    def protocol_path(self) -> str | None:
        """``"classic->consumer"`` when a step moves a member to another protocol, else None."""
        return ARROW.join(self.protocols) if len(self.protocols) > 1 else None


def client_road(record: NemesisRecord, spec: RunSpec, client: str, version: str) -> ClientRoad:
    """The road of ``spec``'s workers (client ``client`` at ``version``) through ``record``'s
    scripted steps."""
    versions, protocols = [version], [spec.group_protocol]
    stops: list[tuple[str, str]] = []
    now = (version, spec.group_protocol)
    for step in record.steps:
        # only a client restart can move a worker; the others' placeholders ({leader},
        # {follower}) name brokers only the live cluster can tell, so they are not parsed here
        if step.fault.split(maxsplit=1)[0].replace("_", "-") != FaultKind.CLIENT_RESTART.cli:
            continue
        fault = parse_fault(fill(step.fault, spec))
        v, p = str(fault.param("version")), str(fault.param("group_protocol"))
        if not v and not p:
            continue
        now = (v or now[0], p or now[1])
        stops.append(now)
        versions += [v] if v and v not in versions else []
        protocols += [p] if p and p not in protocols else []
    return ClientRoad(client, tuple(versions), tuple(protocols), tuple(stops))


def road_refusal(road: ClientRoad, spec: RunSpec, kafka_version: str) -> str | None:
    """Why the run cannot take ``road`` (one line), or None: a protocol step in a run without a
    group, or a stop (the version and protocol a step restarts workers on) that the client at
    that version or the release lacks."""
    if len(road.protocols) > 1 and spec.consumer_mode != "subscribe":
        return (
            "client-restart --group-protocol moves a group member; this run's consumers are in "
            f"{spec.consumer_mode} mode, not in a group"
        )
    for v, p in road.stops:
        refused = group_protocol_refusal(road.client, v, kafka_version, p)
        if refused is not None:
            return f"a step restarts group members on {road.client} {v} with the {p} protocol: {refused}"
    return None


def install(road: ClientRoad, progress: Callable[[str], None] = lambda _: None) -> None:
    """Make every version on ``road`` ready (a driver installs or builds its client once)."""
    for v in road.versions[1:]:
        progress(f"making {road.client} {v} ready for the steps that restart workers on it")
        get_driver(ClientSpec(road.client, v))
