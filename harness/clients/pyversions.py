"""Versions of a Python client library side by side in the cache.

A client asked for with a version (``--client confluent-kafka==2.3.0``) that differs from the
one installed with highwater is installed once with ``pip install --target`` into
``<cache>/clients/<dist>/<version>`` and put first on ``sys.path`` before the library is first
imported. A Python process can hold only one version of an extension module, so a second,
different version in the same process is refused with one clear line (run it in another
process: each run, campaign cell and pytest session is one).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from harness.clients.base import UnknownClientError
from harness.errors import SetupError
from harness.paths import home

_MARKER = ".highwater-installed"  # written last: a directory without it is an interrupted install


def release(version: str) -> tuple[int, ...]:
    """``"2.3.0"`` -> ``(2, 3, 0)``; a part that is not a number ends it (``2.3.0rc1`` -> 2.3)."""
    parts: list[int] = []
    for part in version.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def version_dir(dist: str, version: str) -> Path:
    """Where ``dist==version`` lives in the cache."""
    return home() / "clients" / dist / version


_ENVIRONMENT: dict[str, str | None] = {}  # dist -> version, read before any cache dir joins sys.path


def installed_version(dist: str) -> str | None:
    """The version of ``dist`` installed in the environment, None if it is not installed. Read
    once: a cached version put on ``sys.path`` later would otherwise be found first."""
    if dist not in _ENVIRONMENT:
        try:
            _ENVIRONMENT[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            _ENVIRONMENT[dist] = None
    return _ENVIRONMENT[dist]


def install(dist: str, version: str) -> Path:
    """Install ``dist==version`` into its cache directory (idempotent; an interrupted install is
    redone). One clear line if pip cannot."""
    target = version_dir(dist, version)
    if (target / _MARKER).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=target.parent))
    try:
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-input", "--target", str(tmp)]
        done = subprocess.run([*cmd, f"{dist}=={version}"], capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise SetupError(f"cannot install {dist}=={version} into {target}: {last}")
        (tmp / _MARKER).write_text(f"{dist}=={version}\n")
        shutil.rmtree(target, ignore_errors=True)  # an interrupted install of the same version
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def import_version(module: str, dist: str, version: str | None) -> ModuleType:
    """Import ``module`` (of distribution ``dist``) at ``version``: the installed one for None or
    the installed version, else the cache's (installed there first if needed). Refuses a second
    version in one process."""
    wanted = version if version is not None and version != installed_version(dist) else None
    loaded = sys.modules.get(module)
    if loaded is not None:
        have = _loaded_from(loaded, dist)
        if have != (wanted or "installed"):
            loaded_version = installed_version(dist) if have == "installed" else have
            raise UnknownClientError(
                f"{dist} {version or installed_version(dist)} asked for, but this process already loaded "
                f"{dist} {loaded_version}: one version per process (run the other version in its own run)"
            )
        return loaded
    if wanted is not None:
        target = str(install(dist, wanted))
        if target not in sys.path:
            sys.path.insert(0, target)
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        hint = " (run `make install`: highwater's own version comes with it)" if wanted is None else ""
        raise SetupError(f"cannot import {module} ({dist} {version or 'installed'}): {exc}{hint}") from exc


def _loaded_from(mod: ModuleType, dist: str) -> str:
    """``"installed"`` if ``mod`` was imported from the environment, else the cached version it
    was imported from."""
    where = Path(getattr(mod, "__file__", "") or "").resolve()
    root = (home() / "clients" / dist).resolve()
    if root in where.parents:
        return where.relative_to(root).parts[0]
    return "installed"
