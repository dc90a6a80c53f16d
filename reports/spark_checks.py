"""The checks that must scale with data, as Spark DataFrame operations: poll-skip and lost-write.

They mirror ``harness.checks.reads.poll_skip`` and ``harness.checks.writes.lost_write``
definition for definition (a test runs both on the same histories and compares counts, verdicts
and example events), so that a campaign store too big for one Python process gets the same
answers. Every run's history is one Parquet file (``harness.history.PARQUET_SCHEMA``); all runs
are read as one DataFrame with an integer ``run`` column.

Definitions shared with the Python checks:

* committed final log of a partition: the final-read of the replica with the highest
  (hw, number of records, -replica id), first in file order on ties, restricted to
  ``log_start <= offset < hw`` (``log_start`` defaults to its lowest offset, else 0);
* values are compared by their text form (the ``value`` columns), across the whole run;
* events are ordered by ``index`` (file order: indices strictly increase in a history).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from reports.layout import RunInfo

MAX_EXAMPLES = 5
RUN_KEYS = ["run", "topic", "partition"]


def load_events(spark: SparkSession, runs: list[RunInfo]) -> DataFrame:
    """All runs' events as one DataFrame, plus ``run`` (RunInfo.key), joined by file path."""
    with_files = [r for r in runs if r.parquet is not None]
    if not with_files:
        raise ValueError("no run has a history")
    paths = [str(r.parquet) for r in with_files]
    ev = spark.read.parquet(*paths).withColumn("_file", F.col("_metadata.file_path"))
    # Spark names files by URI (file:/..., percent-encoded); match on the decoded path's end
    # so the mapping does not depend on how this Spark version spells the scheme.
    mapping = spark.createDataFrame([(str(r.parquet.resolve()), r.key) for r in with_files],
                                    "_local string, run int")
    ev = ev.withColumn("_local", F.regexp_replace(F.url_decode("_file"), "^file:(//)?", ""))
    return ev.join(F.broadcast(mapping), "_local").drop("_file", "_local")


@dataclass
class SparkVerdict:
    """A verdict computed by Spark, shaped like ``harness.checks.Verdict.to_json()``."""

    check: str
    valid: bool | str
    counts: dict[str, int]
    examples: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "valid": self.valid, "counts": dict(self.counts),
                "examples": list(self.examples), "notes": list(self.notes), "allowed": False,
                "source": "spark"}


def decide(violations: int, judged: int, unjudged: int = 0) -> bool | str:
    """Same rule as ``harness.checks.verdict.decide`` (kept here so this module reads alone)."""
    if violations:
        return False
    if judged == 0 or unjudged:
        return "unknown"
    return True


# --------------------------------------------------------------------------------------------
# Committed final log


