"""The kafkajs client's pure parts on the harness side (``harness.clients.kafkajs``): the pinned
version, refusals before npm runs, what a tree's marker records, and the worker's environment.
The worker itself is proved on a real cluster by the driver contract tests."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from highwater import cli_sweep
from highwater.core.errors import SetupError
from highwater.harness.client_common import parts_of, records_of
from highwater.harness.clients import PolledRecord, UnknownClientError, kafkajs, npm_tree, parse_client_spec


def test_the_pinned_version_is_the_lock_files() -> None:
    lock = json.loads((kafkajs.PACKAGE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/kafkajs"]["version"] == kafkajs.pinned_version()
    assert lock["packages"][""]["dependencies"]["kafkajs"] == kafkajs.pinned_version()


@pytest.mark.parametrize(
    "version, message",
    [
        ("2.2", "bad kafkajs version '2.2'"),
        ("latest", "bad kafkajs version 'latest'"),
        ("1.16.0", "kafkajs 1.16.0 is too old: its worker needs 2.0.0 or later"),
    ],
)
def test_a_bad_or_too_old_version_is_one_line_and_installs_nothing(
    version: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIGHWATER_HOME", str(tmp_path))
    with pytest.raises(UnknownClientError) as raised:
        kafkajs.ensure_tree(version)
    assert str(raised.value) == message
    assert not any(tmp_path.iterdir())


def test_without_node_the_client_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(npm_tree.shutil, "which", lambda name: None)
    with pytest.raises(SetupError, match="kafkajs needs Node.js"):
        kafkajs.find_node()


def test_the_pinned_trees_stamp_follows_its_lock_file_and_others_their_version() -> None:
    pinned = kafkajs._stamp(kafkajs.pinned_version())
    assert pinned.startswith(f"kafkajs@{kafkajs.pinned_version()} lock ")
    assert kafkajs._stamp("2.1.0") == "kafkajs@2.1.0"


def test_the_worker_gets_its_tree_and_never_node_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NODE_ENV", "test")  # kafkajs would load other retry defaults
    monkeypatch.setenv("HIGHWATER_HOME", str(tmp_path))
    launch = kafkajs.launcher("/usr/bin/node", tmp_path / "2.2.4" / "node_modules").launch("consumer", "c/1 x")
    assert launch.argv == ["/usr/bin/node", str(kafkajs.WORKER), "--highwater-client=c/1 x"]
    assert launch.env is not None and "NODE_ENV" not in launch.env
    assert launch.env["NODE_PATH"] == str(tmp_path / "2.2.4" / "node_modules")
    assert launch.log_path == tmp_path / "clients" / "kafkajs" / "logs" / "c_1_x.log"


class _NpmAnswer:
    """The npm registry's answer about a package: its ``versions`` (version -> metadata)."""

    def __init__(self, versions: dict[str, dict[str, str]]) -> None:
        self.versions = versions

    def __enter__(self) -> _NpmAnswer:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def read(self) -> bytes:
        return json.dumps({"versions": self.versions}).encode()


def test_kafkajs_specs_parse_and_versions_come_from_the_npm_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_client_spec("kafkajs==2.1.0").version == "2.1.0"
    versions = {"2.2.4": {}, "2.0.0": {}, "2.3.0-beta.1": {}, "1.9.0": {"deprecated": "use 1.9.1"}}
    monkeypatch.setattr(cli_sweep.urllib.request, "urlopen", lambda url, timeout: _NpmAnswer(versions))
    assert cli_sweep.client_versions("kafkajs") == ["2.0.0", "2.2.4"]
    with pytest.raises(cli_sweep.BisectError, match="older than its driver supports"):
        cli_sweep.check_driven("kafkajs", ["1.16.0", "2.2.4"])


_PARTS_SCRIPT = """
const { partOf, errorText } = require(process.argv[1])
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'))
const messages = input.records.map(r => ({
  offset: String(r.offset),
  value: r.value === null ? null : Buffer.from(r.value, 'utf8'),
  batchContext: r.epoch === undefined ? undefined : { partitionLeaderEpoch: r.epoch }
}))
const cause = Object.assign(new Error('Not enough in-sync replicas'), { name: 'KafkaJSProtocolError', type: 'NOT_ENOUGH_REPLICAS' })
const retries = Object.assign(new Error('Not enough in-sync replicas'), { name: 'KafkaJSNumberOfRetriesExceeded', cause })
process.stdout.write(JSON.stringify({ part: partOf('t', 2, input.replica, messages), error: errorText(retries) }))
"""


