"""The settle phase's diagnostics: a stuck thread is named with the line it waits on."""

from __future__ import annotations

import threading
from pathlib import Path

from highwater.runner import dump_thread_stacks


def test_dump_names_each_thread_and_where_it_waits(tmp_path: Path) -> None:
    release = threading.Event()

    def stuck_in_a_client() -> None:
        release.wait(30)

    t = threading.Thread(target=stuck_in_a_client, name="consumer-0", daemon=True)
    t.start()
    try:
        dump_thread_stacks(tmp_path / "threads.txt", "waiting for the group")
    finally:
        release.set()
        t.join(5)
    text = (tmp_path / "threads.txt").read_text()
    assert text.startswith("# waiting for the group")
    section = text.split("--- thread consumer-0 ")[1].split("--- thread ")[0]
    assert "stuck_in_a_client" in section and "release.wait(30)" in section
    assert "--- thread MainThread " in text
