"""highwater as a user installs it: the wheel built from this checkout, installed into a clean
virtual environment in a temporary directory outside the checkout, run from there.

``installed_highwater`` is session-scoped (building and installing takes ~30 s, once): the
environment has highwater and its dependencies only, no checkout on its path, and shares this
machine's cache (``$HIGHWATER_HOME``: the Kafka releases, Toxiproxy and the workers ``highwater
setup`` built), so its setup finds them ready, as a CI job's cached setup does."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Installed:
    """A clean environment with the wheel installed, and a folder outside the checkout."""

    bin: Path
    home: Path  # a working directory of the user's, outside the checkout
    wheel: Path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """This process's environment without what would let the checkout leak in."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.bin.parent)
        return {**env, **(extra or {})}

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 900,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(argv),
            cwd=cwd or self.home,
            env=self.env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def build_wheel(out: Path) -> Path:
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    (wheel,) = out.glob("highwater-*.whl")
    return wheel


@pytest.fixture(scope="session")
def installed_highwater(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("installed")
    wheel = build_wheel(base / "dist")
    venv.create(base / "venv", with_pip=True, clear=True)
    bin_dir = base / "venv" / "bin"
    res = subprocess.run(
        [str(bin_dir / "pip"), "install", "-q", str(wheel)], capture_output=True, text=True, timeout=900
    )
    assert res.returncode == 0, res.stdout + res.stderr
    home = base / "user"
    home.mkdir()
    yield Installed(bin_dir, home, wheel)