def _worker_parts(records: list[dict[str, Any]], replica: int | None) -> dict[str, Any]:
    node, _ = kafkajs.find_node()
    modules = kafkajs.ensure_tree(kafkajs.pinned_version())
    env = {**os.environ, "NODE_PATH": str(modules)}
    done = subprocess.run(
        [node, "-e", _PARTS_SCRIPT, str(kafkajs.WORKER)],
        input=json.dumps({"records": records, "replica": replica}),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    return dict(json.loads(done.stdout))


def test_the_node_workers_poll_entries_read_back_as_the_records_it_was_given() -> None:
    """The JavaScript encoder of poll replies against the harness's decoder (``records_of``):
    gaps in offsets, an epoch change, a batch without an epoch (-1) and a null value."""
    records = [
        {"offset": 5, "value": "a", "epoch": 3},
        {"offset": 6, "value": "b", "epoch": 3},
        {"offset": 9, "value": None, "epoch": 4},  # a gap (compaction, a control record)
        {"offset": 10, "value": "d", "epoch": -1},  # no epoch in the batch
        {"offset": 11, "value": "é", "epoch": 4},
    ]
    got = _worker_parts(records, 2)
    assert got["part"]["offsets"] == [5, 2, 9, 3]
    assert got["part"]["epochs"] == [3, 2, 4, 1, None, 1, 4, 1]
    back = records_of({"parts": [got["part"]]})
    epochs = [None if r["epoch"] < 0 else r["epoch"] for r in records]
    expected = [PolledRecord("t", 2, r["offset"], r["value"], e, 2) for r, e in zip(records, epochs)]
    assert back == expected
    assert parts_of(expected) == [got["part"]]
    assert got["error"] == (
        "KafkaJSNumberOfRetriesExceeded: Not enough in-sync replicas "
        "(caused by KafkaJSProtocolError: NOT_ENOUGH_REPLICAS: Not enough in-sync replicas)"
    )


def checkout(tmp_path: Path, name: str = "kafkajs", version: str = "2.2.4", main: bool = True) -> Path:
    tree = tmp_path / "src" / "kafkajs"
    tree.mkdir(parents=True)
    (tree / "package.json").write_text(json.dumps({"name": name, "version": version, "main": "index.js"}))
    if main:
        (tree / "index.js").write_text("module.exports = require('./src')\n")
    return tree


def test_a_local_checkout_is_linked_into_a_tree_and_named_by_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIGHWATER_HOME", str(tmp_path / "home"))
    tree = checkout(tmp_path)
    modules, version = kafkajs.local_tree(tree)
    assert (modules / "kafkajs").resolve() == tree.resolve()  # a link: each run sees the code as it is now
    assert version.startswith("2.2.4+local.")
    again, same = kafkajs.local_tree(tree)
    assert (again, same) == (modules, version)
    assert parse_client_spec(f"kafkajs@{tree}").path == str(tree.resolve())


@pytest.mark.parametrize(
    "kind, message",
    [
        ("not a package", "is not a kafkajs checkout: no readable package.json"),
        ("another package", "holds the package 'kafka-node', not kafkajs"),
        ("too old", "is 1.16.0: its worker needs 2.0.0 or later"),
        ("no main file", "its main file index.js is missing"),
    ],
)
def test_what_is_no_kafkajs_checkout_is_one_line(
    kind: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIGHWATER_HOME", str(tmp_path / "home"))
    if kind == "not a package":
        tree = tmp_path / "empty"
        tree.mkdir()
    else:
        tree = checkout(
            tmp_path,
            name="kafka-node" if kind == "another package" else "kafkajs",
            version="1.16.0" if kind == "too old" else "2.2.4",
            main=kind != "no main file",
        )
    with pytest.raises(UnknownClientError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kafkajs.local_tree(tree)
    assert not (tmp_path / "home" / "clients").exists()


_BATCH_SCRIPT = """
const { batchLength } = require(process.argv[1])
const sizes = JSON.parse(require('fs').readFileSync(0, 'utf8'))
process.stdout.write(JSON.stringify(sizes.map(([n, bytes]) =>
  batchLength(Array.from({ length: n }, (_, i) => [i, 'x'.repeat(bytes)])))))
"""


def test_the_node_workers_produce_requests_stay_below_the_brokers_message_limit() -> None:
    """A partition's queued sends go out in requests of at most 10,000 records and ~512 KiB of
    values (Kafka's message.max.bytes is 1 MB: 10,000 records of 110 B in one batch were refused
    as MESSAGE_TOO_LARGE), and a record larger than that still goes alone."""
    node, _ = kafkajs.find_node()
    done = subprocess.run(
        [node, "-e", _BATCH_SCRIPT, str(kafkajs.WORKER)],
        input=json.dumps([[3, 100], [20000, 10], [20000, 110], [2, 600 * 1024]]),
        capture_output=True,
        text=True,
        env={**os.environ, "NODE_PATH": str(kafkajs.ensure_tree(kafkajs.pinned_version()))},
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == [3, 10000, 512 * 1024 // 110, 1]


def test_ckjs_versions_are_its_scoped_package_s_on_the_npm_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """ckjs is the short name of @confluentinc/kafka-javascript: a sweep lists that package."""
    asked: list[str] = []

    def urlopen(url: str, timeout: float) -> _NpmAnswer:
        asked.append(url)
        return _NpmAnswer({"1.10.1": {}, "0.6.1": {}, "1.11.0-rc.1": {}})

    monkeypatch.setattr(cli_sweep.urllib.request, "urlopen", urlopen)
    assert cli_sweep.client_versions("ckjs") == ["0.6.1", "1.10.1"]
    assert asked == ["https://registry.npmjs.org/@confluentinc/kafka-javascript"]
    with pytest.raises(cli_sweep.BisectError, match="older than its driver supports"):
        cli_sweep.check_driven("ckjs", ["0.6.1", "1.10.1"])


def test_an_npm_build_past_its_time_ends_whole_in_one_line(tmp_path: Path) -> None:
    """A native build that outlives its time is one SetupError, and the build's own children
    (node-gyp, make) end with npm: none goes on writing into the tree the caller removes."""
    pidfile = tmp_path / "child.pid"
    npm = tmp_path / "npm"
    npm.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {pidfile}\nwait\n")
    npm.chmod(0o755)
    client = npm_tree.NpmClient("slow", "slow-package", (1, 0, 0), "1.0.0", build=dict, timeout_s=1.0)
    with pytest.raises(SetupError, match="not done within 1 s"):
        npm_tree._npm_install(client, str(npm), tmp_path, "2.0.0")
    child = Path(f"/proc/{int(pidfile.read_text())}/stat")
    deadline = time.monotonic() + 10
    while child.exists() and child.read_text().split(")")[-1].split()[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)  # the kill is delivered asynchronously; ended means gone or a zombie
    assert not child.exists() or child.read_text().split(")")[-1].split()[0] == "Z", "the build's child outlived it"


def test_a_built_ckjs_tree_is_used_without_the_build_s_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """ckjs's build needs the Node.js headers, asked only when a version is installed: a tree
    built already is used where they are missing."""
    from highwater.harness.clients import ckjs

    monkeypatch.setenv("HIGHWATER_HOME", str(tmp_path))

    def missing() -> str:
        raise SetupError("no Node.js headers")

    monkeypatch.setattr(ckjs, "node_headers", missing)
    client = ckjs.client()
    root = client.tree_dir(ckjs.PINNED)
    (root / "node_modules").mkdir(parents=True)
    (root / npm_tree._MARKER).write_text(client.stamp(ckjs.PINNED) + "\n")
    assert ckjs.ensure_tree(ckjs.PINNED) == root / "node_modules"
    with pytest.raises(SetupError, match="no Node.js headers"):
        assert client.build is not None
        client.build()
