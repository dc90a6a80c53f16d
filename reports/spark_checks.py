"""The checks that must scale with data, as Spark DataFrame operations: poll-skip and lost-write.

They mirror ``core.checks.reads.poll_skip`` and ``core.checks.writes.lost_write``
definition for definition (a test runs both on the same histories and compares counts, verdicts
and example events), so that a campaign store too big for one Python process gets the same
answers. Every run's history is one Parquet file (``core.history.PARQUET_SCHEMA``); all runs
are read as one DataFrame with an integer ``run`` column.

Definitions shared with the Python checks:

* committed final log of a partition: the final-read of the replica with the highest
  (hw, number of records, -replica id), first in file order on ties, restricted to
  ``log_start <= offset < hw`` (``log_start`` defaults to its lowest offset, else 0);
* values are compared by their text form (the ``value`` columns), across the whole run; the
  lost-write aggregation keys them by the 64-bit ``xxhash64`` of that text (12 bytes per key
  instead of the whole value through the shuffle). A hash can only make two different values
  look equal, so a collision could hide a lost value, never invent one; with ~10^5 values per
  run that chance is about 10^-14 per lost value, and the Python check, which compares the
  texts themselves, runs on every run and would show such a miss as a disagreement;
* events are ordered by ``index`` (file order: indices strictly increase in a history).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from highwater.core.checks.data import finite_retention, unreadable_ranges
from highwater.core.checks.verdict import Valid, Verdict, decide
from highwater.core.run_dir import HISTORY_PARQUET
from highwater.reports.layout import RunInfo

MAX_EXAMPLES = 5
RUN_KEYS = ["run", "topic", "partition"]


class RunLinks:
    """A directory ``<root>/run=<key>/history.parquet`` of symlinks to every run's history, so
    Spark reads ``run`` as a partition column: a constant per file, filled in by the reader
    for free, and filters on it prune whole files. (Mapping ``_metadata.file_path`` back to a
    run with a per-row string join cost more than all the checks together.)"""

    def __init__(self, parent: Path, runs: list[RunInfo]):
        self.runs = [r for r in runs if r.parquet is not None]
        if not self.runs:
            raise ValueError("no run has a history")
        parent.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="spark-runs-", dir=parent))
        self.frame: DataFrame | None = None  # every run, listed once (see load_events)
        for r in self.runs:
            d = self.root / f"run={r.key}"
            d.mkdir()
            os.symlink(r.parquet.resolve(), d / HISTORY_PARQUET)  # type: ignore[union-attr]

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)  # removes the links, never their targets

    def __enter__(self) -> RunLinks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_events(spark: SparkSession, links: RunLinks, keys: list[int] | None = None) -> DataFrame:
    """All runs' events as one DataFrame with an integer ``run`` (RunInfo.key) column; only
    the runs in ``keys`` when given (pruned by file, nothing else is read). The folder is
    listed once per ``links``: every later call filters the same relation."""
    if links.frame is None:
        links.frame = (
            spark.read.option("basePath", str(links.root)).schema(_schema(spark, links)).parquet(str(links.root))
        )
    ev = links.frame
    if keys is not None:
        ev = ev.filter(F.col("run").isin(list(keys)))
    return ev


def _schema(spark: SparkSession, links: RunLinks) -> Any:
    """The history schema (from one file: they all share ``PARQUET_SCHEMA``) plus ``run``,
    given explicitly so Spark does not infer it from every file's footer."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    first = spark.read.parquet(str(links.runs[0].parquet)).schema
    return StructType([*first.fields, StructField("run", IntegerType(), False)])


