"""highwater installed from its wheel into a clean environment, used from a folder outside the
checkout: ``highwater setup``, and the CI recipe's push job, its steps read from the YAML: one
suite scenario (the bundled suites found without a path into a checkout) and ``highwater
report``, green when nothing is new with the known findings it matched listed, and red on a
planted new violation, naming it.

The scenario is the KIP-320 suite's unclean truncation on kafkajs, the one make test ran from the
checkout before (HW-12's strict xfails; HW-13's stalls, known, in most runs): ``make test``
runs it here instead, so the installed package costs its build and install (~30 s) and the
report, not another scenario."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

from ruamel.yaml import YAML

from highwater.suites.nightly import nightly
from tests.integration.installed import ROOT, Installed, installed_highwater  # noqa: F401 - the fixture
from tests.synth.reports import RunSpec as SynthRun
from tests.synth.reports import write_run

SCENARIO = "suites/conformance/test_kip320.py"
RECIPE = ROOT / "recipes" / "ci" / "github" / "highwater.yml"
REPORT_STEP = "Report (known findings listed, new violations named)"


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


class PushJob:
    """The GitHub recipe's push job (``jobs.conformance``), its ``run`` steps executed in order
    as the runner would (``bash -eo pipefail``), with the job's variables set and each step's
    ``$GITHUB_OUTPUT`` read back for the steps that name ``steps.<id>.outputs.<key>``."""

    def __init__(self, installed: Installed, env: dict[str, str]) -> None:
        self.installed = installed
        self.env = env
        self.outputs: dict[str, dict[str, str]] = {}
        job = YAML(typ="safe").load(RECIPE.read_text())["jobs"]["conformance"]
        self.steps = {step["name"]: step for step in job["steps"] if "run" in step}

    def run(self, name: str) -> subprocess.CompletedProcess[str]:
        step = self.steps[name]
        out = self.installed.home / f"output-{len(self.outputs)}"
        out.write_text("")
        env = {**self.env, "GITHUB_OUTPUT": str(out)}
        for key, value in (step.get("env") or {}).items():
            m = re.fullmatch(r"\$\{\{\s*steps\.(\w+)\.outputs\.(\w+)\s*\}\}", str(value))
            env[key] = self.outputs.get(m.group(1), {}).get(m.group(2), "") if m else str(value)
        res = self.installed.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env)
        if "id" in step:
            self.outputs[step["id"]] = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
        return res


def push_job(installed: Installed, campaign: str) -> PushJob:
    return PushJob(
        installed,
        {
            "HIGHWATER_PACKAGE": str(installed.wheel),
            "HIGHWATER_CLIENT": "kafkajs",
            "HIGHWATER_SUITES": SCENARIO,
            "CAMPAIGN": campaign,
        },
    )


def test_the_recipe_s_push_job_is_green_with_its_known_findings_listed(installed_highwater: Installed) -> None:  # noqa: F811
    """The push job's steps from the YAML: install the package, the scenario (kafkajs, whose
    findings are known), the report, the verdict: green, the known findings named."""
    home = installed_highwater.home
    job = push_job(installed_highwater, "installed")
    install = job.run("Install highwater")
    assert install.returncode == 0, install.stdout + install.stderr
    suites = job.run("Conformance suites (ci profile)")
    assert suites.returncode == 0 and job.outputs["suites"]["code"] == "0", (
        suites.stdout[-4000:] + suites.stderr[-4000:]
    )
    assert "xfailed" in suites.stdout  # HW-12's strict xfails, from the bundled records
    runs = [json.loads(p.read_text()) for p in (home / "results" / "installed").glob("*/run.json")]
    assert runs and all(r["findings"] is not None for r in runs)
    report = job.run(REPORT_STEP)
    assert report.returncode == 0, report.stdout + report.stderr
    assert job.outputs["judge"]["code"] == "0", report.stdout + report.stderr
    summary = json.loads((home / "report" / "summary.json").read_text())
    assert summary["class"] in ("valid", "known") and summary["totals"]["violated"] == 0
    line = next(x for x in report.stdout.splitlines() if "no new violation" in x)
    for fid in summary["findings"]["known"]:
        assert fid in line
    verdict = job.run("Verdict")
    assert verdict.returncode == 0 and "no new violation" in verdict.stdout, verdict.stdout + verdict.stderr


def test_the_recipe_s_push_job_is_red_on_a_planted_new_violation(installed_highwater: Installed) -> None:  # noqa: F811
    """The same job's report and verdict over the known run and a planted one whose consumer
    skips offsets (a history no finding explains): red, naming the new violation."""
    home = installed_highwater.home
    planted = home / "results" / "planted"
    known = home / "results" / "installed"
    if known.is_dir():  # the green job's runs stay in, known
        shutil.copytree(known, planted, dirs_exist_ok=True)
    write_run(
        home / "results",
        SynthRun(
            "planted", "skips-offsets", seed=7, anomalies=("skip",), client="kafkajs 2.2.4", kafka_version="4.4.0"
        ),
    )
    job = push_job(installed_highwater, "planted")
    job.outputs["suites"] = {"code": "0"}  # the suites passed; only the report sees the skip
    report = job.run(REPORT_STEP)
    assert job.outputs["judge"]["code"] == "1", report.stdout + report.stderr
    assert "new violation: poll-skip in chaos/kill-follower (kafkajs 2.2.4" in report.stdout, report.stdout
    verdict = job.run("Verdict")
    assert verdict.returncode == 1 and "new violations" in verdict.stdout, verdict.stdout + verdict.stderr


@nightly("the scenarios API is unit-tested and the installed wheel's push job runs in make test", 75)
def test_the_example_project_runs_its_own_scenario(installed_highwater: Installed) -> None:  # noqa: F811
    """examples/my-app, a project of its own (its pyproject, its application, one scenario that
    puts its application in the workload), installed against the wheel and run with its own
    pytest from its own folder: the checks judge the application's reads."""
    project = installed_highwater.home / "my-app"
    shutil.copytree(
        ROOT / "examples" / "my-app",
        project,
        ignore=shutil.ignore_patterns("results", "__pycache__", "*.egg-info", "build"),
    )
    pip = installed_highwater.run([str(installed_highwater.bin / "pip"), "install", "-q", str(project)])
    assert pip.returncode == 0, pip.stdout + pip.stderr
    done = installed_highwater.run(
        [str(installed_highwater.bin / "pytest"), "-q", "-p", "no:cacheprovider"], cwd=project
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-4000:]
    verdicts = [json.loads(p.read_text()) for p in project.rglob("verdict.json")]
    assert verdicts and all(v["findings"]["class"] in ("valid", "known") for v in verdicts)
