"""--client-rotation: the n-th scenario of a marked test runs on the n-th client, in turn; the
tests that share one scenario's run agree on its client; unmarked tests keep the session's."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from highwater.pytest_plugin import rotated_client

SCENARIOS = ["leader-kill", "leader-partition", "leader-pause", "fourth"]
ROTATION = "kafka-python, confluent-kafka,java"


@dataclass
class _Callspec:
    params: dict[str, Any]


@dataclass
class _Node:
    """The two things ``rotated_client`` reads of a pytest item."""

    params: dict[str, Any] | None
    marker: Any = field(default_factory=lambda: pytest.mark.client_rotation("scenario", SCENARIOS).mark)

    @property
    def callspec(self) -> _Callspec | None:
        return None if self.params is None else _Callspec(self.params)

    def get_closest_marker(self, name: str) -> Any:
        return self.marker if name == "client_rotation" else None


def test_scenarios_take_the_clients_in_turn() -> None:
    got = [rotated_client(_Node({"scenario": s}), ROTATION, "session") for s in SCENARIOS]  # type: ignore[arg-type]
    assert got == ["kafka-python", "confluent-kafka", "java", "kafka-python"]


def test_a_turn_can_start_at_a_named_client() -> None:
    marker = pytest.mark.client_rotation("scenario", SCENARIOS[:3], first="kafkajs").mark
    rotation = "kafka-python,confluent-kafka,java,kafkajs==2.2.4"
    got = [rotated_client(_Node({"scenario": s}, marker), rotation, "session") for s in SCENARIOS[:3]]  # type: ignore[arg-type]
    assert got == ["kafkajs==2.2.4", "kafka-python", "confluent-kafka"]
    unknown = pytest.mark.client_rotation("scenario", SCENARIOS[:3], first="nobody").mark
    assert rotated_client(_Node({"scenario": "leader-kill"}, unknown), rotation, "session") == "kafka-python"  # type: ignore[arg-type]


def test_a_test_can_add_clients_to_the_rotation() -> None:
    """``also`` clients join the turn after the rotation's own, unless it names them already."""
    marker = pytest.mark.client_rotation("scenario", SCENARIOS[:3], first="kafkajs", also=("franz-go",)).mark
    rotation = "kafka-python,confluent-kafka,java,kafkajs"
    got = [rotated_client(_Node({"scenario": s}, marker), rotation, "session") for s in SCENARIOS[:3]]  # type: ignore[arg-type]
    assert got == ["kafkajs", "franz-go", "kafka-python"]
    pinned = "kafka-python,franz-go==1.21.3,kafkajs"  # named already: its version stays, no second turn
    got = [rotated_client(_Node({"scenario": s}, marker), pinned, "session") for s in SCENARIOS[:3]]  # type: ignore[arg-type]
    assert got == ["kafkajs", "kafka-python", "franz-go==1.21.3"]


def test_the_session_client_without_rotation_marker_or_parameters() -> None:
    assert rotated_client(_Node({"scenario": "leader-pause"}), None, "session") == "session"  # type: ignore[arg-type]
    assert rotated_client(_Node({"scenario": "leader-pause"}, marker=None), ROTATION, "s") == "s"  # type: ignore[arg-type]
    assert rotated_client(_Node(None), ROTATION, "session") == "session"  # type: ignore[arg-type]


def test_each_client_gets_its_own_topic_and_the_default_keeps_its_name() -> None:
    from highwater.suites.scenario import client_topic

    assert client_topic("dur-leader-kill", "kafka-python") == "dur-leader-kill"
    assert client_topic("dur-leader-kill", "java:3.9.1") == "dur-leader-kill-java-3-9-1"
    once = client_topic("t", "confluent-kafka==2.3.0")
    assert once == "t-confluent-kafka-2-3-0" and client_topic(once, "confluent-kafka==2.3.0") == once


def test_a_project_with_strict_markers_can_use_the_rotation_marker(tmp_path: Path) -> None:
    """The plugin registers every marker it reads: outside this repository (no pyproject.toml
    listing them) ``--strict-markers`` accepts ``client_rotation``."""
    (tmp_path / "test_rotated.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.client_rotation('x', [1, 2])\n"
        "@pytest.mark.parametrize('x', [1, 2])\n"
        "def test_x(x):\n"
        "    assert x\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--strict-markers", "-q", "-p", "no:cacheprovider", "test_rotated.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_client_turns_run_a_test_on_each_named_client_under_the_rotation_only(tmp_path: Path) -> None:
    """``client_turns(A, B)``: with ``--client-rotation`` the test runs once on A and once on B
    (its ``client_name``), in place and not regrouped with other modules; without it, once on the
    session's client."""
    (tmp_path / "test_turns.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.client_turns('franz-go', 'sarama')\n"
        "def test_turn(client_name):\n"
        "    print('TURN', client_name)\n\n"
        "def test_after(client_name):\n"
        "    print('AFTER', client_name)\n"
    )

    def run(*args: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--strict-markers", "-q", "-s", "-p", "no:cacheprovider", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return [line.strip(".") for line in done.stdout.splitlines() if line.strip(".").startswith(("TURN", "AFTER"))]

    assert run("test_turns.py", "--client-rotation", "kafka-python,java") == [
        "TURN franz-go",
        "TURN sarama",
        "AFTER kafka-python",
    ]
    assert run("test_turns.py") == ["TURN kafka-python", "AFTER kafka-python"]
