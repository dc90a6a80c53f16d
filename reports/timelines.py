"""Per-run timelines, aggregated in Spark.

Each run's time axis is cut into ``BUCKETS`` equal buckets (width from the run's own length),
so a 10-second smoke run and a 2-hour soak both plot at the same resolution and the collected
result stays small whatever the history size. Series per bucket:

* throughput: acknowledged sends, failed/uncertain sends, polled records;
* end-to-end latency: poll time minus send invoke time of the same value (p50/p99/max), on a
  hash sample of values when the input is large (both sides sampled by the same hash, so the
  join stays exact for the values kept);
* per partition: the last observed leader, ISR size and high watermark (``meta`` events);
* per consumer and partition: the highest offset polled, from which the lag (HW - position)
  is computed after collection, carrying the last value forward;
* fault windows: ``fault``/``heal`` events, paired after collection (see ``fault_windows``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

BUCKETS = 120
MIN_BUCKET_NS = 10_000_000  # 10 ms


@dataclass
class Timeline:
    """Plain lists, ready for SVG: ``t`` is bucket start in seconds since the run started."""

    width_s: float
    t: list[float] = field(default_factory=list)
    acks: list[float] = field(default_factory=list)  # per second
    send_errors: list[float] = field(default_factory=list)
    polled: list[float] = field(default_factory=list)
    latency_p50_ms: list[float | None] = field(default_factory=list)
    latency_p99_ms: list[float | None] = field(default_factory=list)
    partitions: dict[str, dict[str, list[Any]]] = field(default_factory=dict)  # "t-0" -> series
    lag: dict[str, list[float | None]] = field(default_factory=dict)  # "consumer-0 t-0" -> lag
    faults: list[dict[str, Any]] = field(default_factory=list)  # {start_s, end_s, kind, targets}
    latency_sampled: int = 1

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_widths(ev: DataFrame) -> dict[int, int]:
    """Bucket width (ns) per run, from its last event time."""
    ends = ev.groupBy("run").agg(F.max("time_ns").alias("end")).collect()
    return {r["run"]: max(MIN_BUCKET_NS, -(-int(r["end"] or 0) // BUCKETS)) for r in ends}


def _bucketed(ev: DataFrame, widths: dict[int, int]) -> DataFrame:
    spark = ev.sparkSession
    w = spark.createDataFrame(list(widths.items()), "run int, width long")
    return ev.join(F.broadcast(w), "run").withColumn(
        "bucket", F.least(F.floor(F.col("time_ns") / F.col("width")), F.lit(BUCKETS - 1)).cast("int")
    )


def timelines(ev: DataFrame, latency_sample: int = 1) -> dict[int, Timeline]:
    """Timelines of every run in ``ev`` (pass only the runs to plot)."""
    widths = run_widths(ev)
    if not widths:
        return {}
    # no cache: each series below reads only its own columns (the records column, the big
    # one, only for the polled offsets and latency)
    b = _bucketed(ev, widths)
    tput, meta, faults = _events_by_bucket(b)
    polls = b.filter((F.col("f") == "poll") & (F.col("type") == "ok") & F.col("records").isNotNull())
    recs = polls.select("run", "process", "bucket", "time_ns", F.explode("records").alias("r"))
    pos = (
        recs.groupBy(
            "run", "process", F.col("r.topic").alias("topic"), F.col("r.partition").alias("partition"), "bucket"
        )
        .agg(F.max("r.offset").alias("max_off"))
        .collect()
    )
    lat = _latency(b, recs, latency_sample).collect()
    return _assemble(widths, tput, meta, pos, lat, faults, latency_sample)


def _events_by_bucket(b: DataFrame) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(throughput rows, meta rows, fault events), from one scan and one aggregation (they
    were three Spark jobs; at 40 runs each cost a second or two, much of it planning and
    code generation). Meta events group by their partition as well; sends, polls and faults
    land in the group without one. Only the offsets of the records are read, and the filter
    lets the reader skip the final reads' row groups, whose records are most of a history."""
    is_send = F.col("f") == "send"
    is_meta = (F.col("f") == "meta") & (F.col("type") != "fail") & F.col("topic").isNotNull()
    is_fault = F.col("f").isin("fault", "heal") & (F.col("type") != "fail")
    isr_n = F.size(F.from_json(F.get_json_object("value_json", "$.isr"), "array<int>"))
    rows = (
        b.filter(F.col("f").isin("send", "poll", "meta", "fault", "heal"))
        .groupBy(
            "run",
            "bucket",
            F.when(is_meta, F.col("topic")).alias("m_topic"),
            F.when(is_meta, F.col("partition")).alias("m_partition"),
        )
        .agg(
            F.sum(F.when(is_send & (F.col("type") == "ok"), 1).otherwise(0)).alias("acks"),
            F.sum(F.when(is_send & F.col("type").isin("fail", "info"), 1).otherwise(0)).alias("errs"),
            F.sum(
                F.when(
                    (F.col("f") == "poll") & (F.col("type") == "ok"), F.coalesce(F.size("records.offset"), F.lit(0))
                ).otherwise(0)
            ).alias("polled"),
            # max_by skips rows whose ordering is null: only meta events compete
            F.max_by(
                F.when(is_meta, F.struct(F.col("leader"), isr_n.alias("isr_n"), F.col("hw"))),
                F.when(is_meta, F.col("time_ns")),
            ).alias("last"),
            F.collect_list(
                F.when(
                    is_fault,
                    F.struct(
                        "time_ns",
                        "f",
                        "index",
                        F.get_json_object("value_json", "$.kind").alias("kind"),
                        F.get_json_object("value_json", "$.targets").alias("targets"),
                    ),
                )
            ).alias("faults"),
        )
        .collect()
    )
    tput, meta, faults = [], [], []
    for r in rows:
        if r["m_topic"] is None and r["m_partition"] is None:
            tput.append(
                {"run": r["run"], "bucket": r["bucket"], "acks": r["acks"], "errs": r["errs"], "polled": r["polled"]}
            )
            faults += [{"run": r["run"], **f.asDict()} for f in r["faults"]]
        else:
            meta.append(
                {
                    "run": r["run"],
                    "topic": r["m_topic"],
                    "partition": r["m_partition"],
                    "bucket": r["bucket"],
                    **r["last"].asDict(),
                }
            )
    faults.sort(key=lambda f: (f["run"], f["index"]))
    return tput, meta, faults


