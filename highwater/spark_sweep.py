"""A sweep's cells as Spark tasks (``highwater sweep --master URL``): one run per task slot, on
as many machines as the master has workers, all into one campaign on a shared path. A hunt's
lanes (``highwater hunt --master URL``, ``highwater.hunt_spread``) are spread the same way: any
``Task`` (a key, the releases it needs set up, the command of an attempt) is.

The cells (``highwater.sweep_cells``: release x client x suite) are one RDD with one partition
per cell. The driver submits one job per partition from a pool of threads, so each finished
cell is reported (and recorded in the sweep state) when it finishes, and a task that fails in
Spark (an executor lost) fails its own cell only. On the executor a cell first runs ``highwater
setup`` for its release (once per Python worker; idempotent and cached, under the cache's file
locks), then the very ``highwater run`` child a local run of the cell would be, output to
``<campaign>/cells/<cell>.log``; an attempt that ended in a harness error is tried again inside
the task (``sweep_cells.retried``), a verdict never. ``spark.task.maxFailures`` is 1, so Spark
itself never runs a task again: the run it started may already have a verdict.

The children cannot outlive their task: each gets SIGINT when the Python worker that started it
dies (``PR_SET_PDEATHSIG``; ``highwater run`` then kills its pytest, whose brokers die with it),
and a worker orphaned by its executor interrupts its child itself.
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from highwater.harness.procs import spawn

from .exit_codes import Exit
from .sweep_cells import CELL_LOGS, CellResult, CellSettings, Master, retried, setup_argv

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

#: how long an interrupted child may take to stop its cluster before it is killed
CHILD_GRACE_SECONDS = 30.0
#: jobs submitted at once: enough to keep every task slot of a large cluster busy; the rest wait
#: in the driver (Spark would queue them anyway, each holding a thread)
MAX_JOBS_IN_FLIGHT = 64


class Task(Protocol):
    """What a Spark task runs: a child command (``argv``, attempted again after a harness error)
    once the releases it names are set up on the executor (a sweep's ``Cell``, a hunt's lane)."""

    @property
    def key(self) -> str: ...

    @property
    def releases(self) -> tuple[str, ...]: ...

    def slug(self) -> str: ...

    def argv(self, python: str, settings: CellSettings, attempt: int) -> list[str]: ...

    @property
    def max_attempts(self) -> int:
        """How many attempts a harness error may take (a sweep's cell: ``MAX_ATTEMPTS``)."""
        ...


# the releases set up in this Python worker (workers are reused across a sweep's tasks)
_SET_UP: set[str] = set()


# --- on the executor ---------------------------------------------------------------------------


def _child(argv: Sequence[str], log: Path, cwd: str | None) -> int:
    """Run one child to its end (``harness.procs.spawn``: its own session, output appended to
    ``log``, SIGINT when this worker dies); interrupted (then killed) if this task is abandoned:
    an exception here, or the executor gone (this worker re-parented)."""
    parent = os.getppid()
    proc = spawn(argv, log_path=log, cwd=Path(cwd) if cwd else None, death_signal=signal.SIGINT)
    try:
        while True:
            try:
                return proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                if os.getppid() != parent:
                    raise RuntimeError("the executor is gone") from None
    finally:
        if proc.poll() is None:
            _stop_group(proc)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT to the child's session (``highwater run`` stops its pytest), SIGKILL after the grace."""
    for sig, grace in ((signal.SIGINT, CHILD_GRACE_SECONDS), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _attempt(cell: Task, settings: CellSettings, attempt: int, log: Path) -> int:
    python = sys.executable
    cwd = settings.cwd if settings.cwd and Path(settings.cwd).is_dir() else None
    with open(log, "ab") as out:
        out.write(f"== {cell.key}: attempt {attempt} on {socket.gethostname()}\n".encode())
    for release in cell.releases:
        if release in _SET_UP:
            continue
        code = _child(setup_argv(python, release), log, cwd)
        if code != 0:
            return Exit.HARNESS  # no cluster can start here: a harness reason, tried again
        _SET_UP.add(release)
    argv = cell.argv(python, settings, attempt)
    with open(log, "ab") as out:
        out.write(("== " + " ".join(argv[1:]) + "\n").encode())
    return _child(argv, log, cwd)


def run_cell(cell: Task, settings: CellSettings) -> CellResult:
    """One cell, on whatever machine runs the task: attempts until a verdict or the last one."""
    started = time.monotonic()
    log = settings.campaign_dir() / CELL_LOGS / f"{cell.slug()}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    attempt = 0
    while True:
        attempt += 1
        code = _attempt(cell, settings, attempt, log)
        if not retried(code, attempt, cell.max_attempts):
            break
    return CellResult(cell.key, code, time.monotonic() - started, attempt, socket.gethostname(), str(log))


def _partition(settings: CellSettings, cells: Iterable[Task]) -> Iterator[CellResult]:
    for cell in cells:
        yield run_cell(cell, settings)


# --- on the driver -----------------------------------------------------------------------------


@contextmanager
def sweep_context(master: Master, app_name: str) -> Iterator[SparkContext]:
    """A SparkContext for one sweep, stopped (its JVM too) however the block exits."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext

    from highwater.reports.spark_session import stop_gateway

    conf = (
        SparkConf()
        .setMaster(master.url)
        .setAppName(app_name)
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        # a task is never run again by Spark: its run may have reached a verdict; the task
        # itself tries a harness error again
        .set("spark.task.maxFailures", "1")
        .set("spark.task.cpus", "1")
        .set("spark.locality.wait", "0")  # the cells read no data: no locality worth waiting for
        .set("spark.python.worker.reuse", "true")
        # the runs are child processes; the JVMs only wait on them
        .set("spark.executor.memory", "512m")
        .set("spark.driver.memory", "512m")
        .set("spark.driver.extraJavaOptions", "-Dlog4j2.level=WARN")
    )
    if master.loopback:  # everything on this machine: nothing of ours listens beyond loopback
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf = conf.set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
    sc = SparkContext(conf=conf)
    try:
        sc.setLogLevel("WARN")
        yield sc
    finally:
        sc.stop()
        stop_gateway()


def _one(sc: SparkContext, rdd: RDD[Task], index: int, cell: Task, settings: CellSettings) -> CellResult:
    """Cell ``index`` as a job of its own; a task that failed in Spark is a harness error."""
    started = time.monotonic()
    sc.setJobDescription(f"highwater {cell.key}")
    try:
        results = sc.runJob(rdd, functools.partial(_partition, settings), [index])
    except Exception as exc:  # noqa: BLE001 - Py4JJavaError and friends: the task or its executor failed
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        return CellResult(cell.key, Exit.HARNESS, time.monotonic() - started, 0, reason=f"Spark task failed: {first}")
    return results[0]


def spread(
    cells: Sequence[Task],
    settings: CellSettings,
    master: Master,
    say: Callable[[str], None],
    done: Callable[[CellResult], None],
    command: str = "sweep",
) -> None:
    """Run every cell (any ``Task``) as a Spark task of the app ``highwater <command> <campaign>``;
    ``done`` is called in this thread as each one finishes.
    Ctrl-C cancels the jobs (their tasks interrupt their children) and is raised again."""
    if not cells:
        return
    started = time.monotonic()
    with sweep_context(master, f"highwater {command} {settings.campaign}") as sc:
        say(
            f"Spark {sc.master} up in {time.monotonic() - started:.1f}s: {len(cells)} tasks, "
            f"{sc.defaultParallelism} task slots so far"
        )
        rdd = sc.parallelize(list(cells), len(cells))  # one cell per partition
        with ThreadPoolExecutor(max_workers=min(len(cells), MAX_JOBS_IN_FLIGHT)) as pool:
            pending: set[Future[CellResult]] = {
                pool.submit(_one, sc, rdd, i, cell, settings) for i, cell in enumerate(cells)
            }
            try:
                while pending:
                    finished, pending = wait(pending, return_when="FIRST_COMPLETED")
                    for future in finished:
                        done(future.result())
            except BaseException:
                for future in pending:
                    future.cancel()
                sc.cancelAllJobs()
                raise
