"""One way to run the suites through pytest in a child process, for ``run``, ``campaign``,
``sweep`` and ``bisect``: the options they share as one typed object, turned into an argv.

The suites run in a child pytest (not ``pytest.main`` in this process) so that each Kafka
release, client version and seed gets a fresh interpreter: a client library cannot be loaded in
two versions in one process, and a run that hangs or dies takes only its child with it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HighwaterError


def suites_dir() -> Path:
    """Where the ``suites`` package lives: a source checkout or an installed package alike.
    Located, not imported: the suites are test programs run by pytest, not a layer below us."""
    spec = importlib.util.find_spec("suites")
    if spec is None or spec.origin is None:
        raise HighwaterError("the suites package is not installed (pip install highwater)")
    return Path(spec.origin).resolve().parent


def locate(test: str) -> str:
    """A ``suites/...`` test id that is not a path here names a test of the installed package."""
    path = test.split("::", 1)[0]
    if Path(path).exists() or not (path == "suites" or path.startswith("suites/")):
        return test
    return str(suites_dir().parent / test)


@dataclass(frozen=True)
class PytestRun:
    """What one child pytest runs: tests (node ids or paths) and the highwater options."""

    tests: Sequence[str]
    campaign: str
    profile: str = "ci"
    backend: str = "local"
    client: str = "kafka-python"
    kafka_versions: Sequence[str] = ()
    seed: int | None = None
    results: str = "results"
    #: further pytest arguments (``--runxfail``, ``-q``, ``--junitxml=...``)
    extra: Sequence[str] = field(default_factory=tuple)

    def argv(self) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            *map(locate, self.tests),
            "--profile",
            self.profile,
            "--campaign",
            self.campaign,
            "--results",
            self.results,
            "--backend",
            self.backend,
            "--client",
            self.client,
            "-rxXf",
        ]
        if self.seed is not None:
            argv += ["--seed", str(self.seed)]
        for v in self.kafka_versions:
            argv += ["--kafka-version", v]
        return argv + list(self.extra)

    def call(self) -> int:
        """Run it, the child's output going to ours; the child's exit code (pytest's: 0 all
        passed, 1 some failed, 2 interrupted, 3 internal error, 4 usage error, 5 no tests)."""
        argv = self.argv()
        print("highwater: " + " ".join(argv[1:]), file=sys.stderr, flush=True)
        return subprocess.call(argv)