def _latency(b: DataFrame, recs: DataFrame, sample: int) -> DataFrame:
    sends = b.filter((F.col("f") == "send") & (F.col("type") == "invoke") & F.col("value").isNotNull()).select(
        "run", "value", F.col("time_ns").alias("sent_ns")
    )
    polled = recs.select("run", "bucket", "time_ns", F.col("r.value").alias("value")).filter(F.col("value").isNotNull())
    if sample > 1:
        keep = F.pmod(F.xxhash64("value"), F.lit(sample)) == 0
        sends, polled = sends.filter(keep), polled.filter(keep)
    first_sent = sends.groupBy("run", "value").agg(F.min("sent_ns").alias("sent_ns"))
    j = polled.join(first_sent, ["run", "value"]).withColumn("ms", (F.col("time_ns") - F.col("sent_ns")) / 1e6)
    return j.groupBy("run", "bucket").agg(
        F.percentile_approx("ms", 0.5).alias("p50"), F.percentile_approx("ms", 0.99).alias("p99")
    )


def _assemble(
    widths: dict[int, int],
    tput: list[dict[str, Any]],
    meta: list[dict[str, Any]],
    pos: list[Any],
    lat: list[Any],
    faults: list[dict[str, Any]],
    sample: int,
) -> dict[int, Timeline]:
    out: dict[int, Timeline] = {}
    for run, width in widths.items():
        ws = width / 1e9
        out[run] = Timeline(
            width_s=ws,
            t=[round(i * ws, 6) for i in range(BUCKETS)],
            acks=[0.0] * BUCKETS,
            send_errors=[0.0] * BUCKETS,
            polled=[0.0] * BUCKETS,
            latency_p50_ms=[None] * BUCKETS,
            latency_p99_ms=[None] * BUCKETS,
            latency_sampled=sample,
        )
    for r in tput:
        tl, i = out[r["run"]], r["bucket"]
        tl.acks[i] = r["acks"] / tl.width_s
        tl.send_errors[i] = r["errs"] / tl.width_s
        tl.polled[i] = r["polled"] / tl.width_s
    for r in lat:
        tl = out[r["run"]]
        tl.latency_p50_ms[r["bucket"]] = round(float(r["p50"]), 3)
        tl.latency_p99_ms[r["bucket"]] = round(float(r["p99"]), 3)
    hw: dict[tuple[int, str], list[int | None]] = {}
    for r in meta:
        tl = out[r["run"]]
        name = f"{r['topic']}-{r['partition']}"
        series = tl.partitions.setdefault(
            name, {"leader": [None] * BUCKETS, "isr": [None] * BUCKETS, "hw": [None] * BUCKETS}
        )
        series["leader"][r["bucket"]] = r["leader"]
        series["isr"][r["bucket"]] = r["isr_n"]
        series["hw"][r["bucket"]] = r["hw"]
    for (run, name), tl in ((k, out[k[0]]) for k in {(r["run"], f"{r['topic']}-{r['partition']}") for r in meta}):
        hw[(run, name)] = _carry(tl.partitions[name]["hw"])
    maxoff: dict[tuple[int, str, str], list[int | None]] = defaultdict(lambda: [None] * BUCKETS)
    for r in pos:
        maxoff[(r["run"], r["process"], f"{r['topic']}-{r['partition']}")][r["bucket"]] = r["max_off"]
    for (run, proc, name), offs in sorted(maxoff.items()):
        h = hw.get((run, name))
        if h is None:
            continue
        cur = _carry(offs)
        out[run].lag[f"{proc} {name}"] = [
            None if a is None or c is None else float(max(a - (c + 1), 0)) for a, c in zip(h, cur)
        ]
    by_run: dict[int, list[Any]] = defaultdict(list)
    for r in faults:
        by_run[r["run"]].append(r)
    for run, evs in by_run.items():
        out[run].faults = fault_windows(evs, widths[run] * BUCKETS)
    return out


