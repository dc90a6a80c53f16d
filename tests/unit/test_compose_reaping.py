"""Which containers the compose backend reaps: those whose owner process is gone or replaced;
never a live owner's, never a file a user started by hand."""

from __future__ import annotations

import os
import subprocess

from highwater.harness.compose.reaping import LABEL_OWNER, LABEL_OWNER_START, USER_OWNED, owner_alive, owner_labels


def test_a_live_owner_keeps_its_containers() -> None:
    assert owner_alive(owner_labels("c", "kafka-1"))


def test_a_dead_owner_loses_them() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert not owner_alive({**owner_labels("c", "kafka-1"), LABEL_OWNER: str(proc.pid)})


def test_a_reused_pid_is_not_the_owner() -> None:
    labels = {**owner_labels("c", "kafka-1"), LABEL_OWNER_START: "1"}  # this pid, another start time
    assert labels[LABEL_OWNER] == str(os.getpid())
    assert not owner_alive(labels)


def test_user_started_files_and_bad_labels() -> None:
    assert owner_alive({LABEL_OWNER: USER_OWNED})
    assert owner_alive({})  # no owner label: not ours to judge
    assert not owner_alive({LABEL_OWNER: "not-a-pid"})
    assert not owner_alive({LABEL_OWNER: "0"})
