"""Results as DataFrames (``reports.frames``) and ``highwater export`` (``highwater.cli_export``):
each table on a small synthetic results tree, its documented columns and types, the verdicts
the checks wrote, and what malformed input gives (one clear error, or a lenient row)."""

from __future__ import annotations

import argparse
import ast
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from highwater import cli_export
from highwater.core.errors import HighwaterError
from highwater.core.history import to_parquet
from highwater.reports import frames
from highwater.reports.aggregate import CHECK_ORDER
from tests.synth.histories import HistoryBuilder
from tests.synth.reports import RunSpec, write_run

ROOT = Path(__file__).resolve().parents[2]
RUN_COLUMNS = ["run", "campaign", "run_id", "suite", "scenario", "kafka_version", "client"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three judged runs (clean, a skip, a lost write), one never judged (no verdict.json) and
    one run of mixed fetch replicas (``shares_run``), under two campaigns."""
    root = tmp_path_factory.mktemp("results")
    write_run(root, RunSpec("n1", "clean", 1))
    write_run(root, RunSpec("n1", "skip", 2, ("skip",), client="java 4.4.0"))
    write_run(root, RunSpec("n2", "lost", 3, ("lost",), kafka_version="3.9.1"))
    write_run(root, RunSpec("n2", "unjudged", 4), with_verdict=False)
    shares_run(root / "n3" / "shares")
    return root


def shares_run(d: Path) -> Path:
    """consumer-0 (rack-a) reads 6 records from broker 1 (rack-a), 2 from broker 2 (rack-b)
    and 2 whose replica the client could not name; consumer-9 (no rack) reads 3 from broker 3."""
    d.mkdir(parents=True)
    b = HistoryBuilder(
        run_id="shares",
        kafka_version="4.4.0",
        client="kafkajs 2.2.4",
        suite="kip-392",
        scenario="rack-local-reads",
        racks={"brokers": {"1": "rack-a", "2": "rack-b", "3": "rack-c"}, "clients": {"consumer-0": "rack-a"}},
    )
    for i in range(13):
        b.send("producer-0", "t", 0, f"v{i}", offset=i)
    b.poll("consumer-0", [("t", 0, o, f"v{o}") for o in range(6)], replica=1)
    b.poll("consumer-0", [("t", 0, o, f"v{o}") for o in range(6, 8)], replica=2)
    b.poll("consumer-0", [("t", 0, o, f"v{o}") for o in range(8, 10)], replica=None)
    b.poll("consumer-9", [("t", 0, o, f"v{o}") for o in range(3)], replica=3)
    b.final("t", 0, 1, 13, [(o, f"v{o}") for o in range(13)])
    return b.write(d / "history.jsonl")


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert text and "\n" not in text and isinstance(exc.value, HighwaterError)
    return text


# runs ------------------------------------------------------------------------------------


def test_runs_has_one_row_per_run_and_check_with_the_checks_verdicts(tree: Path) -> None:
    df = frames.runs(tree)
    assert list(df.columns) == list(frames.RUNS_COLUMNS)
    assert len(df) == 5 * len(CHECK_ORDER)
    assert sorted(df.run.unique()) == ["n1/clean", "n1/skip", "n2/lost", "n2/unjudged", "n3/shares"]
    assert set(df.verdict) <= set(frames.VERDICTS)
    v = df.set_index(["run", "check"])
    assert v.loc[("n1/skip", "poll-skip"), "verdict"] == "violated"
    assert v.loc[("n1/skip", "poll-skip"), "client"] == "java 4.4.0"
    assert json.loads(v.loc[("n1/skip", "poll-skip"), "counts"])["skips"] == 1
    assert v.loc[("n2/lost", "lost-write"), "verdict"] == "violated"
    assert v.loc[("n2/lost", "lost-write"), "kafka_version"] == "3.9.1"
    assert v.loc[("n1/clean", "lost-write"), "verdict"] == "valid"
    per_run = df.drop_duplicates("run").set_index("run").run_verdict
    assert per_run.to_dict() == {
        "n1/clean": "valid",
        "n1/skip": "violated",
        "n2/lost": "violated",
        "n2/unjudged": "unknown",  # never judged: unknown, never valid
        "n3/shares": "unknown",
    }
    unjudged = df[df.run == "n2/unjudged"]
    assert set(unjudged.verdict) == {"unknown"} and set(unjudged.source) == {"none"}
    assert set(unjudged.notes) == {"no verdict.json"}
    assert str(df.started_at.dtype) == "datetime64[us, UTC]"
    assert df.set_index("run").seed.loc["n1/skip"].iloc[0] == 2
    assert df.allowed.dtype == bool


def test_runs_of_a_malformed_run_is_unknown_with_the_reason(tmp_path: Path) -> None:
    write_run(tmp_path, RunSpec("c", "broken", 1))
    (tmp_path / "c" / "broken" / "verdict.json").write_text("{not json")
    df = frames.runs(tmp_path)
    assert set(df.run_verdict) == {"unknown"}
    history = df[df.check == "history"].iloc[0]
    assert history.verdict == "unknown" and "verdict.json unreadable" in history.notes
    assert len(df.attrs["problems"]) == 1 and df.attrs["problems"][0].startswith("c/broken: verdict.json unreadable")


def test_runs_reads_odd_verdict_values_as_unknown(tmp_path: Path) -> None:
    d = tmp_path / "c" / "odd"
    d.mkdir(parents=True)
    (d / "verdict.json").write_text(
        json.dumps({"verdicts": [{"check": "poll-skip", "valid": "maybe", "counts": {"skips": "two", "n": 3}}]})
    )
    df = frames.runs(tmp_path).set_index("check")
    assert df.loc["poll-skip", "verdict"] == "unknown"
    assert json.loads(df.loc["poll-skip", "counts"]) == {"n": 3}  # a count that is no number is left out
    # tables with no rows (no stall example, no history) still have their columns and types
    for table, columns in ((frames.stalls, frames.STALLS_COLUMNS), (frames.fetch_shares, frames.FETCH_COLUMNS)):
        empty = table(tmp_path)
        assert empty.empty and empty.dtypes.astype(str).to_dict() == columns


@pytest.mark.parametrize("table", [frames.runs, frames.figures, frames.stalls, frames.fetch_shares])
def test_a_missing_empty_or_file_results_dir_is_one_clear_error(table: object, tmp_path: Path) -> None:
    assert callable(table)
    with pytest.raises(frames.ResultsError) as e:
        table(tmp_path / "nosuch")
    assert one_line(e) == f"results directory {tmp_path / 'nosuch'} does not exist"
    (tmp_path / "empty" / "logs").mkdir(parents=True)
    with pytest.raises(frames.ResultsError) as e:
        table(tmp_path / "empty")
    assert one_line(e).startswith(f"no runs under {tmp_path / 'empty'}")
    (tmp_path / "h.jsonl").write_text("{}\n")
    with pytest.raises(frames.ResultsError) as e:
        table(tmp_path / "h.jsonl")
    assert "not a results directory" in one_line(e)


# figures -----------------------------------------------------------------------------------


def test_figures_are_the_counts_of_runs_one_row_each(tree: Path) -> None:
    runs = frames.runs(tree)
    figs = frames.figures(tree)
    assert list(figs.columns) == list(frames.FIGURES_COLUMNS)
    assert str(figs.value.dtype) == "Int64"
    expected = {(r.run, r.check, name): n for r in runs.itertuples() for name, n in json.loads(str(r.counts)).items()}
    assert {(r.run, r.check, r.figure): r.value for r in figs.itertuples()} == expected
    skips = figs[(figs.check == "poll-skip") & (figs.figure == "skips")].set_index("run").value
    assert skips.to_dict() == {"n1/clean": 0, "n1/skip": 1, "n2/lost": 0}  # the others were never judged
    assert figs.attrs["problems"] == [
        "n2/unjudged: no verdict.json, its checks are unknown",
        "n3/shares: no verdict.json, its checks are unknown",
    ]


# stalls ------------------------------------------------------------------------------------


def test_stalls_are_the_longest_stall_examples_of_the_verdicts(tree: Path) -> None:
    df = frames.stalls(tree)
    assert list(df.columns) == list(frames.STALLS_COLUMNS)
    verdicts = json.loads((tree / "n1" / "clean" / "verdict.json").read_text())["verdicts"]
    examples = [
        ex
        for v in verdicts
        if v["check"] in ("progress", "follower-fetch")
        for ex in v["examples"]
        if ex.get("kind") == "longest-stall"
    ]
    assert examples, "the synthetic run reports stalls"
    clean = df[df.run == "n1/clean"]
    key = ("consumer", "topic", "partition", "stall_ms", "bound_ms")
    assert {tuple(r) for r in clean[list(key)].itertuples(index=False)} == {
        tuple(ex[k] for k in key) for ex in examples
    }
    assert len(clean) == len(clean.drop_duplicates(["consumer", "partition", "window", "phase", "stall_ms"]))
    assert (clean.over_bound == (clean.stall_ms > clean.bound_ms)).all()
    assert set(clean.phase) <= {"fault", "after-heal"} and set(clean.fault_kind) == {"kill"}
    assert str(df.stall_ms.dtype) == "Int64" and df.over_bound.dtype == bool


def test_stalls_of_a_malformed_example_keep_what_can_be_read(tmp_path: Path) -> None:
    d = tmp_path / "c" / "odd"
    d.mkdir(parents=True)
    ex = {
        "kind": "longest-stall",
        "consumer": "consumer-0",
        "topic": "t",
        "partition": 0,
        "window": "w",
        "stall_ms": "x",
    }
    (d / "verdict.json").write_text(json.dumps({"verdicts": [{"check": "progress", "valid": True, "examples": [ex]}]}))
    df = frames.stalls(tmp_path)
    assert len(df) == 1
    row = df.iloc[0]
    assert row.consumer == "consumer-0" and row.partition == 0
    assert pd.isna(row.stall_ms) and pd.isna(row.window) and not row.over_bound


# fetch shares ------------------------------------------------------------------------------


def test_fetch_shares_count_records_per_consumer_and_serving_replica(tree: Path) -> None:
    df = frames.fetch_shares(tree)
    assert list(df.columns) == list(frames.FETCH_COLUMNS)
    s = df[df.run == "n3/shares"]
    rows = [
        (
            r.consumer,
            None if pd.isna(r.replica) else r.replica,
            r.records,
            None if pd.isna(r.same_rack) else r.same_rack,
        )
        for r in s.itertuples()
    ]
    assert rows == [
        ("consumer-0", 1, 6, True),
        ("consumer-0", 2, 2, False),
        ("consumer-0", None, 2, None),  # the client could not name the replica
        ("consumer-9", 3, 3, None),  # a consumer without a rack
    ]
    assert s.share.tolist() == pytest.approx([0.6, 0.2, 0.2, 1.0])
    assert s.replica_rack.tolist()[:2] == ["rack-a", "rack-b"]
    # the report's local share: same-rack records over all the consumer's records
    local = s[s.same_rack.fillna(False)].groupby("consumer").share.sum()
    assert local.to_dict() == {"consumer-0": pytest.approx(0.6)}
    # the synthetic runs read every record from the consumer's own rack
    synth = df[df.run == "n1/clean"]
    assert set(synth.same_rack) == {True} and synth.groupby("consumer").share.sum().tolist() == [1.0, 1.0]
    assert df.attrs["problems"] == []


def test_fetch_shares_leave_out_an_unreadable_history_and_name_it(tmp_path: Path) -> None:
    shares_run(tmp_path / "c" / "good")
    bad = tmp_path / "c" / "bad"
    bad.mkdir(parents=True)
    (bad / "history.jsonl").write_text('{"format": "something-else"}\n')
    df = frames.fetch_shares(tmp_path)
    assert set(df.run) == {"c/good"}
    assert len(df.attrs["problems"]) == 1
    assert df.attrs["problems"][0].startswith("c/bad: left out, its history is unreadable: ")


# events ------------------------------------------------------------------------------------


def test_events_are_one_row_per_event(tree: Path) -> None:
    path = tree / "n3" / "shares" / "history.jsonl"
    df = frames.events(path)
    assert list(df.columns) == list(frames.EVENTS_COLUMNS)
    lines = path.read_text().splitlines()
    assert len(df) == len(lines) - 1 and df["index"].tolist() == list(range(len(df)))
    assert df.attrs["header"]["client"] == "kafkajs 2.2.4" and df.attrs["line_errors"] == []
    polls = df[(df.f == "poll") & (df.type == "ok")]
    assert polls.groupby("process").records.sum().to_dict() == {"consumer-0": 10, "consumer-9": 3}
    sends = df[(df.f == "send") & (df.type == "ok")]
    assert sends.offset.tolist() == list(range(13)) and set(sends.topic) == {"t"}
    final = df[df.f == "final-read"].iloc[0]
    assert final.replica == 1 and final.records == 13 and json.loads(final.value)["hw"] == 13
    assert frames.events(tree / "n3" / "shares").equals(df)  # a run directory names its history


def test_events_of_parquet_and_json_lines_agree(tree: Path, tmp_path: Path) -> None:
    src = tree / "n1" / "skip" / "history.jsonl"
    to_parquet(src, tmp_path / "history.parquet")
    a, b = frames.events(src), frames.events(tmp_path / "history.parquet")
    assert a.drop(columns="value").equals(b.drop(columns="value"))
    assert [json.loads(x) for x in a.value] == [json.loads(x) for x in b.value]


def test_events_of_a_cut_history_skip_the_bad_line_unless_strict(tree: Path, tmp_path: Path) -> None:
    text = (tree / "n1" / "clean" / "history.jsonl").read_text()
    cut = tmp_path / "history.jsonl"
    cut.write_text(text[: len(text) - 20])  # the writer stopped mid-event
    df = frames.events(cut)
    assert len(df) == len(text.splitlines()) - 2
    assert len(df.attrs["line_errors"]) == 1 and "incomplete last line" in df.attrs["line_errors"][0]
    with pytest.raises(frames.ResultsError) as e:
        frames.events(cut, strict=True)
    assert "incomplete last line" in one_line(e)


def test_events_of_a_bad_or_missing_history_is_one_clear_error(tree: Path, tmp_path: Path) -> None:
    bad = tmp_path / "history.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(frames.ResultsError) as e:
        frames.events(bad)
    assert "header is not JSON" in one_line(e)
    garbage = tmp_path / "history.parquet"
    garbage.write_bytes(b"PAR1 this is no Parquet file")
    with pytest.raises(frames.ResultsError) as e:
        frames.events(garbage)
    assert str(garbage) in one_line(e)
    with pytest.raises(frames.ResultsError) as e:
        frames.events(tmp_path / "nosuch.jsonl")
    assert "does not exist" in one_line(e)
    with pytest.raises(frames.ResultsError) as e:
        frames.events(tree)  # a whole tree, not one run
    assert one_line(e).startswith(f"no history (history.parquet or history.jsonl) in {tree}")


def import_time_modules(name: str) -> set[str]:
    """The modules importing ``name`` imports, transitively through our own packages: the
    imports at module level, outside ``if TYPE_CHECKING:`` (function-level imports run later)."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        path = ROOT / (mod.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT / mod.replace(".", "/") / "__init__.py"
        if mod.split(".")[0] != "highwater" or not path.exists():
            continue
        body = list(ast.parse(path.read_text(encoding="utf-8")).body)
        while body:
            node = body.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                body += node.body + node.orelse
            elif isinstance(node, ast.Try):
                body += node.body + node.orelse + node.finalbody
            elif isinstance(node, ast.Import):
                todo += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                todo += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return seen


def test_the_frames_import_no_spark() -> None:
    mods = import_time_modules("highwater.reports.frames")
    assert "highwater.core.checks" in mods and "highwater.reports.layout" in mods  # the walk follows our imports
    assert not {m for m in mods if m.split(".")[0] == "pyspark"}
    assert "pyspark.sql" in import_time_modules("highwater.reports.spark_checks")  # ... and would see Spark


# highwater export --------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="highwater")
    cli_export.register(p.add_subparsers(dest="command"))
    return p


def export(*argv: str) -> tuple[int, str, str]:
    args = parser().parse_args(["export", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = args.func(args, out, err)
    return code, out.getvalue(), err.getvalue()


def test_export_every_option_has_help() -> None:
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert all(a.help for a in sub.choices["export"]._actions)


def test_export_writes_csv_to_standard_output(tree: Path) -> None:
    code, out, err = export(str(tree), "--table", "figures")
    assert code == 0
    back = pd.read_csv(io.StringIO(out))
    assert list(back.columns) == list(frames.FIGURES_COLUMNS) and len(back) == len(frames.figures(tree))
    assert "highwater export: warning: n2/unjudged: no verdict.json, its checks are unknown\n" in err


@pytest.mark.parametrize("table", ["runs", "stalls", "fetch-shares"])
def test_export_parquet_keeps_the_table(table: str, tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / f"{table}.parquet"
    code, out, err = export(str(tree), "--table", table, "--out", str(dest))
    assert code == 0 and out == ""
    assert "wrote" in err and str(dest) in err
    want = frames.RESULTS_TABLES[table](tree)
    got = pd.read_parquet(dest)
    assert list(got.columns) == list(want.columns) and len(got) == len(want) > 0
    assert got.dtypes.astype(str).tolist() == want.dtypes.astype(str).tolist()


def test_export_events_of_one_history_as_csv_file(tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "events.csv"
    code, _, _ = export(str(tree / "n3" / "shares"), "--table", "events", "--out", str(dest))
    assert code == 0
    back = pd.read_csv(dest)
    assert back.f.value_counts().to_dict()["send"] == 26 and back.records.sum() == 13 + 13


def test_export_refusals_are_one_line(tree: Path, tmp_path: Path) -> None:
    with pytest.raises(HighwaterError) as e:
        export(str(tree), "--format", "parquet")
    assert "--out" in one_line(e)
    with pytest.raises(HighwaterError) as e:
        export(str(tmp_path / "nosuch"))
    assert "does not exist" in one_line(e)
    with pytest.raises(HighwaterError) as e:
        export(str(tree), "--out", str(tmp_path / "no" / "dir" / "runs.csv"))
    assert one_line(e).startswith(f"cannot write {tmp_path / 'no' / 'dir' / 'runs.csv'}")


def test_export_through_the_highwater_command(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    try:
        from highwater import cli
    except ImportError as e:  # the CLI is being edited elsewhere
        pytest.skip(f"highwater.cli does not import: {e}")
    registered = cli.SUBCOMMAND_MODULES  # module names (or, earlier, the modules themselves)
    if not {"cli_export", cli_export} & set(registered):  # until highwater.cli registers it
        entry = "cli_export" if all(isinstance(m, str) for m in registered) else cli_export
        monkeypatch.setattr(cli, "SUBCOMMAND_MODULES", (*registered, entry))
    try:
        from highwater.exit_codes import Exit

        refused = int(Exit.HARNESS)
    except ImportError:
        refused = 2
    assert cli.main(["export", str(tmp_path / "nosuch")]) == refused
    assert capsys.readouterr().err == f"highwater: error: results directory {tmp_path / 'nosuch'} does not exist\n"
    assert cli.main(["export", str(tree), "--table", "stalls", "--out", str(tmp_path / "s.parquet")]) == 0
    assert len(pd.read_parquet(tmp_path / "s.parquet")) == len(frames.stalls(tree))
    with pytest.raises(SystemExit):
        cli.main(["export", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "which table to export (default: runs)" in help_text and "(default: None)" not in help_text