def _carry(values: list[Any]) -> list[Any]:
    """Carry the last observed value forward over buckets without an observation."""
    out, last = [], None
    for v in values:
        last = v if v is not None else last
        out.append(last)
    return out


def fault_windows(events: list[Any], end_ns: int) -> list[dict[str, Any]]:
    """Pair fault and heal events into windows, as the liveness checks do: a heal ends the
    open faults of its kind (and of its targets when it names any); a heal of kind null or
    "all" ends every open fault; a fault never healed lasts to the end of the run."""
    open_: list[dict[str, Any]] = []
    done: list[dict[str, Any]] = []
    for e in events:
        kind = e["kind"].strip('"') if isinstance(e["kind"], str) else None
        targets = e["targets"] or "[]"
        if e["f"] == "fault":
            open_.append({"start_s": e["time_ns"] / 1e9, "kind": kind, "targets": targets})
            continue
        still: list[dict[str, Any]] = []
        for w in open_:
            ends = kind in (None, "all") or (w["kind"] == kind and targets in ("[]", w["targets"]))
            (done if ends else still).append({**w, "end_s": e["time_ns"] / 1e9} if ends else w)
        open_ = still
    done += [{**w, "end_s": end_ns / 1e9, "unhealed": True} for w in open_]
    return sorted(done, key=lambda w: w["start_s"])
