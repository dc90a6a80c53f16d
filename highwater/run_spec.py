"""What a run is asked to do (``RunSpec``), the settings its time bounds derive from
(``run_settings``), and the spec as the run manifest records it (``run_spec_to_json`` /
``run_spec_from_json``). ``highwater.runner.execute_run`` carries a spec out."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from highwater.core.checks.bounds import Settings
from highwater.core.errors import HighwaterError
from highwater.harness import tiered
from highwater.harness.backend import ClusterBackend
from highwater.harness.clients import DEFAULT_CLIENT

log = logging.getLogger(__name__)


@dataclass
class RunSpec:
    suite: str
    scenario: str
    campaign: str = "adhoc"
    results_root: Path = Path("results")
    topic: str = "hw"
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    acks: str = "all"
    idempotence: bool = False
    unclean_leader_election: bool = False
    producers: int = 2
    rate: float = 100.0  # per producer, sends/s
    value_size: int = 0  # bytes per value (0: just the unique id)
    # the client settings users commonly change (each driver maps them to its library's names,
    # ``harness.clients.base``): the producers' linger and requests in flight (None: 1 without
    # idempotence, 5 with), the consumers' records per poll. A hunt draws them (``hunt_draw``).
    linger_ms: int = 2
    max_in_flight: int | None = None
    max_poll_records: int = 500
    #: the consumers set ``client.rack`` (KIP-392: each fetches from its rack's replica, where the
    #: cluster's replica selector is rack-aware); off, they fetch from the leaders, the header's
    #: ``racks.clients`` is empty and the checks of rack-aware fetching do not apply
    client_rack: bool = True
    #: KIP-392: how long the rack consumers fetch from the replica the leader named before they
    #: ask the leader again (None: the library's own); franz-go's ``RecheckPreferredReplicaInterval``
    #: alone, refused for any other client before the run starts (``ConsumerSettings``)
    preferred_replica_recheck_ms: int | None = None
    consumer_mode: str = "assign"
    # subscribe mode: the members' session timeout (None: the client's default); a scenario that
    # freezes or kills a member sets it short, so the group evicts it within the run
    session_timeout_ms: int | None = None
    # subscribe mode: the consumers' group protocol (harness.clients.groups: "classic" or KIP-848's
    # "consumer") and, with "consumer", the server-side assignor (None: the broker's first)
    group_protocol: str = "classic"
    group_remote_assignor: str | None = None
    # transactional runs: the cluster's transaction.version for the run (harness.clients.txnversion:
    # 1 or 2, KIP-890; None: as the cluster has it), restored after the run
    transaction_version: int | None = None
    # the power-loss suite: how many replicas of a partition its scripted power loss takes at once
    # (the policy reads it, core.policy), and eligible leader replicas (KIP-966,
    # harness.features) on or off for the run (None: as the cluster has it), restored after it
    power_loss_replicas: int = 0
    #: a run whose cluster is rolled from one release to another (``faults.release``): ``A->B``, in
    #: the header as ``upgrade_path``; the header's ``kafka_version`` is the release it started on
    upgrade_path: str | None = None
    #: the run's topics tier (KIP-405, ``harness.tiered.topic_config``): segments copied to the
    #: cluster's remote store within seconds and kept locally for one; the cluster must be tiered
    tiered: bool = False
    #: a tiered run's topics' ``retention.ms`` (None: they keep every record,
    #: ``harness.tiered.RETENTION_MS``); the header records it for the ``log-start`` check
    retention_ms: int | None = None
    #: a tiered run whose scripted fault makes the remote store lose what it had not fsynced
    #: (``power-loss --target store``); the header records it for the policy (``core.policy``)
    remote_store_loss: bool = False
    #: the version of ``client`` that steps restart workers on (``{client_to}`` in a step's fault:
    #: ``client-restart --version {client_to}``, a group rolled member by member to a newer client)
    client_to: str | None = None
    eligible_leader_replicas: bool | None = None
    # every client worker's wall clock through libfaketime, for clock faults on clients
    # (``clock-jump --target client:<id>``, harness.clients.clocks)
    client_clocks: bool = False
    # KIP-98: producers write transactions of ``txn_records`` sends, a seeded share aborted
    transactional: bool = False
    txn_records: int = 4
    txn_abort_share: float = 0.25
    isolation_level: str = "read_uncommitted"  # every consumer's, but the last ``read_uncommitted_consumers``
    read_uncommitted_consumers: int = 0
    # an exactly-once copy (harness.workload.copy): this many copiers read the topic in one group
    # (read_committed) and write the topic's copy in transactions with the offsets inside; a
    # read_committed ``copy-reader`` reads the copy. ``txn_abort_share`` of copies abort.
    copiers: int = 0
    # consumer_mode "share" (KIP-932): one share group of the consumers (harness.clients.share), its
    # acquisition lock and session timeout (group configs), and the share of deliveries its
    # members release (delivered again) or reject (archived) on purpose (harness.workload.share)
    share_lock_ms: int = 5000
    share_session_ms: int = 6000
    share_release: float = 0.1
    share_reject: float = 0.03
    client: str = DEFAULT_CLIENT  # the client under test: one of harness.clients.client_names()
    duration: float = 20.0  # seconds of workload (faults run inside it)
    settle_timeout: float = 60.0  # after healing: consumers catch up, ISR refills
    observe_interval: float = 1.0  # seconds between meta observations
    seed: int | None = None
    repro: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def header_config(self, cluster: ClusterBackend) -> dict[str, Any]:
        """The header's config: what the policy reads, and every time bound of the timed checks
        derived from the effective broker and client settings, each with its formula
        (``core.checks.bounds``)."""
        from highwater.core.checks.bounds import header_entries

        settings = run_settings(cluster.spec.brokers, cluster.spec.broker_config, self.observe_interval)
        return {
            "acks": self.acks,
            "idempotence": self.idempotence or self.transactional,
            "transactional": self.transactional,
            "isolation_level": self.isolation_level,
            "unclean_leader_election": self.unclean_leader_election,
            "min_insync_replicas": self.min_insync_replicas,
            "replication_factor": self.replication_factor,
            "group_protocol": self.group_protocol,
            **({"group_remote_assignor": self.group_remote_assignor} if self.group_remote_assignor else {}),
            **({"power_loss_replicas": self.power_loss_replicas} if self.power_loss_replicas else {}),
            **({"upgrade_path": self.upgrade_path} if self.upgrade_path else {}),
            **({"tiered": True, "retention_ms": self.topic_retention_ms()} if self.tiered else {}),
            **({"remote_store_loss": True} if self.remote_store_loss else {}),
            **({} if self.client_rack else {"client_rack": False}),
            # the KRaft voters by name (core.checks.quorum: the ISR's bounds need a quorum)
            "quorum_voters": [n.name for n in cluster.topo.controllers],
            **self.quorum_loss(cluster.spec.brokers, cluster.spec.controllers),
            **({"client_clocks": True} if self.client_clocks else {}),
            **header_entries(settings),
        }

    def topic_retention_ms(self) -> int:
        """The tiered topics' ``retention.ms``: ``retention_ms``, or keep every record."""
        return tiered.RETENTION_MS if self.retention_ms is None else self.retention_ms

    def retention_refusal(self) -> str | None:
        """The one line refusing a retention the run cannot have, or None."""
        if self.retention_ms is None:
            return None
        if not self.tiered:
            return "a retention (RunSpec.retention_ms) is for tiered runs only (RunSpec.tiered)"
        if self.retention_ms <= tiered.LOCAL_RETENTION_MS:
            return (
                f"retention_ms {self.retention_ms} must exceed the tiered topics' local retention "
                f"({tiered.LOCAL_RETENTION_MS} ms): Kafka refuses local.retention.ms above retention.ms"
            )
        return None

    def quorum_loss(self, brokers: int, controllers: int) -> dict[str, int]:
        """The header's ``controller_voters`` and ``controller_voters_lost`` when the run's power
        loss takes KRaft controller voters: in combined mode (``controllers == 0``) every broker
        is a voter, so a power loss of k replicas takes k of them at once (the policy reads
        whether that is a majority, ``core.policy``); with dedicated controllers it takes none."""
        if not self.power_loss_replicas or controllers:
            return {}
        return {"controller_voters": brokers, "controller_voters_lost": min(self.power_loss_replicas, brokers)}

    def client_settings_refusal(self) -> str | None:
        """Why the run's client settings cannot be run, in one line, or None: a linger below 0,
        records per poll below 1, requests in flight below 1, or above 5 with idempotence (the
        most the broker keeps in order for an idempotent producer; every library refuses more)."""
        if self.linger_ms < 0:
            return f"linger_ms must be 0 or more, not {self.linger_ms}"
        if self.max_poll_records < 1:
            return f"max_poll_records must be 1 or more, not {self.max_poll_records}"
        if self.max_in_flight is not None and self.max_in_flight < 1:
            return f"max_in_flight must be 1 or more, not {self.max_in_flight}"
        if self.max_in_flight is not None and self.max_in_flight > 5 and (self.idempotence or self.transactional):
            return f"max_in_flight must be 5 with idempotence, not {self.max_in_flight}"
        return None

    def transactional_id(self, producer: int) -> str:
        """Producer ``producer``'s transactional id: from the topic (a fault step can name its
        coordinator, ``coordinator:txn/{txn}``). Reused by a later run on the same topic, it
        only fences a producer that is gone."""
        return f"{self.topic}-producer-{producer}"

    def group_id(self) -> str | None:
        """The consumers' group in subscribe mode (``coordinator:group/{group}``), else None."""
        return f"{self.topic}-group" if self.consumer_mode == "subscribe" else None

    def share_group_id(self) -> str | None:
        """The consumers' share group in share mode (``coordinator:group/{share_group}``), else None."""
        return f"{self.topic}-share" if self.consumer_mode == "share" else None

    def copy_group(self) -> str:
        """The copiers' group (``coordinator:group/{copy_group}``)."""
        return f"{self.topic}-copy-group"

    def copier_transactional_id(self, copier: int) -> str:
        """Copier ``copier``'s transactional id (``coordinator:txn/{copier_txn}``)."""
        return f"{self.topic}-copier-{copier}"

    def isolation_of(self, index: int, racks: int) -> str:
        """Consumer ``index``'s isolation level: the last ``read_uncommitted_consumers`` read
        uncommitted, the others ``isolation_level``."""
        return "read_uncommitted" if index >= racks - self.read_uncommitted_consumers else self.isolation_level


