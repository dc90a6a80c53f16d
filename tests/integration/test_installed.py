"""highwater installed from its wheel into a clean environment, used from a folder outside the
checkout: ``highwater setup``, one suite scenario (the bundled suites found without a path into
a checkout) and ``highwater report``, whose exit is 0 when nothing is new and whose line lists the
known findings the runs matched.

The scenario is the KIP-320 suite's unclean truncation on kafkajs, the one make test ran from the
checkout before (HW-12's strict xfails; HW-13's stalls, known, in most runs): ``make test``
runs it here instead, so the installed package costs its build and install (~30 s) and the
report, not another scenario."""

from __future__ import annotations

import json

from tests.integration.installed import Installed, installed_highwater  # noqa: F401 - the fixture

SCENARIO = "suites/conformance/test_kip320.py"


def test_the_installed_package_has_one_import_name_and_sets_up(installed_highwater: Installed) -> None:  # noqa: F811
    probe = installed_highwater.run(
        [
            str(installed_highwater.bin / "python"),
            "-c",
            "import importlib.util, highwater.harness.clients.java as j; "
            "print([n for n in ('core', 'harness', 'faults', 'reports', 'suites') if importlib.util.find_spec(n)]);"
            "print(j.SOURCE)",
        ]
    )
    assert probe.returncode == 0, probe.stderr
    generic, source = probe.stdout.splitlines()
    assert generic == "[]"
    assert "site-packages/highwater/clients/java" in source  # the worker's sources, shipped
    setup = installed_highwater.run(["highwater", "setup"])
    assert setup.returncode == 0, setup.stdout + setup.stderr
    said = setup.stdout + setup.stderr  # setup reports on stderr
    assert "Java client worker ready" in said and "kafkajs 2.2.4 ready" in said and "lossyfs" in said


def test_a_bundled_scenario_runs_and_reports_from_outside_the_checkout(installed_highwater: Installed) -> None:  # noqa: F811
    home = installed_highwater.home
    run = installed_highwater.run(
        [
            "highwater",
            "run",
            "--client",
            "kafkajs",
            "--campaign",
            "installed",
            "--results",
            "results",
            "--progress",
            "plain",
            SCENARIO,
        ]
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "xfailed" in run.stdout  # HW-12's strict xfails, from the bundled records
    runs = [json.loads(p.read_text()) for p in (home / "results" / "installed").glob("*/run.json")]
    assert runs and all(r["findings"] is not None for r in runs)
    report = installed_highwater.run(["highwater", "report", "results/installed", "--out", "report", "--quiet"])
    assert report.returncode == 0, report.stdout + report.stderr
    summary = json.loads((home / "report" / "summary.json").read_text())
    assert summary["class"] in ("valid", "known") and summary["totals"]["violated"] == 0
    line = next(x for x in report.stdout.splitlines() if "no new violation" in x)
    for fid in summary["findings"]["known"]:
        assert fid in line
