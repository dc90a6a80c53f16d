"""The versions of the Python client libraries.

Every Python client under test runs in a worker process on the interpreter of its version's
virtual environment (``harness.clients.python``), so one process holds one version of a library
and it is simply imported (``import_library``). ``installed_version`` is the version installed
with highwater (``core.versions`` orders versions).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from types import ModuleType

from highwater.core.errors import SetupError


@functools.cache
def installed_version(dist: str) -> str | None:
    """The version of ``dist`` installed in this environment, None if it is not installed."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def import_library(module: str, dist: str) -> ModuleType:
    """Import ``module`` (of distribution ``dist``) from this interpreter's environment: a
    worker's, whose virtual environment holds the one version under test. One line if it cannot."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SetupError(
            f"cannot import {module} ({dist}): {exc} (pip install highwater again, or `make install` in a checkout)"
        ) from exc
