"""How fast is ``highwater check``, and how much memory does it need?

Generates a synthetic, valid history (default 10 million events: 3 topics x 12 partitions,
5 consumers splitting the partitions, a periodic observer, a final read of 3 replicas per
partition), converts it to Parquet, then times, each in a fresh subprocess so peak memory
(max RSS) is per step:

* scan: just reading the file (JSON Lines: every line through ``json.loads``; Parquet:
  ``pyarrow.parquet.read_table`` of every column) -- the floor any checker pays;
* check: ``highwater check FILE --json`` (all checks, policy applied).

Prints seconds, events/s, peak RSS, check/scan ratio, and per event the check's time and peak
memory (compare those across ``--events`` to see whether the slope stays linear). Targets (issue
31), each printed met or not: check within 2x of the JSON Lines scan and 5x of the Parquet scan,
peak memory under 2 GiB, exit 0 (the generated history is valid).

    python benchmarks/check_throughput.py [--events N] [--transactions] [--dir DIR] [--keep] [--reuse]

``--dir DIR --keep`` keeps the generated files; ``--dir DIR --reuse`` times them again without
generating (a 10 M-event history takes minutes to generate and convert).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPICS, PARTS, CONSUMERS, REPLICAS = 3, 12, 5, 3
#: targets (issue 31): the check's time as a multiple of the scan's, per format
LIMIT = {"jsonl": 2.0, "parquet": 5.0}
BATCH = 5  # records per poll
META_EVERY = 200  # writes between observer rounds (one meta event per partition)


def generate(path: Path, events: int, transactions: bool = False) -> int:
    """Write a valid history of about ``events`` events; returns the exact count. With
    ``transactions``: every write is a transaction of its own (begin, the send, a committed
    commit), the consumers are one group reading committed data, and each poll is followed by a
    group commit of the next offset (so the transaction and group checks have work)."""
    per_write = 2 + 2 / BATCH + TOPICS * PARTS / META_EVERY / (TOPICS * PARTS)
    if transactions:
        per_write += 3 + 2 / BATCH
    writes = int(events / per_write)
    tps = [(f"topic-{t}", p) for t in range(TOPICS) for p in range(PARTS)]
    counts = [0] * len(tps)
    polled = [0] * len(tps)
    n = 0
    t = 0
    out = open(path, "w", encoding="utf-8")  # noqa: SIM115
    w = out.write
    txn_config = (
        ',"transactional":true,"isolation_level":"read_committed","consumers":{'
        + ",".join(f'"consumer-{c}":{{"group":"bench-group"}}' for c in range(CONSUMERS))
        + "}"
        if transactions
        else ""
    )
    w(
        '{"format":"highwater.history/1","run_id":"bench","kafka_version":"4.1.0",'
        '"client":"synthetic","config":{"acks":"all","idempotence":true,'
        '"unclean_leader_election":false,"min_insync_replicas":2,"progress_bound_ms":60000,'
        '"follower_fetch_grace_ms":0' + txn_config + '},"racks":{"brokers":{"1":"rack-0","2":"rack-1","3":"rack-2"},'
        '"clients":{' + ",".join(f'"consumer-{c}":"rack-{c % 3}"' for c in range(CONSUMERS)) + "}}}\n"
    )

    def ev(proc: str, typ: str, f: str, value: str) -> None:
        nonlocal n, t
        w(f'{{"index":{n},"time_ns":{t},"process":"{proc}","type":"{typ}","f":"{f}","value":{value},"error":null}}\n')
        n += 1
        t += 50_000

    for j, (topic, p) in enumerate(tps):
        ev(
            f"consumer-{j % CONSUMERS}",
            "ok",
            "assign",
            f'{{"topic":"{topic}","partition":{p},"offset":0,"reason":"assign"}}',
        )
    for i in range(writes):
        j = (i * 7) % len(tps)
        topic, p = tps[j]
        o = counts[j]
        val = f"{j}-{o}"
        txn = f',"txn":"producer-0#{i}"' if transactions else ""
        if transactions:
            ev("producer-0", "ok", "txn", f'{{"op":"begin","txn":"producer-0#{i}"}}')
        ev("producer-0", "invoke", "send", f'{{"topic":"{topic}","partition":{p},"key":null,"value":"{val}"{txn}}}')
        ev(
            "producer-0",
            "ok",
            "send",
            f'{{"topic":"{topic}","partition":{p},"key":null,"value":"{val}","offset":{o}{txn}}}',
        )
        if transactions:
            ev("producer-0", "invoke", "txn", f'{{"op":"commit","txn":"producer-0#{i}"}}')
            ev("producer-0", "ok", "txn", f'{{"op":"commit","txn":"producer-0#{i}"}}')
        counts[j] = o + 1
        if counts[j] - polled[j] >= BATCH:
            c = j % CONSUMERS
            a, b = polled[j], counts[j]
            recs = ",".join(
                f'{{"topic":"{topic}","partition":{p},"offset":{k},"value":"{j}-{k}",'
                f'"leader_epoch":0,"replica":{c % 3 + 1}}}'
                for k in range(a, b)
            )
            ev(f"consumer-{c}", "invoke", "poll", "null")
            ev(f"consumer-{c}", "ok", "poll", f'{{"records":[{recs}]}}')
            polled[j] = b
            if transactions:
                commit = f'{{"group":"bench-group","topic":"{topic}","partition":{p},"offset":{b}}}'
                ev(f"consumer-{c}", "invoke", "commit", commit)
                ev(f"consumer-{c}", "ok", "commit", commit)
        if i % (META_EVERY * len(tps)) == 0:
            for k, (tp_t, tp_p) in enumerate(tps):
                ev(
                    "observer",
                    "ok",
                    "meta",
                    f'{{"topic":"{tp_t}","partition":{tp_p},"leader":1,"leader_epoch":0,'
                    f'"isr":[1,2,3],"hw":{counts[k]},"leo":{{"1":{counts[k]}}}}}',
                )
    for j, (topic, p) in enumerate(tps):
        if polled[j] < counts[j]:
            c = j % CONSUMERS
            recs = ",".join(
                f'{{"topic":"{topic}","partition":{p},"offset":{k},"value":"{j}-{k}",'
                f'"leader_epoch":0,"replica":{c % 3 + 1}}}'
                for k in range(polled[j], counts[j])
            )
            ev(f"consumer-{c}", "ok", "poll", f'{{"records":[{recs}]}}')
    for j, (topic, p) in enumerate(tps):
        recs = ",".join(f'[{k},"{j}-{k}"]' for k in range(counts[j]))
        for r in range(1, REPLICAS + 1):
            ev(
                "final",
                "ok",
                "final-read",
                f'{{"topic":"{topic}","partition":{p},"replica":{r},"hw":{counts[j]},'
                f'"log_start":0,"records":[{recs}]}}',
            )
    out.close()
    return n


SCAN_JSONL = """
import json, sys
n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        json.loads(line)
        n += 1