@dataclass
class SparkVerdict:
    """A verdict computed by Spark, shaped like ``core.checks.Verdict.to_json()``."""

    check: str
    valid: bool | str
    counts: dict[str, int]
    examples: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``Verdict.to_json``'s shape (the same code), marked as Spark's."""
        valid = cast(Valid, self.valid)
        return {**Verdict(self.check, valid, self.counts, self.examples, self.notes).to_json(), "source": "spark"}


# --------------------------------------------------------------------------------------------
# Committed final log
#
# Nothing below shuffles per-record data: a run's file is read whole by one task, so every
# per-record step is a narrow one (filters, array functions over a poll's or a final read's
# records, joins with small broadcast tables); the shuffles carry only per-poll summaries,
# per-value partial aggregates and a few rows per run.


def reference(ev: DataFrame) -> DataFrame:
    """Per (run, topic, partition): the reference replica's final-read ``index``, ``hw`` and
    ``log_start``, and its first and last offset (``lo``, ``hi``) with whether its offsets are
    ``contig``uous (a few rows per run; collect or broadcast it). Ranked without the records."""
    finals = _finals(ev)
    offs = F.col("records.offset")  # only the offsets of the records are read (nested pruning)
    n = F.coalesce(F.size(offs), F.lit(0))
    ranked = finals.select(
        "run",
        "topic",
        "partition",
        "index",
        "hw",
        "replica",
        n.alias("n"),
        F.coalesce("log_start", F.array_min(offs), F.lit(0)).alias("log_start"),
        _first(offs).alias("lo"),
        _last(offs).alias("hi"),
        (F.coalesce(n == 0, F.lit(False)) | F.coalesce(_consecutive(offs), F.lit(False))).alias("contig"),
        F.get_json_object("value_json", "$.unreadable").alias("unreadable"),
    )
    w = Window.partitionBy(*RUN_KEYS).orderBy(F.desc("hw"), F.desc("n"), F.asc("replica"), F.asc("index"))
    return (
        ranked.withColumn("_rank", F.row_number().over(w))
        .filter("_rank = 1")
        .select(*RUN_KEYS, "index", "hw", "log_start", "lo", "hi", "contig", "unreadable")
    )


def unreadable_pairs(text: str | None) -> tuple[tuple[int, int], ...]:
    """A final read's ``unreadable`` ranges (its JSON, ``[[from, to, error], ...]``) as
    [from, to) pairs, read by ``core.checks.data.unreadable_ranges`` as the Python checks read them."""
    ranges = unreadable_ranges({"unreadable": json.loads(text) if text else []})
    return tuple((int(lo), int(hi)) for lo, hi in ranges.tolist())


@dataclass(frozen=True)
class Ref:
    """A partition's reference final read, as collected: enough to count its committed
    offsets in a range without its records when they are ``contig``uous (each offset from
    ``lo`` to ``hi`` exactly once, ascending: every log not compacted or damaged)."""

    hw: int | None
    log_start: int
    lo: int | None
    hi: int | None
    contig: bool
    #: [from, to) ranges the reference replica could not read back (a tiered store lost them)
    unreadable: tuple[tuple[int, int], ...] = ()

    def unreadable_between(self, lo: int, hi: int) -> int:
        """Unreadable offsets in [lo, hi), as ``core.checks.derived.Reference.unreadable_between``:
        a consumer must not pass over them silently either."""
        return sum(max(min(hi, b) - max(lo, a), 0) for a, b in self.unreadable)

    def count_between(self, lo: int, hi: int) -> int | None:
        """Committed offsets (``log_start <= o < hw``) in [max(lo, 0), max(hi, 0)), as
        ``core.checks.derived.Reference.count_between``; None when only the records can
        tell (not contiguous)."""
        if not self.contig:
            return None
        if self.lo is None or self.hi is None or self.hw is None:
            return 0  # no records, or no hw: nothing is committed (as in committed_logs)
        bottom = max(lo, 0, self.lo, self.log_start)
        top = min(max(hi, 0), self.hi + 1, self.hw)
        return max(top - bottom, 0)


def _first(arr: Column) -> Column:
    """First element, null for an empty array (``arr[0]`` is an error there in ANSI mode,
    Spark 4's default)."""
    return F.try_element_at(arr, F.lit(1))


def _last(arr: Column) -> Column:
    return F.try_element_at(arr, F.lit(-1))


def _consecutive(offsets: Column) -> Column:
    """The offsets are first, first + 1, ..., in this order, each once (null when empty or
    when an offset is null), tested with compiled array functions."""
    first = _first(offsets)
    return offsets == F.sequence(first, first + F.size(offsets) - 1)


def _finals(ev: DataFrame) -> DataFrame:
    return ev.filter(
        (F.col("f") == "final-read")
        & (F.col("type") == "ok")
        & F.col("topic").isNotNull()
        & F.col("partition").isNotNull()
    )


def committed_logs(ev: DataFrame, refinfo: DataFrame) -> DataFrame:
    """One row per (run, topic, partition) with a reference: its committed records
    (``log_start <= offset < hw``) as an array ``log`` of (offset, value), still inside the
    row of the file it was read from (the reference table is broadcast, the scan is not moved)."""
    winners = F.broadcast(refinfo.select("run", "index", "hw", "log_start"))
    # Zipping the two field arrays (not a lambda over ``records``) lets Spark read only those
    # two leaves of the records column: a lambda over the struct made it decode all seven.
    pairs = F.arrays_zip(F.col("records.offset").alias("offset"), F.col("records.value").alias("value"))
    keep = F.filter(pairs, lambda r: (r["offset"] >= F.col("log_start")) & (r["offset"] < F.col("hw")))
    return (
        _finals(ev)
        .select("run", "topic", "partition", "index", "records")
        .join(winners, ["run", "index"])
        .select(*RUN_KEYS, keep.alias("log"))
    )


# --------------------------------------------------------------------------------------------
# lost-write


def acked_sends(ev: DataFrame, refinfo: DataFrame, finite: frozenset[int] = frozenset()) -> DataFrame:
    """Acknowledged sends with their judged flag (partition has a reference, not acked below
    its log start), their expired flag (below the log start in a run of ``finite``, the run
    keys whose topics delete records by age: not owed) and the reference's hw. As in
    ``core.checks.writes.lost_write``, a send of a transaction is owed to the log exactly when
    its transaction has an ``ok`` commit (then even an ``info`` send is): transaction ids live
    in ``value_json`` (not a hot key)."""
    info = F.broadcast(
        refinfo.select(*RUN_KEYS, F.col("log_start").alias("ref_log_start"), F.col("hw").alias("ref_hw"))
    )
    committed = F.broadcast(
        ev.filter(
            (F.col("f") == "txn") & (F.col("type") == "ok") & (F.get_json_object("value_json", "$.op") == "commit")
        )
        .select("run", F.get_json_object("value_json", "$.txn").alias("txn"), F.lit(True).alias("txn_committed"))
        .distinct()
    )
    sends = ev.filter(
        (F.col("f") == "send") & F.col("type").isin("ok", "info") & F.col("value").isNotNull()
    ).withColumn("txn", F.get_json_object("value_json", "$.txn"))
    owed = sends.join(committed, ["run", "txn"], "left").filter(
        ((F.col("type") == "ok") & F.col("txn").isNull()) | F.coalesce(F.col("txn_committed"), F.lit(False))
    )
    acked = owed.select(
        "run", "topic", "partition", "offset", "value", F.xxhash64("value").alias("vh"), "index", "process"
    )
    below = F.coalesce((F.col("offset") >= 0) & (F.col("offset") < F.col("ref_log_start")), F.lit(False))
    return (
        acked.join(info, RUN_KEYS, "left")
        .withColumn("judged", F.col("ref_log_start").isNotNull() & ~below)
        .withColumn("expired", below & F.col("run").isin(sorted(finite)))
    )


#: lost values per run handed to the example search (the first ones in ack order)
LOST_KEYS = 1000


def lost_write(ev: DataFrame, refinfo: DataFrame, logs: DataFrame, finite: frozenset[int] = frozenset()) -> DataFrame:
    """Per run: ``acknowledged``, ``acknowledged_judged``, ``acknowledged_unjudged`` (unjudged
    acks of values absent from the committed log), ``expired`` (acks below the log start of a
    run in ``finite`` whose values are absent: retention deleted them), ``lost`` (judged acks
    of absent values) and ``lost_values`` (up to LOST_KEYS absent value hashes, in ack order),
    from which the examples are picked.

    One aggregation per run over the acks and the committed logs together gathers the run's
    acked value hashes (judged and unjudged apart) and committed value hashes as arrays: a
    run's file is read by one task, so the map-side partial aggregation already holds the
    whole run and the shuffle carries a few rows per run. (Grouping by (run, value) instead
    shuffled one row per distinct value, 45 M rows at 1,000 runs, and its reduce side alone
    took ~80 s; aggregating the two sides apart and joining them sorted every run's arrays
    for the join, ~20 s.) ``array_except`` then finds the absent values with a hash set,
    inside the run's row."""
    no_hashes = F.lit(None).cast("array<bigint>")
    acks = acked_sends(ev, refinfo, finite).select(
        "run",
        F.when(F.col("judged"), F.col("vh")).alias("j"),
        F.when(~F.col("judged") & ~F.col("expired"), F.col("vh")).alias("u"),
        F.when(F.col("expired"), F.col("vh")).alias("e"),
        no_hashes.alias("c"),
    )
    com = logs.select(
        "run",
        F.lit(None).cast("bigint").alias("j"),
        F.lit(None).cast("bigint").alias("u"),
        F.lit(None).cast("bigint").alias("e"),
        F.transform(F.filter("log.value", lambda v: v.isNotNull()), lambda v: F.xxhash64(v)).alias("c"),
    )
    per_run = (
        acks.unionByName(com)
        .groupBy("run")
        .agg(
            F.collect_list("j").alias("aj"),
            F.collect_list("u").alias("au"),
            F.collect_list("e").alias("ae"),
            F.flatten(F.collect_list("c")).alias("committed"),
        )
    )
    per_run = per_run.select(
        "run",
        "aj",
        "au",
        "ae",
        F.array_except("aj", "committed").alias("absent_j"),
        F.array_except("au", "committed").alias("absent_u"),
        F.array_except("ae", "committed").alias("absent_e"),
    )

    def acks_of_absent(acked: str, absent: str) -> Column:
        # Values are unique per send in our workloads: then it is the number of absent values.
        # Duplicated values need each ack counted (quadratic in the absent ones, so only then).
        # Nothing absent (the usual case) needs no look at duplicates at all.
        return (
            F.when(F.size(absent) == 0, F.lit(0))
            .when(F.size(acked) == F.size(F.array_distinct(acked)), F.size(absent))
            .otherwise(F.size(F.filter(acked, lambda x: F.array_contains(F.col(absent), x))))
        )

    return per_run.select(
        "run",
        (F.size("aj") + F.size("au") + F.size("ae")).alias("acknowledged"),
        F.size("aj").alias("acknowledged_judged"),
        acks_of_absent("au", "absent_u").alias("acknowledged_unjudged"),
        acks_of_absent("ae", "absent_e").alias("expired"),
        acks_of_absent("aj", "absent_j").alias("lost"),
        F.slice("absent_j", 1, LOST_KEYS).alias("lost_values"),
    )


def lost_write_examples(ev: DataFrame, refinfo: DataFrame, lost_values: dict[int, list[int]]) -> list[Any]:
    """The first MAX_EXAMPLES lost acks per run (by event index), found by a broadcast join of
    the lost value hashes over only the files of runs that lost something. Exact when a run
    lost at most LOST_KEYS values, or when its acks were collected in file order (one task per
    run file, as for every history smaller than Spark's split size)."""
    top = [(run, v) for run, vals in lost_values.items() for v in vals]
    if not top:
        return []
    keys = ev.sparkSession.createDataFrame(top, "run int, vh long")
    runs = sorted(lost_values)
    lost = (
        acked_sends(ev.filter(F.col("run").isin(runs)), refinfo).filter("judged").join(F.broadcast(keys), ["run", "vh"])
    )
    wr = Window.partitionBy("run").orderBy("index")
    return (
        lost.withColumn("_n", F.row_number().over(wr))
        .filter(F.col("_n") <= MAX_EXAMPLES)
        .select("run", "index", "topic", "partition", "offset", "value", "process", "ref_hw")
        .collect()
    )


# --------------------------------------------------------------------------------------------
# poll-skip

_KIND_POS, _KIND_WILD, _KIND_REC = 0, 1, 2
_INNER = "array<struct<expected:bigint,offset:bigint,pos:int>>"


def poll_groups(ev: DataFrame) -> DataFrame:
    """One row per (poll, topic, partition it returned records of): the records' count, first
    and last offset, the position of the first one in the poll, the steps inside the poll
    that jump (``inner``: record after record, expected = previous offset + 1) and how many
    of its records each replica served (``replicas``: (replica, n) pairs, for the fetch
    shares). The chain window below orders ~BATCH times fewer rows than there are records.

    Most polls hold one partition's consecutive offsets, all served by one replica: those
    are recognised with built-in array functions (one topic, partition and replica, offsets
    equal to ``sequence(first, last)``), which Spark compiles. Only the others go through
    lambdas (``filter``, ``transform``), which Spark interprets element by element: with
    every poll on that path, this pass took about six times the decoding of the records."""
    polls = ev.filter((F.col("f") == "poll") & (F.col("type") == "ok") & F.col("records").isNotNull())
    offs, reps = F.col("records.offset"), F.col("records.replica")
    n = F.size(offs)
    first = _first(offs)
    # Records always have a topic and partition (history validation); the replica may be
    # unknown (null), and array_min/max skip nulls, hence the count of non-null replicas.
    # (min == max is cheaper than array_distinct, which builds a hash set per poll.)
    simple = (
        (n > 0)
        & (F.array_min("records.topic") == F.array_max("records.topic"))
        & (F.array_min("records.partition") == F.array_max("records.partition"))
        & (F.array_min(reps) == F.array_max(reps))
        & (F.size(F.array_compact(reps)) == n)
        & _consecutive(offs)
    )
    one = F.array(
        F.struct(
            _first(F.col("records.topic")).alias("topic"),
            _first(F.col("records.partition")).alias("partition"),
            n.alias("n"),
            F.lit(0).alias("pos"),
            first.alias("offset"),
            _last(offs).alias("last_offset"),
            F.array().cast(_INNER).alias("inner"),
            F.array(F.struct(_first(reps).alias("replica"), n.alias("n"))).alias("replicas"),
        )
    )
    return polls.select(
        "run", "process", "index", F.explode(F.when(simple, one).otherwise(_general_groups())).alias("g")
    ).select("run", "process", "index", "g.*")


def _general_groups() -> Column:
    """The groups of any poll, with lambdas: the records numbered by position, split by
    (topic, partition) in order of first appearance, each group summarised. The records are
    zipped from the four fields used (a lambda over the ``records`` struct itself would make
    Spark decode all its fields, the values too, for every poll)."""
    fields = F.arrays_zip(*(F.col(f"records.{k}").alias(k) for k in ("topic", "partition", "offset", "replica")))
    recs = F.transform(
        fields,
        lambda r, i: F.struct(
            r["topic"].alias("topic"),
            r["partition"].alias("partition"),
            r["offset"].alias("offset"),
            r["replica"].alias("replica"),
            i.alias("pos"),
        ),
    )
    keys = F.array_distinct(
        F.transform(recs, lambda r: F.struct(r["topic"].alias("topic"), r["partition"].alias("partition")))
    )
    parts = F.transform(
        keys,
        lambda k: F.filter(
            recs, lambda r: r["topic"].eqNullSafe(k["topic"]) & r["partition"].eqNullSafe(k["partition"])
        ),
    )

    def summary(g: Column) -> Column:
        size = F.size(g)
        pairs = F.zip_with(
            F.slice(g, 1, size - 1),
            F.slice(g, 2, size - 1),
            lambda a, b: F.struct(
                (a["offset"] + 1).alias("expected"), b["offset"].alias("offset"), b["pos"].alias("pos")
            ),
        )
        served = F.transform(
            F.array_distinct(g["replica"]),
            lambda x: F.struct(
                x.alias("replica"), F.size(F.filter(g, lambda r: r["replica"].eqNullSafe(x))).alias("n")
            ),
        )
        return F.struct(
            g[0]["topic"].alias("topic"),
            g[0]["partition"].alias("partition"),
            size.alias("n"),
            g[0]["pos"].alias("pos"),
            g[0]["offset"].alias("offset"),
            F.element_at(g, -1)["offset"].alias("last_offset"),
            F.filter(pairs, lambda s: s["offset"] > s["expected"]).alias("inner"),
            served.alias("replicas"),
        )

    return F.transform(parts, summary)


#: a consumer's step (a poll's record or a position change) as the poll-continuity columns name it
_STEP = ("run", "process", "topic", "partition", "index", "pos", "offset")


def poll_steps(ev: DataFrame, groups: DataFrame) -> DataFrame:
    """Per poll group, the step into its first record (``expected``, ``has_prev``,
    ``prev_index``, ``cont``), from the chain of groups and position changes of one consumer
    and partition ordered by (event index, position in the poll). A group right after a group
    continues the chain (expected = previous group's last offset + 1); right after a position
    change it starts a segment at that change's offset (unknown for changes of all partitions,
    which name none). ``groups``: ``poll_groups(ev)``."""
    moves = ev.filter(F.col("f").isin("assign", "seek") & F.col("type").isin("ok", "info")).select(
        "run", "process", "topic", "partition", "index", F.coalesce("offset", F.lit(-1)).cast("long").alias("offset")
    )
    cols = [*_STEP, "last_offset", "kind", "n", "inner", "replicas"]
    none = F.lit(None)
    specific = moves.filter(F.col("topic").isNotNull() & F.col("partition").isNotNull()).select(
        "run",
        "process",
        "topic",
        "partition",
        "index",
        F.lit(0).alias("pos"),
        "offset",
        F.col("offset").alias("last_offset"),
        F.lit(_KIND_POS).alias("kind"),
        F.lit(0).alias("n"),
        none.alias("inner"),
        none.alias("replicas"),
    )
    recs = groups.withColumn("kind", F.lit(_KIND_REC))
    u = recs.select(*cols).unionByName(specific.select(*cols), allowMissingColumns=False)
    w = Window.partitionBy("run", "process", "topic", "partition").orderBy("index", "pos")
    u = (
        u.withColumn("prev_kind", F.lag("kind").over(w))
        .withColumn("prev_off", F.lag("last_offset").over(w))
        .withColumn("prev_index", F.lag("index").over(w))
        .filter(F.col("kind") == _KIND_REC)
    )
    # A change of all partitions belongs to every chain of its consumer. Rather than copying it
    # into each chain (which needs the chains, i.e. the poll groups a second time: a second
    # pass over every poll's records), each group looks up the consumer's latest such change
    # before it; when that is later than its predecessor in the chain, it is the predecessor.
    wild = (
        moves.filter(F.col("topic").isNull() | F.col("partition").isNull())
        .groupBy("run", "process")
        .agg(F.collect_list("index").alias("wild"))
    )
    u = u.join(F.broadcast(wild), ["run", "process"], "left")
    latest_wild = F.when(F.col("wild").isNotNull(), F.array_max(F.filter("wild", lambda x: x < F.col("index"))))
    after_wild = F.coalesce(latest_wild > F.coalesce(F.col("prev_index"), F.lit(-1)), F.lit(False))
    u = u.withColumn("prev_kind", F.when(after_wild, F.lit(_KIND_WILD)).otherwise(F.col("prev_kind"))).withColumn(
        "prev_index", F.when(after_wild, latest_wild).otherwise(F.col("prev_index"))
    )
    cont = F.coalesce(F.col("prev_kind") == _KIND_REC, F.lit(False))
    start = F.when(F.col("prev_kind") == _KIND_POS, F.col("prev_off")).otherwise(F.lit(-1))
    return (
        u.withColumn("cont", cont)
        .withColumn("expected", F.when(cont, F.col("prev_off") + 1).otherwise(start))
        .withColumn("has_prev", cont | (start >= 0))
        .withColumn("prev_index", F.when(F.col("has_prev"), F.col("prev_index")))
        .select(*_STEP, "expected", "has_prev", "prev_index", "cont", "n", "inner", "replicas")
    )


class Gap(NamedTuple):
    """A step into a record that jumped (offset > expected): a skip when the committed log
    holds offsets in between."""

    run: int
    process: str
    topic: str
    partition: int
    index: int  # type: ignore[assignment]  # the event's index; shadows tuple.index, never called
    prev_index: int | None
    expected: int
    offset: int
    pos: int
    cont: bool


def poll_summary(steps: DataFrame) -> list[Any]:
    """The one aggregation of the poll steps, collected: a row per (run, consumer, serving
    replica) with the records it served (``records``), and, on the row of each group's first
    replica, the group's steps (``steps``) and its jumps (``gap_rows``: the jumps are few,
    each an anomaly or an unjudged step). Fetch shares and poll-skip both come from it, so
    the polls' records are read once."""
    first = F.array(
        F.struct(
            F.col("prev_index").alias("prev_index"),
            F.col("expected").alias("expected"),
            F.col("offset").alias("offset"),
            F.col("pos").alias("pos"),
            F.col("cont").alias("cont"),
        )
    )
    inner = F.transform(
        "inner",
        lambda s: F.struct(
            F.col("index").alias("prev_index"),
            s["expected"].alias("expected"),
            s["offset"].alias("offset"),
            s["pos"].alias("pos"),
            F.lit(True).alias("cont"),
        ),
    )
    jump = F.coalesce(F.col("has_prev") & (F.col("offset") > F.col("expected")), F.lit(False))
    marked = steps.withColumn("gaps", F.when(jump, F.concat(first, inner)).otherwise(inner)).select(
        "*", F.posexplode("replicas").alias("rp", "r")
    )
    lead = F.col("rp") == 0  # a group's steps and jumps are counted once, with its first replica
    return (
        marked.groupBy("run", "process", F.col("r.replica").alias("replica"))
        .agg(
            F.sum("r.n").alias("records"),
            F.sum(F.when(lead, F.col("has_prev").cast("long") + F.col("n") - 1)).alias("steps"),
            F.collect_list(
                F.when(lead & (F.size("gaps") > 0), F.struct("process", "topic", "partition", "index", "gaps"))
            ).alias("gap_rows"),
        )
        .collect()
    )


def replica_counts(summary: list[Any]) -> dict[int, list[dict[str, Any]]]:
    """Polled records per run and (consumer, serving replica): the raw material of the
    follower-fetch share, which needs the racks of run.json (see aggregate)."""
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in summary:
        out[r["run"]].append({"process": r["process"], "replica": r["replica"], "count": int(r["records"])})
    return dict(out)


def poll_skip(
    summary: list[Any], refs: dict[tuple[int, str, int], Ref], logs: DataFrame
) -> tuple[dict[int, dict[str, int]], dict[int, list[tuple[Gap, int]]]]:
    """(counts per run, up to MAX_EXAMPLES (skip, committed offsets skipped) per run in event
    order): jumps over committed offsets between consecutive records of a chain (or from a
    position change's offset to the first record after it), from ``poll_summary``. How many
    committed offsets each jump passed over comes from the reference's offset range when its
    log is contiguous, else from a broadcast of those jumps onto their runs' committed logs."""
    gaps = [
        Gap(
            r["run"],
            g["process"],
            g["topic"],
            g["partition"],
            g["index"],
            x["prev_index"],
            x["expected"],
            x["offset"],
            x["pos"],
            x["cont"],
        )
        for r in summary
        for g in r["gap_rows"]
        for x in g["gaps"]
    ]
    missing: dict[Gap, int] = {}
    unknown: list[Gap] = []
    for gap in gaps:
        ref = refs.get((gap.run, gap.topic, gap.partition))
        if ref is not None:
            m = ref.count_between(gap.expected, gap.offset)
            if m is None:
                unknown.append(gap)
            else:
                missing[gap] = m
    missing.update(_missing_from_logs(logs, unknown))
    for gap in missing:  # offsets the store lost count as passed over, as Python's check counts them
        missing[gap] += refs[(gap.run, gap.topic, gap.partition)].unreadable_between(gap.expected, gap.offset)
    counts: dict[int, dict[str, int]] = {}
    for r in summary:
        c = counts.setdefault(r["run"], {"skips": 0, "skipped_offsets": 0, "steps_unjudged": 0, "steps_judged": 0})
        c["steps_judged"] += int(r["steps"] or 0)
    examples: dict[int, list[tuple[Gap, int]]] = defaultdict(list)
    for gap in sorted(gaps, key=lambda x: (x.run, x.index, x.pos)):
        c = counts[gap.run]
        if gap not in missing:  # the partition has no final read: the step is not judged
            c["steps_unjudged"] += 1
            c["steps_judged"] -= 1
        elif missing[gap] > 0:
            c["skips"] += 1
            c["skipped_offsets"] += missing[gap]
            if len(examples[gap.run]) < MAX_EXAMPLES:
                examples[gap.run].append((gap, missing[gap]))
    return counts, dict(examples)


def _missing_from_logs(logs: DataFrame, gaps: list[Gap], broadcast_limit: int = 2_000_000) -> dict[Gap, int]:
    """Committed offsets in [max(expected, 0), offset) of each gap, counted in the committed
    logs of the gaps' runs (only those runs' final reads are read)."""
    if not gaps:
        return {}
    spark = logs.sparkSession
    df = spark.createDataFrame(
        [(i, g.run, g.topic, g.partition, g.expected, g.offset) for i, g in enumerate(gaps)],
        "gap int, run int, topic string, partition int, expected long, offset long",
    )
    g = F.broadcast(df) if len(gaps) <= broadcast_limit else df
    lo = F.greatest(F.col("expected"), F.lit(0))
    rows = (
        logs.filter(F.col("run").isin(sorted({x.run for x in gaps})))
        .join(g, RUN_KEYS)
        .select(
            "gap",
            F.size(F.filter("log", lambda r: (r["offset"] >= lo) & (r["offset"] < F.col("offset")))).alias("missing"),
        )
        .collect()
    )
    return {gaps[r["gap"]]: int(r["missing"]) for r in rows}


# --------------------------------------------------------------------------------------------
# Collecting


@dataclass
class SparkResults:
    """What one pass over some runs' histories gives, per run key: the Spark verdicts of
    poll-skip and lost-write (empty when not asked for) and the polled records per
    (consumer, serving replica)."""

    verdicts: dict[int, dict[str, SparkVerdict]]
    fetch: dict[int, list[dict[str, Any]]]


def run_spark_passes(ev: DataFrame, runs: list[RunInfo], checks: bool = True) -> SparkResults:
    """The fetch counts of every run in ``ev`` and, with ``checks``, its verdicts for
    poll-skip and lost-write."""
    summary = poll_summary(poll_steps(ev, poll_groups(ev)))
    fetch = replica_counts(summary)
    verdicts = _verdicts(ev, summary, runs) if checks else {}
    return SparkResults(verdicts, {r.key: fetch.get(r.key, []) for r in runs if r.parquet is not None})


def _verdicts(ev: DataFrame, summary: list[Any], runs: list[RunInfo]) -> dict[int, dict[str, SparkVerdict]]:
    """Verdicts per run key for poll-skip and lost-write. Runs without any send (or poll)
    get the verdict the Python check gives an empty input: unknown, nothing judged."""
    spark = ev.sparkSession
    ref_rows = reference(ev).collect()
    columns = ("run", "topic", "partition", "index", "hw", "log_start", "lo", "hi", "contig")
    refinfo = spark.createDataFrame(
        [tuple(r[c] for c in columns) for r in ref_rows],
        "run int, topic string, partition int, index long, hw long, log_start long, lo long, hi long, contig boolean",
    )
    refs = {
        (r["run"], r["topic"], r["partition"]): Ref(
            r["hw"], r["log_start"], r["lo"], r["hi"], r["contig"], unreadable_pairs(r["unreadable"])
        )
        for r in ref_rows
    }
    logs = committed_logs(ev, refinfo)
    finite = frozenset(r.key for r in runs if finite_retention(r.config))
    lw = {r["run"]: r.asDict() for r in lost_write(ev, refinfo, logs, finite).collect()}
    lw_ex = lost_write_examples(ev, refinfo, {k: list(a["lost_values"]) for k, a in lw.items() if a["lost_values"]})
    ps, ps_ex = poll_skip(summary, refs, logs)
    lw_examples: dict[int, list[dict[str, Any]]] = {}
    for r in sorted(lw_ex, key=lambda r: (r["run"], r["index"])):
        lw_examples.setdefault(r["run"], []).append(
            {
                "kind": "lost-write",
                "topic": r["topic"],
                "partition": r["partition"],
                "offset": r["offset"],
                "producer": r["process"],
                "final_hw": r["ref_hw"],
                "value": r["value"],
                "event_indices": [r["index"]],
            }
        )
    ps_examples = {
        run: [
            {
                "kind": "poll-skip",
                "topic": g.topic,
                "partition": g.partition,
                "consumer": g.process,
                "expected_offset": g.expected,
                "got_offset": g.offset,
                "committed_offsets_skipped": m,
                "after_position_change": not g.cont,
                "event_indices": list(dict.fromkeys(i for i in (g.prev_index, g.index) if i is not None)),
            }
            for g, m in found
        ]
        for run, found in ps_ex.items()
    }
    out: dict[int, dict[str, SparkVerdict]] = {}
    for run in runs:
        if run.parquet is None:
            continue
        a = lw.get(run.key, {})
        lw_c = {
            k: int(a.get(k) or 0)
            for k in ("lost", "acknowledged", "acknowledged_judged", "acknowledged_unjudged", "expired")
        }
        b = ps.get(run.key, {})
        ps_c = {k: int(b.get(k) or 0) for k in ("skips", "skipped_offsets", "steps_judged", "steps_unjudged")}
        out[run.key] = {
            "lost-write": SparkVerdict(
                "lost-write",
                decide(lw_c["lost"], lw_c["acknowledged_judged"], lw_c["acknowledged_unjudged"]),
                lw_c,
                lw_examples.get(run.key, []),
            ),
            "poll-skip": SparkVerdict(
                "poll-skip",
                decide(ps_c["skips"], ps_c["steps_judged"], ps_c["steps_unjudged"]),
                ps_c,
                ps_examples.get(run.key, []),
            ),
        }
    return out