def run_settings(brokers: int, broker_config: Mapping[str, str], observe_interval_s: float) -> Settings:
    """The settings a run's time bounds derive from: the broker properties the local backend
    renders (fast-failure defaults, then the spec's overrides) and the settings every client
    driver applies (``harness.clients`` ProducerSettings / ConsumerSettings defaults). One place
    for the runner's header, the scenario plans and the synthetic histories."""
    from highwater.harness.clients import ConsumerSettings, ProducerSettings
    from highwater.harness.config import fast_failure_defaults

    broker = {**fast_failure_defaults(brokers), **dict(broker_config)}

    def defaults(cls: Any) -> dict[str, Any]:
        return {f.name: f.default for f in fields(cls)}

    return Settings.from_kafka(
        broker,
        consumer=defaults(ConsumerSettings),
        producer=defaults(ProducerSettings),
        observe_interval_s=observe_interval_s,
    )


def run_spec_to_json(spec: RunSpec) -> dict[str, Any]:
    """``spec`` for the manifest: every field, paths as strings."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(spec).items()}


def run_spec_from_json(data: Mapping[str, Any], **overrides: Any) -> RunSpec:
    """A ``RunSpec`` from a manifest's ``spec`` (plus ``overrides``). Fields this version does
    not have are dropped with a warning (an older manifest); missing ones take their defaults."""
    known = {f.name for f in fields(RunSpec)}
    dropped = sorted(set(data) - known)
    if dropped:
        log.warning("run spec field(s) %s not known to this version: ignored", ", ".join(dropped))
    kw = {k: v for k, v in data.items() if k in known}
    kw.update(overrides)
    if "results_root" in kw:
        kw["results_root"] = Path(kw["results_root"])
    missing = [k for k in ("suite", "scenario") if k not in kw]
    if missing:
        raise HighwaterError(f"the recorded run spec lacks {', '.join(missing)}")
    return RunSpec(**kw)