print(n)
"""

SCAN_PARQUET = """
import sys, pyarrow.parquet as pq
print(pq.read_table(sys.argv[1]).num_rows)
"""


def measure(argv: list[str]) -> tuple[float, float, int]:
    """Run a child; return (seconds, peak RSS MiB, exit code)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument(
        "--transactions",
        action="store_true",
        help="every write a committed transaction, the consumers one group committing after each poll",
    )
    ap.add_argument("--dir", type=Path, default=None, help="work directory (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="reuse history.jsonl/.parquet already in --dir (skip generation and conversion)",
    )
    args = ap.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="hw-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    jsonl, parquet = work / "history.jsonl", work / "history.parquet"
    py = sys.executable
    try:
        if args.reuse and jsonl.exists() and parquet.exists():
            with open(jsonl, "rb") as fh:
                n = sum(1 for _ in fh) - 1
            print(f"reusing {n:,} events in {work}")
        else:
            t0 = time.perf_counter()
            n = generate(jsonl, args.events, args.transactions)
            print(
                f"generated {n:,} events ({jsonl.stat().st_size / 2**20:,.0f} MiB JSONL) "
                f"in {time.perf_counter() - t0:.1f} s"
            )
            sec, mib, rc = measure(
                [
                    py,
                    "-c",
                    "import sys; from highwater.core.history import to_parquet; to_parquet(sys.argv[1], sys.argv[2])",
                    str(jsonl),
                    str(parquet),
                ]
            )
            print(
                f"to_parquet: {sec:.1f} s, peak {mib:,.0f} MiB, "
                f"{parquet.stat().st_size / 2**20:,.0f} MiB Parquet (exit {rc})"
            )
        rows = []
        for fmt, path, scan in (("jsonl", jsonl, SCAN_JSONL), ("parquet", parquet, SCAN_PARQUET)):
            s_sec, s_mib, _ = measure([py, "-c", scan, str(path)])
            c_sec, c_mib, rc = measure([py, "-m", "highwater.cli", "check", str(path), "--json"])
            rows.append((fmt, "scan", s_sec, s_mib, None, None))
            rows.append((fmt, "check", c_sec, c_mib, c_sec / s_sec, rc))
        print(
            f"\n{'format':<8} {'step':<6} {'seconds':>8} {'events/s':>12} {'peak MiB':>9} {'x scan':>7} "
            f"{'us/event':>9} {'B/event':>8} {'exit':>5}"
        )
        for fmt, step, sec, mib, ratio, rc in rows:
            print(
                f"{fmt:<8} {step:<6} {sec:>8.1f} {n / sec:>12,.0f} {mib:>9,.0f} "
                f"{'' if ratio is None else f'{ratio:.2f}':>7} {sec / n * 1e6:>9.2f} {mib * 2**20 / n:>8,.0f} "
                f"{'' if rc is None else rc:>5}"
            )
        ok = True
        print()
        for fmt, _, _sec, mib, ratio, rc in rows:
            if ratio is None:
                continue
            for name, met in (
                (f"check <= {LIMIT[fmt]:g}x scan", ratio <= LIMIT[fmt]),
                ("peak < 2048 MiB", mib < 2048),
                ("exit 0", rc == 0),
            ):
                print(f"target {fmt:<8} {name:<20} {'met' if met else 'NOT met'}")
                ok &= met
        print(f"\ntargets: {'all met' if ok else 'NOT all met'}")
        return 0 if ok else 1
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
