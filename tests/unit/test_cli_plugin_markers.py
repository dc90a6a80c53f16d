"""The pytest plugin registers every marker it reads, so a project run with ``--strict-markers``
can load it (issue 30; ``client_rotation`` is also exercised in test_client_rotation.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import highwater.pytest_plugin as plugin


def _markers_read() -> set[str]:
    source = Path(plugin.__file__).read_text()
    return set(re.findall(r"""(?:get_closest_marker|iter_markers)\(\s*["']([A-Za-z_]\w*)["']""", source))


def test_every_marker_the_plugin_reads_is_registered(tmp_path: Path) -> None:
    read = _markers_read()
    assert "client_rotation" in read
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--markers"],
        cwd=tmp_path,  # outside this repository: no pyproject.toml lists them
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    registered = set(re.findall(r"^@pytest\.mark\.(\w+)", listed.stdout, re.MULTILINE))
    assert read | {"integration"} <= registered


def test_strict_markers_accepts_the_plugins_markers(tmp_path: Path) -> None:
    (tmp_path / "test_marked.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.integration\n"
        "@pytest.mark.client_rotation('x', [1, 2], first='java')\n"
        "@pytest.mark.parametrize('x', [1, 2])\n"
        "def test_x(x):\n"
        "    assert x\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--strict-markers", "-q", "-p", "no:cacheprovider", "test_marked.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
