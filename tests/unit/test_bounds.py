"""core.checks.bounds: every bound derived from its settings, with its formula; explicit
header values win; the header a run writes carries them."""

from __future__ import annotations

from highwater.core.checks.bounds import (
    BOUND_USERS,
    Settings,
    derive,
    describe,
    header_entries,
    required_window_ms,
    resolve,
    stall_bound_name,
)

FAST = Settings(
    replica_lag_time_max_ms=4000,
    broker_session_timeout_ms=4000,
    broker_heartbeat_interval_ms=500,
    replica_socket_timeout_ms=5000,
    replica_fetch_wait_max_ms=200,
    consumer_metadata_max_age_ms=5000,
    consumer_fetch_max_wait_ms=500,
    consumer_request_timeout_ms=10000,
    producer_request_timeout_ms=5000,
    producer_transaction_timeout_ms=20000,
    observe_interval_ms=1000,
)


def test_fast_failure_settings_give_bounds_of_seconds() -> None:
    ms = {n: b.ms for n, b in derive(FAST).items()}
    assert ms == {
        "isr_leave_bound_ms": 9000,
        "isr_slack_ms": 5000,
        "controller_failover_ms": 6500,
        "isr_rejoin_bound_ms": 12000,
        "follower_fetch_grace_ms": 7500,
        "follower_fetch_bound_ms": 7500,
        "consumer_stall_bound_ms": 13500,
        "consumer_stall_hang_bound_ms": 23500,
        "progress_bound_ms": 12500,
        "member_fence_grace_ms": 15000,
        "member_stall_bound_ms": 2500,
        "hw_propagation_bound_ms": 300,
        "follower_latency_bound_ms": 125,
        "txn_hold_bound_ms": 32000,
    }
    assert set(ms) == set(BOUND_USERS)


def test_each_bound_follows_its_settings() -> None:
    base = derive(FAST)
    slower_meta = derive(Settings(**{**FAST.__dict__, "consumer_metadata_max_age_ms": 300_000}))
    for name in ("follower_fetch_bound_ms", "consumer_stall_bound_ms", "progress_bound_ms"):
        assert slower_meta[name].ms - base[name].ms == 295_000
    assert slower_meta["isr_leave_bound_ms"] == base["isr_leave_bound_ms"]
    longer_session = derive(Settings(**{**FAST.__dict__, "broker_session_timeout_ms": 9000}))
    assert longer_session["isr_leave_bound_ms"].ms == 9000 + 500 + 1000 + 2000  # fencing now dominates
    more_slack = derive(Settings(**{**FAST.__dict__, "bound_slack_ms": 3000}))
    # every bound of a single event carries the slack; a bound on a median does not, nor the
    # controller failover, a term the rejoin bound (which has its slack) may add
    medians = ("follower_latency_bound_ms", "hw_propagation_bound_ms", "controller_failover_ms")
    assert all(more_slack[n].ms - base[n].ms == 1000 for n in base if n not in medians)
    assert all(more_slack[n] == base[n] for n in medians)
    slower_quorum = derive(Settings(**{**FAST.__dict__, "controller_quorum_election_timeout_ms": 3000}))
    assert slower_quorum["controller_failover_ms"].ms - base["controller_failover_ms"].ms == 4000
    longer_follower_wait = derive(Settings(**{**FAST.__dict__, "replica_fetch_wait_max_ms": 500}))
    assert longer_follower_wait["hw_propagation_bound_ms"].ms == 750
    longer_wait = derive(Settings(**{**FAST.__dict__, "consumer_fetch_max_wait_ms": 1000}))
    assert longer_wait["follower_latency_bound_ms"].ms == 250


def test_formulas_name_the_settings_and_show_the_numbers() -> None:
    b = derive(FAST)["consumer_stall_bound_ms"]
    assert "replica.lag.time.max.ms" in b.formula and "metadata.max.age.ms" in b.formula
    assert b.computed == "max(1.5*4000, 4000 + 500) + 5000 + 500 + 2000"
    assert eval(b.computed.replace("max(1.5*4000", "max(6000")) == b.ms  # noqa: S307 - our own arithmetic
    assert all(b.name in line and str(b.ms) in line for b, line in zip(resolve({}).values(), describe({})))


def test_resolve_derives_from_the_header_and_explicit_values_win() -> None:
    config = header_entries(FAST)
    assert {n: b.ms for n, b in resolve(config).items()} == {n: b.ms for n, b in derive(FAST).items()}
    assert config["bounds"]["progress_bound_ms"]["formula"].startswith("producer request.timeout.ms")
    settings_only = {k: v for k, v in config.items() if k in Settings.__dataclass_fields__}
    assert resolve(settings_only)["follower_fetch_bound_ms"].ms == 7500
    given = resolve({**settings_only, "progress_bound_ms": 100})["progress_bound_ms"]
    assert given.ms == 100 and given.given
    # a history without settings: Kafka's defaults (minutes)
    assert resolve({})["follower_fetch_bound_ms"].ms == 300_000 + 500 + 2000


def test_older_headers_keep_their_meaning() -> None:
    old = resolve({"replica_lag_time_max_ms": 100, "isr_slack_ms": 50})
    assert old["isr_leave_bound_ms"].ms == 150 and "isr_slack_ms" in old["isr_leave_bound_ms"].formula


def test_margin_and_stall_bound_kind() -> None:
    assert required_window_ms(1000) == 3000 and required_window_ms(20_000) == 24_000
    assert stall_bound_name("pause") == "consumer_stall_hang_bound_ms"
    assert stall_bound_name("timeout") == "consumer_stall_hang_bound_ms"
    assert stall_bound_name("kill") == stall_bound_name("cut") == stall_bound_name(None) == "consumer_stall_bound_ms"


def test_settings_from_kafka_names() -> None:
    s = Settings.from_kafka(
        {
            "replica.lag.time.max.ms": "4000",
            "broker.session.timeout.ms": "4000",
            "broker.heartbeat.interval.ms": "500",
            "replica.socket.timeout.ms": "5000",
            "replica.fetch.wait.max.ms": "200",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "10000",
        },
        consumer={"metadata_max_age_ms": 5000, "request_timeout_ms": 10000},
        producer={"request_timeout_ms": 5000, "transaction_timeout_ms": 20000},
        observe_interval_s=1.0,
    )
    assert s == FAST
    assert Settings.from_config({"replica_lag_time_max_ms": 7, "observe_interval_ms": True}).observe_interval_ms == 1000
