"""The Go workers' builder (``harness.clients.go_worker``): refusals in one line before any
build, and the digest that rebuilds a worker when its sources or the shared protocol change."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from highwater.harness.clients import go_worker
from highwater.harness.clients.base import UnknownClientError
from highwater.harness.clients.franz_go import WORKER, pinned_version


@pytest.mark.parametrize(
    ("version", "says"),
    [
        ("one.two", "bad franz-go version 'one.two' (e.g. "),
        ("1.15.0", "franz-go 1.15.0 is too old: its worker needs 1.16.0 or later (AddConsumePartitions"),
    ],
)
def test_a_malformed_or_too_old_version_is_one_line_before_any_build(version: str, says: str) -> None:
    with pytest.raises(UnknownClientError) as err:
        go_worker.ensure_worker(WORKER, version)
    assert str(err.value).startswith(says) and "\n" not in str(err.value)


def test_a_v_prefix_names_the_same_version() -> None:
    assert go_worker.exact_version(WORKER, "v1.22.3") == go_worker.exact_version(WORKER, "1.22.3") == "1.22.3"


def test_the_pinned_version_is_the_one_go_mod_requires() -> None:
    text = (WORKER.source / "go.mod").read_text()
    assert f"github.com/twmb/franz-go v{pinned_version()}\n" in text


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
