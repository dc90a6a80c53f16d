"""The Go workers' builder (``harness.clients.go_worker``): refusals in one line before any
build, and the digest that rebuilds a worker when its sources or the shared protocol change."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from highwater.harness.clients import go_worker
from highwater.harness.clients.base import UnknownClientError
from highwater.harness.clients.franz_go import WORKER
from highwater.harness.clients.sarama import WORKER as SARAMA


@pytest.mark.parametrize(
    ("version", "says"),
    [
        ("one.two", "bad franz-go version 'one.two' (e.g. "),
        ("1.18.1", "franz-go 1.18.1 is too old: its worker needs 1.19.0 or later (ErrDataLoss.ConsumedToEpoch"),
    ],
)
def test_a_malformed_or_too_old_version_is_one_line_before_any_build(version: str, says: str) -> None:
    with pytest.raises(UnknownClientError) as err:
        go_worker.ensure_worker(WORKER, version)
    assert str(err.value).startswith(says) and "\n" not in str(err.value)


def test_a_v_prefix_names_the_same_version() -> None:
    assert go_worker.exact_version(WORKER, "v1.22.3") == go_worker.exact_version(WORKER, "1.22.3") == "1.22.3"


@pytest.mark.parametrize("worker", [WORKER, SARAMA], ids=lambda w: w.name)
def test_the_pinned_version_is_the_one_go_mod_requires(worker: go_worker.GoWorker) -> None:
    text = (worker.source / "go.mod").read_text()
    assert f"{worker.module} v{worker.pinned_version()}\n" in text


def test_sarama_before_its_floor_is_refused_and_from_1_50_2_builds_with_kip447_offsets() -> None:
    from highwater.harness.clients.sarama import build_tags

    with pytest.raises(UnknownClientError, match=r"^sarama 1\.40\.1 is too old: its worker needs 1\.41\.2"):
        go_worker.exact_version(SARAMA, "1.40.1")
    assert build_tags("1.50.1") == [] and build_tags("1.50.2") == ["-tags", "highwater_group_metadata"]


def test_the_digest_covers_the_worker_and_the_shared_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(go_worker.GO_SOURCES / WORKER.folder, tmp_path / WORKER.folder)
    shutil.copytree(go_worker.GO_SOURCES / go_worker.PROTOCOL, tmp_path / go_worker.PROTOCOL)
    monkeypatch.setattr(go_worker, "GO_SOURCES", tmp_path)
    first = WORKER.source_digest()
    assert WORKER.source_digest() == first
    (tmp_path / go_worker.PROTOCOL / "protocol.go").write_text("package protocol\n")
    second = WORKER.source_digest()
    assert second != first
    (tmp_path / WORKER.folder / "main.go").write_text("package main\n")
    assert WORKER.source_digest() not in (first, second)


def test_a_build_is_named_by_its_tags_too() -> None:
    """A version whose build takes other tags (a role added from some release on) is rebuilt: a
    worker built before the tag applied would answer the role as missing."""
    assert WORKER.build_digest("1.22.3") == WORKER.build_digest("1.22.3")
    assert len({WORKER.build_digest(v) for v in ("1.20.7", "1.21.0", "1.22.3")}) == 3
    assert WORKER.build_digest("1.20.6") == WORKER.build_digest("1.20.7")  # no tag for either


def test_the_proxy_s_list_gives_stable_versions_oldest_first() -> None:
    listing = "v1.22.3\nv1.9.0\nv1.16.0\nv1.20.0-rc1\nv0.0.0-20240101000000-abcdef123456\nv1.16.1\n"
    assert go_worker.stable_versions(listing) == ["1.9.0", "1.16.0", "1.16.1", "1.22.3"]
    assert go_worker.stable_versions("") == []


def test_a_module_path_is_escaped_and_the_proxy_taken_from_goproxy(monkeypatch: pytest.MonkeyPatch) -> None:
    assert go_worker.escaped_module("github.com/IBM/sarama") == "github.com/!i!b!m/sarama"
    assert go_worker.escaped_module("github.com/twmb/franz-go") == "github.com/twmb/franz-go"
    monkeypatch.setenv("GOPROXY", "off,https://goproxy.example/,direct")
    assert go_worker.module_proxy() == "https://goproxy.example"
    monkeypatch.setenv("GOPROXY", "direct")
    assert go_worker.module_proxy() == go_worker.DEFAULT_PROXY


def _proxy(monkeypatch: pytest.MonkeyPatch, listing: bytes, missing: tuple[str, ...] = ()) -> list[str]:
    """A fake Go module proxy whose ``@v/list`` answers ``listing`` and whose URLs ending in one
    of ``missing`` answer 404; returns the URLs asked, in order."""
    asked: list[str] = []

    class Answer:
        def __init__(self, url: str) -> None:
            asked.append(url)
            if url.endswith(missing):
                raise go_worker.urllib.error.HTTPError(url, 404, "not found", {}, None)  # type: ignore[arg-type]

        def __enter__(self) -> Answer:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def read(self) -> bytes:
            return listing

    monkeypatch.delenv("GOPROXY", raising=False)
    monkeypatch.setattr(go_worker.urllib.request, "urlopen", lambda url, timeout: Answer(url))
    return asked


def test_a_sweep_lists_a_go_client_s_versions_from_the_module_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    from highwater import cli_sweep

    asked = _proxy(monkeypatch, b"v1.21.3\nv1.22.3\nv1.22.0-beta1\n")
    assert cli_sweep.client_versions("franz-go") == ["1.21.3", "1.22.3"]
    assert asked == ["https://proxy.golang.org/github.com/twmb/franz-go/@v/list"]
    assert cli_sweep.oldest_driven("franz-go") == WORKER.oldest


def test_an_unreachable_module_proxy_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from highwater.core.errors import SetupError

    def refuse(url: str, timeout: float) -> None:
        raise go_worker.urllib.error.URLError("no route")

    monkeypatch.setattr(go_worker.urllib.request, "urlopen", refuse)
    with pytest.raises(SetupError) as err:
        go_worker.published_versions(WORKER)
    assert "cannot list franz-go versions on the Go module proxy" in str(err.value) and "\n" not in str(err.value)


def test_a_bisect_end_the_proxy_serves_but_does_not_list_is_a_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """proxy.golang.org lists franz-go 1.20.2 and 1.20.5, not 1.20.3, which it serves: named as
    a bisect's end, 1.20.3 is asked for by its .info and joins the list; 1.20.9, which it does
    not serve (404), does not."""
    from highwater import cli_sweep

    asked = _proxy(monkeypatch, b"v1.20.2\nv1.20.5\n", missing=("v1.20.9.info",))
    assert cli_sweep.client_versions("franz-go", ["1.20.3", "v1.20.9", "1.20.2"]) == ["1.20.2", "1.20.3", "1.20.5"]
    base = "https://proxy.golang.org/github.com/twmb/franz-go/@v"
    assert sorted(asked) == [f"{base}/list", f"{base}/v1.20.3.info", f"{base}/v1.20.9.info"]
    order = cli_sweep.search_order(cli_sweep.client_versions("franz-go", ["1.20.3"]), "1.20.3", "1.20.2")
    assert order == ["1.20.3", "1.20.2"]


def test_the_preferred_replica_recheck_is_franz_go_s_alone() -> None:
    """``preferred_replica_recheck_ms`` is franz-go's RecheckPreferredReplicaInterval: any other
    client is refused in one line, as is an interval below 1 ms; unset, nothing is refused."""
    from highwater.harness.clients.franz_go import recheck_refusal

    assert recheck_refusal("franz-go", 1000) is None
    assert recheck_refusal("java", None) is None
    for client in ("java", "sarama", "confluent-kafka"):
        refused = recheck_refusal(client, 1000)
        assert refused is not None and client in refused and "\n" not in refused
    assert recheck_refusal("franz-go", 0) == "preferred_replica_recheck_ms must be 1 or more, not 0"


def test_a_sweep_s_listed_go_version_the_proxy_serves_but_does_not_list_is_swept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--versions 1.20.3,1.20.5`` of franz-go: 1.20.3 is served, not listed, and swept."""
    from highwater import cli_sweep
    from highwater.sweep import select_versions

    _proxy(monkeypatch, b"v1.20.2\nv1.20.5\n")
    listed = ["1.20.3", "1.20.5"]
    assert select_versions(cli_sweep.client_versions("franz-go", listed), listed, what="franz-go") == listed


def test_the_go_workers_launch_a_share_consumer_with_the_settings_as_they_are(tmp_path: Path) -> None:
    from highwater.harness.clients.share import ShareLauncher, ShareSettings

    launcher = go_worker.GoLauncher("franz-go", tmp_path / "worker")
    assert isinstance(launcher, ShareLauncher)
    config = launcher.share_config(ShareSettings(["127.100.0.1:9092"], "m-0", "g", max_poll_records=7))
    assert config["client"] == "franz-go"
    assert config["settings"]["group_id"] == "g" and config["settings"]["max_poll_records"] == 7


def test_the_protocol_package_s_go_tests_pass(tmp_path: Path) -> None:
    """The library-neutral Go side's own tests (``clients/go/protocol/*_test.go``: the share
    consumer's acknowledgement book, ``AckBook``); the package needs no module but the standard
    library, so this runs offline."""
    here = tmp_path / go_worker.PROTOCOL
    shutil.copytree(go_worker.GO_SOURCES / go_worker.PROTOCOL, here)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    done = subprocess.run(
        [go_worker.find_go(), "test", "-count=1", "./..."],
        cwd=here,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout
