"""The CI recipes (recipes/ci/, docs/ci-recipes.md) hold: each file validates against its CI
system's schema (check-jsonschema's vendored GitHub workflow and GitLab CI schemas), the GitHub
workflow passes actionlint (built from its Go module into $HIGHWATER_HOME/tools; skipped, saying
so, where it is not), and every ``highwater`` command they run parses with highwater's own
parser, with its placeholders (``${{ matrix.shard }}``, ``$CI_NODE_INDEX``) given sample values;
the shell that turns exit codes into a job's colour is run on sample codes."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from highwater.cli import build_parser
from highwater.exit_codes import Exit, worst
from highwater.harness.clients import client_names
from highwater.harness.paths import home
from highwater.pytest_runs import Shard

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "recipes" / "ci" / "github" / "highwater.yml"
GITLAB = ROOT / "recipes" / "ci" / "gitlab" / ".gitlab-ci.yml"
ACTIONLINT = home() / "tools" / "actionlint"

#: the values the CI systems would put in place of the recipes' placeholders
SAMPLES = {
    "matrix.shard": "2",
    "github.run_id": "1234",
    "github.run_attempt": "1",
    "github.workspace": "/home/runner/work/project/project",
    "CI_NODE_INDEX": "2",
    "CI_NODE_TOTAL": "4",
    "CI_PIPELINE_ID": "5678",
    "CI_PROJECT_DIR": "/builds/group/project",
    "GITHUB_OUTPUT": "/tmp/github-output",
}


def load(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text())


@dataclass(frozen=True)
class Script:
    """One shell script of a recipe, with the variables the job sets."""

    job: str
    text: str
    env: Mapping[str, str]


def github_scripts() -> Iterator[Script]:
    doc = load(GITHUB)
    for name, job in doc["jobs"].items():
        for step in job.get("steps", []):
            if "run" in step:
                env = {**doc.get("env", {}), **job.get("env", {}), **step.get("env", {})}
                yield Script(name, step["run"], {k: str(v) for k, v in env.items()})


def gitlab_scripts() -> Iterator[Script]:
    doc = load(GITLAB)
    for name, job in doc.items():
        if not isinstance(job, dict) or "script" not in job:
            continue
        base = doc.get(job.get("extends", ""), {})
        lines = [*base.get("before_script", []), *job["script"]]
        env = {**doc.get("variables", {}), **job.get("variables", {})}
        yield Script(name, "\n".join(lines), {k: str(v) for k, v in env.items()})


def substitute(text: str, env: Mapping[str, str]) -> str:
    """The placeholders of a script with sample values: GitHub's ``${{ expr }}`` (an
    expression with a fallback, ``vars.X || 'default'``, takes its default) and shell variables
    the job sets or the CI system does; ``$?``, ``$@`` and command substitutions stay."""

    def expression(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        if expr in SAMPLES:
            return SAMPLES[expr]
        default = re.search(r"\|\|\s*'([^']*)'\s*$", expr)
        return default.group(1) if default else "sample"

    def variable(m: re.Match[str], depth: int = 0) -> str:
        name = m.group(1) or m.group(2)
        if name in SAMPLES:
            return SAMPLES[name]
        if name in env and depth < 5:
            value = re.sub(r"\$\{\{(.*?)\}\}", expression, env[name])
            return re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)", lambda n: variable(n, depth + 1), value)
        return m.group(0)  # a variable of the script itself (run, code): not ours to fill

    text = re.sub(r"\$\{\{(.*?)\}\}", expression, text)
    return re.sub(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)", variable, text)


def commands(script: Script) -> Iterator[list[str]]:
    """Every simple command of a script, split as the shell would (lists at ``;``, ``&&``,
    ``||`` and pipes), after the placeholders are filled in."""
    text = substitute(script.text, script.env).replace("\\\n", " ")
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        for token in lexer:
            if token and set(token) <= set(";&|()"):
                if current:
                    yield current
                current = []
            else:
                current.append(token)
        if current:
            yield current


def highwater_commands(scripts: list[Script]) -> list[tuple[str, list[str]]]:
    return [(s.job, c) for s in scripts for c in commands(s) if c[0] == "highwater"]


RECIPES = {"github": (GITHUB, github_scripts), "gitlab": (GITLAB, gitlab_scripts)}


@pytest.fixture(params=sorted(RECIPES), ids=sorted(RECIPES))
def recipe(request: pytest.FixtureRequest) -> tuple[str, list[Script]]:
    _, scripts = RECIPES[request.param]
    return request.param, list(scripts())


def parse(argv: list[str]) -> Any:
    try:
        return build_parser().parse_args(argv[1:])
    except SystemExit as exc:  # argparse's usage error
        raise AssertionError(f"{shlex.join(argv)} does not parse (exit {exc.code})") from None


def test_every_highwater_command_parses(recipe: tuple[str, list[Script]]) -> None:
    name, scripts = recipe
    found = highwater_commands(scripts)
    subcommands = {argv[1] for _, argv in found}
    assert {"setup", "run", "report"} <= subcommands, (name, subcommands)
    for _, argv in found:
        args = parse(argv)
        assert getattr(args, "func", None) is not None, argv
        for test in getattr(args, "tests", []) if args.command == "run" else []:
            assert (ROOT / test.split("::", 1)[0]).exists(), f"{name}: {test} names no suite of this repository"


def test_reports_read_the_campaign_the_runs_wrote(recipe: tuple[str, list[Script]]) -> None:
    """``highwater report DIR`` of each job names a campaign a run of the recipe writes
    (``RESULTS/CAMPAIGN``, the push job), or the results directory its runs and sweeps write
    their campaigns into (the nightly's report job reads every campaign its shards wrote)."""
    name, scripts = recipe
    parsed = [parse(argv) for _, argv in highwater_commands(scripts)]
    writers = [a for a in parsed if a.command in ("run", "sweep")]
    written = {Path(a.results) / a.campaign for a in writers} | {Path(a.results) for a in writers}
    read = {Path(a.results) for a in parsed if a.command == "report"}
    assert read and read <= written, (name, read, written)


#: the client libraries whose newest versions the nightly sweeps (``highwater sweep --over client``):
#: every client under test, in the registry's order
CLIENT_LIBRARIES = client_names()


def test_the_nightly_sweeps_each_clients_newest_versions_in_a_campaign_of_its_own(
    recipe: tuple[str, list[Script]],
) -> None:
    """Each shard sweeps the newest few versions of every client library against the newest
    Kafka (no ``--kafka-version``), each library into its own campaign: a campaign holds one
    sweep's state per shard, and a second sweep of another plan into it is refused. The loop's
    ``$lib`` stays as written, so the campaign must name it; the loop must list every library."""
    name, scripts = recipe
    sweeps = [parse(argv) for job, argv in highwater_commands(scripts) if job == "nightly" and argv[1] == "sweep"]
    over_client = [a for a in sweeps if a.over == "client"]
    assert len(over_client) == 1, f"{name}: one client sweep (in a loop over the libraries), not {len(over_client)}"
    (a,) = over_client
    assert a.client == "$lib" and a.campaign.endswith("-$lib") and a.newest == 3 and a.kafka_version is None
    assert a.campaign not in {b.campaign for b in sweeps if b.over == "kafka"}
    loop = f"for lib in {' '.join(CLIENT_LIBRARIES)}; do"
    assert any(loop in s.text for s in scripts if s.job == "nightly"), f"{name}: no {loop!r}"


def test_the_nightly_shards_cover_every_shard(recipe: tuple[str, list[Script]]) -> None:
    """The shard of each job is one of 1..N, N being the matrix's (GitHub) or ``parallel``'s
    (GitLab) number of jobs, and the report job's SHARDS; the profile is the nightly."""
    name, scripts = recipe
    sharded = [(job, parse(argv)) for job, argv in highwater_commands(scripts) if "--shard" in argv]
    assert sharded, f"{name}: no sharded run"
    if name == "github":
        doc = load(GITHUB)
        shards = int(doc["env"]["SHARDS"])
        for job, _ in sharded:
            assert doc["jobs"][job]["strategy"]["matrix"]["shard"] == list(range(1, shards + 1))
    else:
        doc = load(GITLAB)
        shards = int(doc["variables"]["SHARDS"])
        for job, _ in sharded:
            assert doc[job]["parallel"] == shards
    for _, args in sharded:
        assert args.shard == Shard(int(SAMPLES["matrix.shard"]), shards) and args.profile == "nightly"
        assert args.campaign, "every shard writes into one named campaign"


def test_gitlab_shows_unknown_as_amber() -> None:
    """``allow_failure: exit_codes`` is exactly unknown's code on the jobs that end with a
    verdict; violations and harness errors stay failures."""
    doc = load(GITLAB)
    for job in ("conformance", "nightly-report"):
        assert doc[job]["allow_failure"] == {"exit_codes": [int(Exit.UNKNOWN)]}
        assert doc[job]["artifacts"]["reports"]["junit"] == "report/junit.xml"
        assert "report/" in doc[job]["artifacts"]["paths"]


def test_github_turns_unknown_into_a_warning_and_the_rest_into_red() -> None:
    """The Verdict step exits 0 on valid and unknown, the code itself otherwise; the unknown
    step is the one that may fail without failing the job."""
    doc = load(GITHUB)
    for job in ("conformance", "nightly-report"):
        steps = {s.get("name"): s for s in doc["jobs"][job]["steps"]}
        assert steps["Unknown verdicts"]["continue-on-error"] is True
        assert "3" in steps["Unknown verdicts"]["if"]
        verdict = steps["Verdict"]["run"]
        for code in (0, 1, 3, 4, 130):
            done = subprocess.run(["bash", "-c", verdict], env={"CODE": str(code), "PATH": "/usr/bin:/bin"})
            assert done.returncode == (0 if code in (0, 3) else code), (job, code)
        uses = [s.get("uses", "") for s in doc["jobs"][job]["steps"]]
        assert any(u.startswith("EnricoMi/publish-unit-test-result-action@") for u in uses)
        assert any(u.startswith("actions/upload-artifact@") for u in uses)


def worst_snippets(scripts: list[Script]) -> list[str]:
    return [c[2] for s in scripts for c in commands(s) if c[:2] in (["python", "-c"], ["python3", "-c"])]


def test_the_exit_code_arithmetic_is_highwaters_own(recipe: tuple[str, list[Script]]) -> None:
    """The ``python -c`` that combines the suites' and the report's codes prints what
    ``highwater.exit_codes.worst`` says."""
    name, scripts = recipe
    snippets = worst_snippets(scripts)
    assert snippets, f"{name}: no exit-code arithmetic found"
    for code in set(snippets):
        for codes in [(0, 0), (0, 3), (1, 3), (3, 1, 0), (4, 1), (130, 1), (0, 0, 0, 0, 0)]:
            done = subprocess.run([sys.executable, "-c", code, *map(str, codes)], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert int(done.stdout) == worst(*codes), (name, codes)


@pytest.mark.skipif(importlib.util.find_spec("check_jsonschema") is None, reason="check-jsonschema is not installed")
@pytest.mark.parametrize(
    "path, schema", [(GITHUB, "vendor.github-workflows"), (GITLAB, "vendor.gitlab-ci")], ids=["github", "gitlab"]
)
def test_recipe_matches_its_ci_systems_schema(path: Path, schema: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(
    not ACTIONLINT.exists(),
    reason=f"actionlint is not at {ACTIONLINT} (GOBIN={ACTIONLINT.parent} go install "
    "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12)",
)
def test_github_workflow_passes_actionlint() -> None:
    """actionlint (with shellcheck on the run scripts where shellcheck is on PATH)."""
    done = subprocess.run(
        [str(ACTIONLINT), "-no-color", str(GITHUB)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not on PATH (Debian's shellcheck)")
def test_gitlab_scripts_pass_shellcheck(tmp_path: Path) -> None:
    """Each GitLab job's before_script and script as the one bash script the runner makes of
    them (actionlint does the same for the GitHub steps)."""
    for script in gitlab_scripts():
        path = tmp_path / f"{script.job}.sh"
        path.write_text("#!/bin/bash\nset -eo pipefail\n" + script.text + "\n")
        done = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, script.job + "\n" + done.stdout + done.stderr
