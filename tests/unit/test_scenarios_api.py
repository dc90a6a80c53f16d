"""The public scenario API (``highwater.scenarios``, docs/writing-scenarios.md) without a cluster:
a scenario's translation into a run spec and a nemesis, an app's output lines into the history
its consumer records (and the checks judging them), and ``assert_holds`` with known and new
violations. The plugin's fixtures in a project with no conftest of highwater's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from dataclasses import fields
from pathlib import Path

import pytest

from highwater.core.checks import CHECKS, load
from highwater.core.checks.bounds import derive, required_window_ms
from highwater.core.checks.verdict import UNKNOWN, Verdict
from highwater.core.findings import Classification
from highwater.core.history import HistoryWriter
from highwater.harness.clients import (
    CLIENTS,
    ConsumerSettings,
    PolledRecord,
    PositionChange,
    PositionReason,
    TopicPartition,
    UnknownClientError,
    WorkerGone,
    registered,
)
from highwater.harness.clients.app import APP_ENV, App, AppConsumer, AppDriver, AppError, app_env, parse_app_line
from highwater.harness.workload import ConsumerConfig, ConsumerWorker
from highwater.run_spec import RunSpec, run_settings
from highwater.runner import RunResult
from highwater.scenarios import (
    Results,
    Scenario,
    ScenarioError,
    Step,
    Workload,
    assert_holds,
    judge,
    nemesis_of,
    run_spec,
    workload_seconds,
)

SETTINGS = run_settings(3, {}, 1.0)
KILL = Step(3, "kill --target leader:{topic}/0", 20)


def app(*lines: str, sleep: float = 0.0, name: str = "test-app") -> App:
    """A program that prints ``lines`` (then waits ``sleep`` seconds) and exits."""
    body = f"import sys, time\nfor l in {list(lines)!r}:\n    print(l, flush=True)\ntime.sleep({sleep})\n"
    return App(name=name, argv=(sys.executable, "-c", body))


# -- a scenario as data -----------------------------------------------------------------------


def test_every_workload_setting_is_a_run_spec_field() -> None:
    spec_fields = {f.name for f in fields(RunSpec)}
    assert {f.name for f in fields(Workload)} <= spec_fields


def test_a_scenario_becomes_a_run_spec_and_a_scripted_nemesis() -> None:
    s = Scenario(
        "myapp",
        "leader-kill",
        steps=[KILL],  # a list is kept as a tuple
        checks=["lost-write", "poll-skip"],
        workload=Workload(topic="orders", partitions=2, rate=30, acks="1"),
    )
    assert s.steps == (KILL,) and s.checks == ("lost-write", "poll-skip") and s.key == "myapp/leader-kill"
    spec = run_spec(s, results=Results(Path("out"), "c1"), client="confluent-kafka", settings=SETTINGS, token="ab12")
    assert (spec.suite, spec.scenario, spec.campaign, spec.results_root) == ("myapp", "leader-kill", "c1", Path("out"))
    assert (spec.topic, spec.partitions, spec.rate, spec.acks, spec.client) == (
        "orders-ab12",
        2,
        30,
        "1",
        "confluent-kafka",
    )
    assert spec.replication_factor == RunSpec.replication_factor  # unset: RunSpec's default
    tail = -(-required_window_ms(derive(SETTINGS)["progress_bound_ms"].ms) // 1000)
    assert spec.duration == workload_seconds(s, SETTINGS) == 3 + 20 + tail
    nemesis = nemesis_of(s)
    assert nemesis is not None and nemesis.record == {
        "kind": "scripted",
        "steps": [{"after": 3, "fault": "kill --target leader:{topic}/0", "duration": 20}],
    }
    assert nemesis_of(Scenario("myapp", "calm")) is None


def test_a_run_gets_a_topic_of_its_own() -> None:
    s = Scenario("myapp", "calm", duration=30)
    a = run_spec(s, results=Results(), client="kafka-python", settings=SETTINGS)
    b = run_spec(s, results=Results(), client="kafka-python", settings=SETTINGS)
    assert a.topic.startswith("myapp-calm-") and a.topic != b.topic
    assert a.duration == 30  # no steps: the duration asked for


def test_an_app_scenario_names_the_app_as_the_client_and_records_the_producers() -> None:
    s = Scenario("myapp", "calm", app=App("my-app", ("prog",), version="1.2"))
    spec = run_spec(s, results=Results(), client="kafka-python", settings=SETTINGS)
    assert spec.client == "my-app"
    assert spec.extra["app"] == {"name": "my-app", "version": "1.2", "argv": ["prog"], "producers": "kafka-python"}


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: Scenario("myapp", "x", checks=("lost-writes",)), "unknown check(s) lost-writes"),
        (lambda: Scenario("myapp", "x", steps=(Step(1, "kil --target broker:1", 5),)), "unknown fault kind"),
        (lambda: Scenario("myapp", "x", steps=(Step(1, "kill --target leader:{topc}/0", 5),)), "names {topc}"),
        (lambda: Scenario("myapp", "x", steps=(Step(1, "kill --target broker:1", 0),)), "a duration > 0"),
        (lambda: Scenario("my app", "x"), "scenario suite 'my app'"),
        (
            lambda: Scenario("myapp", "x", app=App("a", ("p",)), workload=Workload(consumer_mode="subscribe")),
            "consumer_mode 'assign'",
        ),
        (
            lambda: Scenario(
                "myapp", "x", app=App("a", ("p",)), steps=(Step(1, "client-kill --target client:consumer-1", 4),)
            ),
            "only the producers'",
        ),
        (lambda: App("kafka-python", ("p",)), "none of highwater's clients"),
        (lambda: App("my-app", ()), "argv must be"),
    ],
)
def test_a_scenario_that_cannot_run_is_refused_when_made(make, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ScenarioError, AppError), match=None) as exc:
        make()
    assert words in str(exc.value)


def test_client_faults_on_the_producers_are_allowed_with_an_app() -> None:
    Scenario("myapp", "x", app=App("a", ("p",)), steps=(Step(1, "client-kill --target producers", 4),))


def test_the_app_driver_is_a_client_only_while_registered(tmp_path: Path) -> None:
    driver = AppDriver(app(), CLIENTS["kafka-python"](None), tmp_path)
    with registered(driver) as name:
        assert name == "test-app" and CLIENTS[name](None) is driver
        with pytest.raises(UnknownClientError, match="registered already"), registered(driver):
            pass
    assert "test-app" not in CLIENTS


# -- an app's output ----------------------------------------------------------------------------


def test_app_lines() -> None:
    assert parse_app_line('{"topic": "t", "partition": 1, "offset": 7, "value": "producer-0-3"}\n') == PolledRecord(
        "t", 1, 7, "producer-0-3"
    )
    assert parse_app_line(
        '{"topic": "t", "partition": 0, "offset": 2, "value": null, "leader_epoch": 4, "replica": 3}'
    ) == (PolledRecord("t", 0, 2, None, 4, 3))
    assert parse_app_line('{"position": "reset", "topic": "t", "partition": 2, "offset": 10}') == PositionChange(
        "t", 2, 10, PositionReason.RESET
    )
    for other in ("auditing orders", "", "[1, 2]", "{not json"):
        assert parse_app_line(other) is None
    for bad, words in [
        ('{"topic": "t", "partition": true, "offset": 1, "value": "v"}', "'partition' must be an integer"),
        ('{"topic": "t", "partition": 0, "value": "v"}', "'offset' must be an integer"),
        ('{"partition": 0, "offset": 1, "value": "v"}', "'topic'"),
        ('{"topic": "t", "partition": 0, "offset": 1, "value": 5}', "'value' must be a string"),
        ('{"position": "jump", "topic": "t", "partition": 0, "offset": 1}', "'position' must be one of"),
    ]:
        with pytest.raises(AppError) as exc:
            parse_app_line(bad)
        assert words in str(exc.value)


def test_an_app_is_given_its_consumers_settings() -> None:
    settings = ConsumerSettings(bootstrap=["127.0.0.1:1", "127.0.0.1:2"], client_id="consumer-1", client_rack="rack-b")
    env = app_env(settings, {TopicPartition("t", 0): 0, TopicPartition("t", 1): 5})
    assert set(env) == set(APP_ENV)
    assert env["HIGHWATER_BOOTSTRAP_SERVERS"] == "127.0.0.1:1,127.0.0.1:2"
    assert (env["HIGHWATER_CLIENT_ID"], env["HIGHWATER_CLIENT_RACK"], env["HIGHWATER_TOPIC"]) == (
        "consumer-1",
        "rack-b",
        "t",
    )
    assert (env["HIGHWATER_PARTITIONS"], env["HIGHWATER_START_OFFSETS"]) == ("0,1", '{"0": 0, "1": 5}')
    assert env["HIGHWATER_FETCH_MAX_WAIT_MS"] == str(settings.fetch_max_wait_ms)


class Listener:
    def __init__(self, seen: list[object] | None = None) -> None:
        self.seen = seen if seen is not None else []

    def on_position_change(self, change: PositionChange) -> None:
        self.seen.append(change)


def test_an_app_consumer_polls_what_the_program_wrote_in_its_order(tmp_path: Path) -> None:
    lines = [
        '{"topic": "t", "partition": 0, "offset": 0, "value": "a"}',
        "a line of its own",
        '{"topic": "t", "partition": 0, "offset": 1, "value": "b"}',
        '{"position": "reset", "topic": "t", "partition": 0, "offset": 5}',
        '{"topic": "t", "partition": 0, "offset": 5, "value": "c"}',
        '{"topic": "t", "partition": 0, "value": "no offset"}',
    ]
    seen: list[object] = []  # what the consumer worker would record, in its order
    settings = ConsumerSettings(bootstrap=["b:1"], client_id="consumer-0")
    consumer = AppConsumer(app(*lines), settings, Listener(seen), tmp_path)
    consumer.assign([TopicPartition("t", 0)])
    consumer.seek(TopicPartition("t", 0), 0)
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            try:
                seen.extend(r.offset for r in consumer.poll(200))  # type: ignore[union-attr]
            except AppError:
                seen.append("AppError")  # the worker records a failed poll and goes on
            except WorkerGone:
                seen.append("WorkerGone")
                break
        with pytest.raises(AppError, match="once it runs"):
            consumer.seek(TopicPartition("t", 0), 3)
    finally:
        consumer.close()
    assert seen == [0, 1, PositionChange("t", 0, 5, PositionReason.RESET), 5, "AppError", "WorkerGone"]
    assert (tmp_path / "consumer-0.stdout.log").read_text() == "a line of its own\n"


def test_an_app_that_does_not_exit_is_stopped_on_close(tmp_path: Path) -> None:
    consumer = AppConsumer(
        app('{"topic": "t", "partition": 0, "offset": 0, "value": "a"}', sleep=600),
        ConsumerSettings(bootstrap=["b:1"], client_id="consumer-0"),
        Listener(),
        tmp_path,
    )
    consumer.assign([TopicPartition("t", 0)])
    deadline = time.monotonic() + 30
    while not consumer.poll(200) and time.monotonic() < deadline:
        pass
    started = time.monotonic()
    consumer.close()
    assert consumer._proc is not None and consumer._proc.poll() is not None
    assert time.monotonic() - started < 5  # SIGTERM ends it


def test_an_apps_skip_is_judged_by_the_checks_as_any_consumer_s(tmp_path: Path) -> None:
    """The app's lines through highwater's own consumer worker into a real history: it read 0, 1
    and 3 of a partition whose committed log holds 0-3, so poll-skip says no and unseen names
    the value it jumped over; the records it read are no uncommitted reads."""
    values = ["producer-0-0", "producer-0-1", "producer-0-2", "producer-0-3"]
    lines = [f'{{"topic": "t", "partition": 0, "offset": {o}, "value": "{values[o]}"}}' for o in (0, 1, 3)]
    history = HistoryWriter(tmp_path / "history.jsonl", run_id="app-test", config={"acks": "all"})
    for offset, value in enumerate(values):
        op = {"topic": "t", "partition": 0, "key": None, "value": value}
        history.invoke("producer-0", "send", op)
        history.ok("producer-0", "send", {**op, "offset": offset})
    driver = AppDriver(app(*lines, sleep=600), CLIENTS["kafka-python"](None), tmp_path / "logs")
    worker = ConsumerWorker("consumer-0", ["b:1"], history, ConsumerConfig("t", 1), client=driver)
    worker.start()
    deadline = time.monotonic() + 30
    while worker.records_read < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    worker.stop()
    assert worker.records_read == 3
    for replica in (1, 2, 3):
        history.ok(
            "final",
            "final-read",
            {
                "topic": "t",
                "partition": 0,
                "replica": replica,
                "hw": 4,
                "log_start": 0,
                "records": [[o, v] for o, v in enumerate(values)],
            },
        )
    history.close()
    h = load(tmp_path / "history.jsonl")
    skip, unseen, uncommitted = (CHECKS[c](h) for c in ("poll-skip", "unseen", "uncommitted-read"))
    assert skip.valid is False
    assert {k: skip.examples[0][k] for k in ("consumer", "expected_offset", "got_offset")} == {
        "consumer": "consumer-0",
        "expected_offset": 2,
        "got_offset": 3,
    }
    assert unseen.valid is False and unseen.counts["unseen"] == 1
    assert uncommitted.valid is True


# -- judging a run --------------------------------------------------------------------------------


def result(tmp_path: Path, verdicts: dict[str, object], c: Classification) -> RunResult:
    (tmp_path / "run.json").write_text('{"repro": "pytest tests/test_x.py::test_y"}')
    vs = [Verdict(check, valid, {"n": 1}) for check, valid in verdicts.items()]  # type: ignore[arg-type]
    return RunResult("run-1", tmp_path, False, vs, {}, c)


def test_a_violation_a_known_finding_explains_is_reported_as_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = result(
        tmp_path,
        {"lost-write": True, "poll-skip": False, "progress": True},
        Classification("known", {"poll-skip": ("MY-1",)}),
    )
    j = assert_holds(r, Scenario("myapp", "x", checks=("lost-write", "poll-skip")))
    assert j.holds and [(v.check, ids) for v, ids in j.known] == [("poll-skip", ("MY-1",))]
    assert "known poll-skip: explained by MY-1" in capsys.readouterr().out


def test_a_new_violation_fails_and_names_the_check_and_the_repro(tmp_path: Path) -> None:
    r = result(
        tmp_path,
        {"lost-write": False, "poll-skip": False, "progress": True},
        Classification("violated", {"poll-skip": ("MY-1",)}, ("lost-write",)),
    )
    with pytest.raises(AssertionError) as exc:
        assert_holds(r, ["poll-skip"])
    text = str(exc.value)
    assert "VIOLATED lost-write" in text and "known poll-skip: explained by MY-1" in text
    assert "repro: pytest tests/test_x.py::test_y" in text and str(tmp_path) in text


def test_a_check_that_must_hold_and_could_not_judge_fails(tmp_path: Path) -> None:
    r = result(tmp_path, {"lost-write": True, "progress": UNKNOWN}, Classification("unknown"))
    assert judge(r, ["lost-write"]).holds
    with pytest.raises(AssertionError, match="not judged progress: unknown"):
        assert_holds(r, ["lost-write", "progress"])
    with pytest.raises(ScenarioError, match="no check named nothing"):
        judge(r, ["nothing"])


# -- the plugin in a project of its own -----------------------------------------------------------


def test_a_project_without_highwater_s_conftest_gets_the_fixtures(tmp_path: Path) -> None:
    (tmp_path / "test_fixtures.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path

            from highwater.scenarios import Results, ScenarioRunner

            def test_fixtures(highwater_results, highwater_run, client_name):
                assert highwater_results == Results(Path("out"), "c1")
                assert isinstance(highwater_run, ScenarioRunner)
                assert highwater_run.results == highwater_results and highwater_run.client == client_name
                assert highwater_run.repro.startswith("pytest test_fixtures.py::test_fixtures --kafka-version ")
            """
        )
    )
    findings = tmp_path / "findings.toml"
    findings.write_text("[[finding]]\nid = 'MY-1'\n")  # no component: refused
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_fixtures.py"]
    opts = ["--highwater-results", "out", "--highwater-campaign", "c1"]
    done = subprocess.run([*base, *opts], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    refused = subprocess.run(
        [*base, *opts, "--highwater-findings", str(findings)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 4 and "finding MY-1: 'component' must be a non-empty string" in refused.stderr