def reference(ev: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(refinfo, committed): per (run, topic, partition) the reference replica's ``log_start``
    and ``hw``; and its committed records (run, topic, partition, offset, value).

    The ranking runs on the final-read events without their records (a few rows per run), and
    only the winner's records are exploded: the other replicas' logs never leave the scan.
    """
    finals = ev.filter((F.col("f") == "final-read") & (F.col("type") == "ok")
                       & F.col("topic").isNotNull() & F.col("partition").isNotNull())
    ranked = finals.select(
        "run", "topic", "partition", "index", "hw", "replica",
        F.coalesce(F.size("records"), F.lit(0)).alias("n"),
        F.coalesce("log_start", F.array_min("records.offset"), F.lit(0)).alias("log_start"),
    )
    w = Window.partitionBy(*RUN_KEYS).orderBy(F.desc("hw"), F.desc("n"), F.asc("replica"),
                                              F.asc("index"))
    refinfo = (ranked.withColumn("_rank", F.row_number().over(w)).filter("_rank = 1")
               .select(*RUN_KEYS, "index", "hw", "log_start").cache())
    winners = F.broadcast(refinfo.select("run", "index", "hw", "log_start"))
    committed = (
        finals.select("run", "topic", "partition", "index", "records")
        .join(winners, ["run", "index"])
        .select(*RUN_KEYS, "hw", "log_start", F.explode("records").alias("r"))
        .select(*RUN_KEYS, F.col("r.offset").alias("offset"), F.col("r.value").alias("value"),
                "hw", "log_start")
        .filter((F.col("offset") >= F.col("log_start")) & (F.col("offset") < F.col("hw")))
        .select(*RUN_KEYS, "offset", "value")
    )
    return refinfo, committed


# --------------------------------------------------------------------------------------------
# lost-write


def lost_write(ev: DataFrame, refinfo: DataFrame, committed: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(counts per run, lost examples): acknowledged sends whose value is nowhere in the run's
    committed final log. Unjudged: no final read of the partition, or acked below log start."""
    acked = ev.filter((F.col("f") == "send") & (F.col("type") == "ok") & F.col("value").isNotNull()) \
        .select("run", "topic", "partition", "offset", "value", "index", "process")
    info = F.broadcast(refinfo.select(*RUN_KEYS, F.col("log_start").alias("ref_log_start"),
                                      F.col("hw").alias("ref_hw")))
    present = committed.select("run", "value").distinct().withColumn("present", F.lit(True))
    j = (acked.join(info, RUN_KEYS, "left").join(present, ["run", "value"], "left")
         .withColumn("present", F.coalesce("present", F.lit(False)))
         .withColumn("has", F.col("ref_log_start").isNotNull())
         .withColumn("below", F.coalesce((F.col("offset") >= 0) & (F.col("offset") < F.col("ref_log_start")),
                                         F.lit(False)))
         .withColumn("judged", F.col("has") & ~F.col("below"))
         .withColumn("lost", F.col("judged") & ~F.col("present"))
         .withColumn("unjudged", ~F.col("judged") & ~F.col("present")))
    j = j.cache()
    counts = j.groupBy("run").agg(
        F.count(F.lit(1)).alias("acknowledged"),
        F.sum(F.col("judged").cast("long")).alias("acknowledged_judged"),
        F.sum(F.col("unjudged").cast("long")).alias("acknowledged_unjudged"),
        F.sum(F.col("lost").cast("long")).alias("lost"),
    )
    wr = Window.partitionBy("run").orderBy("index")
    examples = (j.filter("lost").withColumn("_n", F.row_number().over(wr))
                .filter(F.col("_n") <= MAX_EXAMPLES)
                .select("run", "index", "topic", "partition", "offset", "value", "process", "ref_hw"))
    return counts, examples


# --------------------------------------------------------------------------------------------
# poll-skip

_KIND_POS, _KIND_WILD, _KIND_REC = 0, 1, 2


def poll_steps(ev: DataFrame) -> DataFrame:
    """Every polled record with the step that led to it: ``expected`` offset (previous record
    + 1, or the offset a position change set), ``has_prev`` and ``prev_index``.

    Records and position changes of one consumer and partition are put in one stream ordered
    by (event index, position in the poll); a record right after a record continues the chain,
    a record right after a position change starts a segment at that change's offset (unknown
    for changes of all partitions, which name none).
    """
    recs = (ev.filter((F.col("f") == "poll") & (F.col("type") == "ok") & F.col("records").isNotNull())
            .select("run", "process", "index", F.posexplode("records").alias("pos", "r"))
            .select("run", "process", F.col("r.topic").alias("topic"),
                    F.col("r.partition").alias("partition"), "index", "pos",
                    F.col("r.offset").alias("offset"), F.lit(_KIND_REC).alias("kind")))
    moves = ev.filter(F.col("f").isin("assign", "seek") & F.col("type").isin("ok", "info")) \
        .select("run", "process", "topic", "partition", "index", F.lit(0).alias("pos"),
                F.coalesce("offset", F.lit(-1)).cast("long").alias("offset"))
    specific = moves.filter(F.col("topic").isNotNull() & F.col("partition").isNotNull()) \
        .withColumn("kind", F.lit(_KIND_POS))
    chains = recs.select("run", "process", "topic", "partition").distinct()
    wild = (moves.filter(F.col("topic").isNull() | F.col("partition").isNull())
            .select("run", "process", "index", "pos", "offset")
            .join(chains, ["run", "process"])
            .select("run", "process", "topic", "partition", "index", "pos", "offset",
                    F.lit(_KIND_WILD).alias("kind")))
    cols = ["run", "process", "topic", "partition", "index", "pos", "offset", "kind"]
    u = recs.select(*cols).unionByName(specific.select(*cols)).unionByName(wild.select(*cols))
    w = Window.partitionBy("run", "process", "topic", "partition").orderBy("index", "pos")
    u = (u.withColumn("prev_kind", F.lag("kind").over(w))
         .withColumn("prev_off", F.lag("offset").over(w))
         .withColumn("prev_index", F.lag("index").over(w))
         .filter(F.col("kind") == _KIND_REC))
    cont = F.coalesce(F.col("prev_kind") == _KIND_REC, F.lit(False))
    start = F.when(F.col("prev_kind") == _KIND_POS, F.col("prev_off")).otherwise(F.lit(-1))
    return (u.withColumn("cont", cont)
            .withColumn("expected", F.when(cont, F.col("prev_off") + 1).otherwise(start))
            .withColumn("has_prev", cont | (start >= 0))
            .withColumn("prev_index", F.when(F.col("has_prev"), F.col("prev_index")))
            .select("run", "process", "topic", "partition", "index", "offset", "expected",
                    "has_prev", "prev_index", "cont"))


def poll_skip(ev: DataFrame, refinfo: DataFrame, committed: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(counts per run, skip examples): jumps over committed offsets between consecutive
    records of a chain (or from a position change's offset to the first record after it)."""
    steps = poll_steps(ev).cache()
    info = F.broadcast(refinfo.select(*RUN_KEYS, F.lit(True).alias("has")))
    gaps = (steps.filter(F.col("has_prev") & (F.col("offset") > F.col("expected")))
            .join(info, RUN_KEYS, "left").withColumn("has", F.coalesce("has", F.lit(False))))
    c = committed.select(*RUN_KEYS, F.col("offset").alias("c_off"))
    missing = (gaps.filter("has").alias("g").join(
        c.alias("c"),
        (F.col("g.run") == F.col("c.run")) & (F.col("g.topic") == F.col("c.topic"))
        & (F.col("g.partition") == F.col("c.partition"))
        & (F.col("c.c_off") >= F.greatest(F.col("g.expected"), F.lit(0)))
        & (F.col("c.c_off") < F.col("g.offset")))
        .groupBy("g.run", "g.process", "g.topic", "g.partition", "g.index", "g.offset")
        .agg(F.count(F.lit(1)).alias("missing")))
    skips = (gaps.join(missing, ["run", "process", "topic", "partition", "index", "offset"], "left")
             .withColumn("missing", F.coalesce("missing", F.lit(0)))
             .withColumn("skip", F.col("has") & (F.col("missing") > 0))
             .withColumn("unjudged", ~F.col("has"))).cache()
    step_counts = steps.groupBy("run").agg(
        F.sum(F.col("has_prev").cast("long")).alias("steps"),
        F.count(F.lit(1)).alias("records"))
    gap_counts = skips.groupBy("run").agg(
        F.sum(F.col("skip").cast("long")).alias("skips"),
        F.sum(F.when(F.col("skip"), F.col("missing")).otherwise(0)).alias("skipped_offsets"),
        F.sum(F.col("unjudged").cast("long")).alias("steps_unjudged"))
    counts = (step_counts.join(gap_counts, "run", "left").na.fill(0)
              .withColumn("steps_judged", F.col("steps") - F.col("steps_unjudged")))
    wr = Window.partitionBy("run").orderBy("index")
    examples = (skips.filter("skip").withColumn("_n", F.row_number().over(wr))
                .filter(F.col("_n") <= MAX_EXAMPLES)
                .select("run", "process", "topic", "partition", "prev_index", "index", "expected",
                        "offset", "missing", F.col("cont")))
    return counts, examples


# --------------------------------------------------------------------------------------------
# Collecting


def run_spark_checks(ev: DataFrame, runs: list[RunInfo]) -> dict[int, dict[str, SparkVerdict]]:
    """Verdicts per run key for poll-skip and lost-write. Runs without any send (or poll)
    get the verdict the Python check gives an empty input: unknown, nothing judged."""
    refinfo, committed = reference(ev)
    lw_counts, lw_ex = lost_write(ev, refinfo, committed)
    ps_counts, ps_ex = poll_skip(ev, refinfo, committed)
    lw = {r["run"]: r.asDict() for r in lw_counts.collect()}
    ps = {r["run"]: r.asDict() for r in ps_counts.collect()}
    lw_examples: dict[int, list[dict[str, Any]]] = {}
    for r in lw_ex.orderBy("run", "index").collect():
        lw_examples.setdefault(r["run"], []).append({
            "kind": "lost-write", "topic": r["topic"], "partition": r["partition"],
            "offset": r["offset"], "producer": r["process"], "final_hw": r["ref_hw"],
            "value": r["value"], "event_indices": [r["index"]]})
    ps_examples: dict[int, list[dict[str, Any]]] = {}
    for r in ps_ex.orderBy("run", "index").collect():
        ps_examples.setdefault(r["run"], []).append({
            "kind": "poll-skip", "topic": r["topic"], "partition": r["partition"],
            "consumer": r["process"], "expected_offset": r["expected"], "got_offset": r["offset"],
            "committed_offsets_skipped": r["missing"], "after_position_change": not r["cont"],
            "event_indices": list(dict.fromkeys(i for i in (r["prev_index"], r["index"])
                                                if i is not None))})
    out: dict[int, dict[str, SparkVerdict]] = {}
    for run in runs:
        if run.parquet is None:
            continue
        a = lw.get(run.key, {})
        lw_c = {k: int(a.get(k) or 0) for k in ("lost", "acknowledged", "acknowledged_judged",
                                               "acknowledged_unjudged")}
        b = ps.get(run.key, {})
        ps_c = {k: int(b.get(k) or 0) for k in ("skips", "skipped_offsets", "steps_judged",
                                               "steps_unjudged")}
        out[run.key] = {
            "lost-write": SparkVerdict("lost-write", decide(lw_c["lost"], lw_c["acknowledged_judged"],
                                                            lw_c["acknowledged_unjudged"]),
                                       lw_c, lw_examples.get(run.key, [])),
            "poll-skip": SparkVerdict("poll-skip", decide(ps_c["skips"], ps_c["steps_judged"],
                                                          ps_c["steps_unjudged"]),
                                      ps_c, ps_examples.get(run.key, [])),
        }
    ev.sparkSession.catalog.clearCache()  # the cached intermediates are only for this pass
    return out
