"""One way to run the suites through pytest in a child process, for ``run``, ``campaign``,
``sweep`` and ``bisect``: the options they share as one typed object, turned into an argv.

The suites run in a child pytest (not ``pytest.main`` in this process) so that each Kafka
release, client version and seed gets a fresh interpreter: a client library cannot be loaded in
two versions in one process, and a run that hangs or dies takes only its child with it.

Also the shards of a session (``--shard I/N``, for CI systems that fan out jobs themselves):
``Shard`` and ``shard_spec`` parse the option (the CLI's and the plugin's alike), ``partition``
is the split every shard computes alike from the collected tests' group keys.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from highwater.core.errors import HighwaterError


def suites_dir() -> Path:
    """Where the ``suites`` package lives: a source checkout or an installed package alike.
    Located, not imported: the suites are test programs run by pytest, not a layer below us."""
    spec = importlib.util.find_spec("highwater.suites")
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
class Shard:
    """Shard ``index`` of ``total`` (1 <= index <= total): ``--shard index/total``."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def shard_spec(text: str) -> Shard:
    """``I/N`` as a ``Shard``; anything else is refused with one line (argparse's ``type=``: the
    CLI's usage error, exit 2, and pytest's, exit 4)."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not I/N (shard I of N, e.g. 2/4)")
    shard = Shard(int(m.group(1)), int(m.group(2)))
    if shard.total < 1 or not 1 <= shard.index <= shard.total:
        raise argparse.ArgumentTypeError(f"{text!r}: a shard I/N needs 1 <= I <= N (e.g. 1/{max(shard.total, 2)})")
    return shard


def partition(keys: Sequence[str], total: int, weights: Sequence[float] | None = None) -> list[int]:
    """The shard (1..total) of each of a session's tests, given each test's group key (tests
    with one key stay in one shard; a key of its own per test otherwise): the groups, heaviest
    first and then by key, each go to the shard with the least load so far (the lowest number
    on a tie). A group's weight is its number of tests, or with ``weights`` (a test's expected
    seconds) its heaviest test's: the tests of a group judge one run, which is most of their
    time. It depends on the keys and weights alone, not on their order, so every shard of a
    session computes the same split; with a key per test and no weights the shards differ by at
    most one test, and by at most the largest group otherwise."""
    if total < 1:
        raise ValueError(f"total must be at least 1, not {total}")
    if weights is not None and len(weights) != len(keys):
        raise ValueError(f"{len(weights)} weights for {len(keys)} keys")
    sizes: dict[str, float] = dict(Counter(keys))
    if weights is not None:
        sizes = {}
        for key, weight in zip(keys, weights):
            sizes[key] = max(sizes.get(key, 0.0), weight)
    load = [0.0] * total
    shard_of: dict[str, int] = {}
    for key in sorted(sizes, key=lambda k: (-sizes[k], k)):
        least = min(range(total), key=lambda i: (load[i], i))
        shard_of[key] = least + 1
        load[least] += sizes[key]
    return [shard_of[k] for k in keys]


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
    #: only this shard of the collected tests (``--shard``), None: all of them
    shard: Shard | None = None
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
            "--highwater-exit-codes",  # a test that failed for the harness is no violation (exit 4)
        ]
        if self.seed is not None:
            argv += ["--seed", str(self.seed)]
        for v in self.kafka_versions:
            argv += ["--kafka-version", v]
        if self.shard is not None:
            argv += ["--shard", str(self.shard)]
        return argv + list(self.extra)

    def call(self) -> int:
        """Run it, the child's output going to ours; the child's exit code (pytest's: 0 all
        passed, 1 some failed, 2 interrupted, 3 internal error, 4 usage error, 5 no tests)."""
        argv = self.argv()
        print("highwater: " + " ".join(argv[1:]), file=sys.stderr, flush=True)
        code = subprocess.call(argv)
        if code < 0:  # killed by a signal (the OOM killer, a kill -9): say so, and where its runs are
            print(
                f"highwater: error: the suites' pytest was killed by {signal_name(-code)}; the runs it began, "
                f"their histories as far as they got, are under {Path(self.results) / self.campaign}",
                file=sys.stderr,
                flush=True,
            )
        return code


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; the number for a signal Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
