"""Where highwater keeps its cache (Kafka distributions, Toxiproxy) and its run state."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """``$HIGHWATER_HOME``, else ``~/.cache/highwater``."""
    env = os.environ.get("HIGHWATER_HOME")
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "highwater"
    root.mkdir(parents=True, exist_ok=True)
    return root


def clusters_dir() -> Path:
    """One sub-directory per cluster that is (or was) running: state, configs, data, logs."""
    d = home() / "clusters"
    d.mkdir(parents=True, exist_ok=True)
    return d


def slots_dir() -> Path:
    """Lock files that reserve an address slot (see harness.topology) for a live cluster."""
    d = home() / "slots"
    d.mkdir(parents=True, exist_ok=True)
    return d
