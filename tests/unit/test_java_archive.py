"""The Java worker's class-archive bookkeeping: who trains, what is adopted, what is dropped."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from highwater.harness.clients import java_archive
from highwater.harness.clients.java_archive import archive_path, java_tag, launch

TAG = "java17-0123abcd"


def _lib(tmp_path: Path) -> Path:
    lib = tmp_path / "4.4.0" / "lib"
    lib.mkdir(parents=True)
    return lib


def test_first_worker_trains_and_a_clean_exit_adopts_its_archive(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    first = launch(lib, 17, TAG, "consumer")
    assert first.training is not None and first.flags == [f"-XX:ArchiveClassesAtExit={first.training}"]
    first.training.write_bytes(b"archive")  # what the JVM writes at its exit
    first.exercised()
    first.finish(0)
    final = archive_path(lib, TAG, "consumer")
    assert final.read_bytes() == b"archive"
    assert launch(lib, 17, TAG, "consumer").flags == [f"-XX:SharedArchiveFile={final}"]
    assert not list(lib.parent.glob(".*")), "no marker or temporary file is left"


def test_one_trainer_at_a_time_per_role(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    trainer = launch(lib, 17, TAG, "consumer")
    assert trainer.training is not None
    assert launch(lib, 17, TAG, "consumer").flags == [], "a second consumer neither trains nor maps"
    assert launch(lib, 17, TAG, "producer").training is not None, "another role trains on its own"
    trainer.finish(1)
    assert launch(lib, 17, TAG, "consumer").training is not None, "a failed trainer lets the next one train"


def test_a_failed_killed_empty_or_idle_training_is_not_adopted(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    cases = ((1, b"archive", True), (-9, b"half", True), (0, b"", True), (None, b"archive", True))
    for returncode, content, exercised in (*cases, (0, b"archive", False)):
        run = launch(lib, 17, TAG, "consumer")
        assert run.training is not None
        run.training.write_bytes(content)
        if exercised:
            run.exercised()
        run.finish(returncode)
        assert not archive_path(lib, TAG, "consumer").exists(), (returncode, content, exercised)
        assert not list(lib.parent.glob(".*")), "what it wrote is deleted, its marker released"


def test_the_marker_of_a_process_that_is_gone_is_taken_over(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    held = launch(lib, 17, TAG, "consumer")
    assert held.marker is not None
    assert launch(lib, 17, TAG, "consumer").training is None, "held by this (running) process"
    child = subprocess.Popen(["true"])
    child.wait()  # reaped: its pid runs no more
    held.marker.write_text(f"{child.pid}\n")
    assert launch(lib, 17, TAG, "consumer").training is not None
    held.marker.write_text("")  # a marker half written by a process that died at once
    assert launch(lib, 17, TAG, "consumer").training is not None


def test_a_stale_marker_of_a_dead_trainer_expires(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    dead = launch(lib, 17, TAG, "consumer", now=1000.0)
    assert dead.marker is not None
    now = dead.marker.stat().st_mtime
    assert launch(lib, 17, TAG, "consumer", now=now + 1).training is None
    assert launch(lib, 17, TAG, "consumer", now=now + java_archive.MARKER_STALE_S + 1).training is not None


def test_a_java_without_dynamic_archives_gets_no_flag(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    run = launch(lib, 11, TAG, "consumer")
    assert run.flags == [] and run.training is None
    assert not list(lib.parent.iterdir())[1:], "nothing but lib/ is written"


def test_finish_is_idempotent_and_a_rebuild_drops_archives(tmp_path: Path) -> None:
    lib = _lib(tmp_path)
    run = launch(lib, 17, TAG, "producer")
    assert run.training is not None
    run.training.write_bytes(b"x")
    run.exercised()
    run.finish(0)
    run.finish(0)  # kill() after stop(): nothing more happens
    assert archive_path(lib, TAG, "producer").is_file()
    java_archive.drop_archives(lib)
    assert not archive_path(lib, TAG, "producer").exists()


def test_another_java_build_gets_an_archive_of_its_own(tmp_path: Path) -> None:
    """A dynamic archive maps only into the JVM build that made it: a JDK update (a new binary)
    must not be handed the old archive on every start."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"one build")
    link = tmp_path / "java"
    link.symlink_to(java)
    before = java_tag(link, 17)
    assert before == java_tag(java, 17), "named by the binary a link points to"
    assert before.startswith("java17-")
    java.write_bytes(b"the updated build")
    assert java_tag(link, 17) != before


def test_a_left_over_training_file_is_swept_even_once_an_archive_exists(tmp_path: Path) -> None:
    """A trainer's JVM orphaned by a killed test process writes its file with nobody to adopt
    it: after an hour it is deleted by the next worker start, archive or not."""
    lib = _lib(tmp_path)
    final = archive_path(lib, TAG, "consumer")
    final.write_bytes(b"archive")
    orphan = final.with_name(f".{final.name}.tmp-deadbeef")
    orphan.write_bytes(b"half")
    recent = final.with_name(f".{final.name}.tmp-cafecafe")
    recent.write_bytes(b"being written")
    now = orphan.stat().st_mtime
    launch(lib, 17, TAG, "consumer", now=now + java_archive.TMP_STALE_S / 2)
    assert orphan.exists() and recent.exists(), "younger than an hour: perhaps still being written"
    os.utime(recent, (now + java_archive.TMP_STALE_S, now + java_archive.TMP_STALE_S))
    launch(lib, 17, TAG, "consumer", now=now + java_archive.TMP_STALE_S + 1)
    assert not orphan.exists() and recent.exists()
