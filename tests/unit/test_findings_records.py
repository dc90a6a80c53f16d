"""The known findings as records (``highwater.core.findings``, ``core/findings.toml``): what a run's
class is from its checks' verdicts and the findings that apply to it, how a malformed record is
refused in one line, that the bundled records name real checks and scenarios, that
docs/findings.md's table is made from them, the suites' xfail marks made of them, and where
``preflight`` reads them."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from highwater.core.checks import CHECKS
from highwater.core.errors import HighwaterError
from highwater.core.findings import (
    CLASSES,
    ENV,
    Finding,
    FindingsError,
    RunIdentity,
    Shows,
    beyond_of,
    classify,
    configured,
    find,
    load,
    markdown_table,
    validate,
    worst_class,
)
from highwater.suites.findings import finding_mark
from highwater.suites.scenario import PLANS, TimedChecksOnly, scenario_names

DOC = Path(__file__).resolve().parents[2] / "docs" / "findings.md"

#: the transactions suite's scenarios, which the scenario module's PLANS does not hold
TRANSACTIONS = (
    "transactions/coordinators-kill",
    "transactions/coordinators-cut-pause",
    "transactions/exactly-once-copy",
    "transactions/producer-links-tv1",
)
SCENARIOS = scenario_names()


def _finding(
    fid: str = "HW-T",
    *,
    clients: dict[str, str] | None = None,
    kafka: str = "",
    shows: tuple[Shows, ...] = (),
) -> Finding:
    return Finding(
        id=fid,
        component="client: test",
        what="does a wrong thing",
        seen="test 1.0",
        status="open",
        repro="",
        reason=f"FINDING {fid}",
        clients=clients if clients is not None else {"kafka-python": ">=3.0.12"},
        kafka=kafka,
        shows=shows,
    )


def _shows(*checks: str, scenarios: tuple[str, ...] = ("suite/a",), strict: bool = False) -> Shows:
    return Shows(scenarios, checks, strict)


def _run(
    scenario: str = "suite/a", client: str | None = "kafka-python 3.0.12", kafka: str | None = "4.4.0"
) -> RunIdentity:
    suite, _, name = scenario.partition("/")
    return RunIdentity.of(suite, name, client, kafka)


LOST = _finding(shows=(_shows("lost-write"),))


# classify: known -------------------------------------------------------------------------------


def test_a_violated_check_a_finding_explains_is_known() -> None:
    c = classify([LOST], _run(), {"lost-write": False, "progress": True})
    assert c.run_class == "known"
    assert c.known == {"lost-write": ("HW-T",)}
    assert c.findings == ("HW-T",)
    assert c.new == () and c.fixed == ()
    assert c.to_json() == {"class": "known", "known": {"lost-write": ["HW-T"]}, "new": [], "fixed": [], "beyond": {}}


def test_a_scenario_pattern_covers_its_matches() -> None:
    f = _finding(shows=(_shows("lost-write", scenarios=("transactions/*",)),))
    assert classify([f], _run("transactions/coordinators-kill"), {"lost-write": False}).run_class == "known"
    assert classify([f], _run("durability/leader-kill"), {"lost-write": False}).run_class == "violated"


def test_a_local_build_is_within_its_release_range() -> None:
    c = classify([LOST], _run(client="kafka-python 3.0.12+local.abc"), {"lost-write": False})
    assert c.run_class == "known"


def test_a_broker_finding_applies_to_every_client() -> None:
    broker = _finding(clients={}, kafka=">=4.4.0", shows=(_shows("progress"),))
    for client in ("java 4.4.0", "kafkajs 2.2.4", None):
        assert classify([broker], _run(client=client), {"progress": False}).run_class == "known"


# classify: new ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "run",
    [
        pytest.param(_run(client="java 4.4.0"), id="another-client"),
        pytest.param(_run(client="kafka-pythonx 3.0.12"), id="a-client-whose-name-begins-with-it"),
        pytest.param(_run("suite/b"), id="another-scenario"),
        pytest.param(_run("other/a"), id="another-suite"),
        pytest.param(_run(client="kafka-python 2.2.3"), id="client-version-below-the-range"),
        pytest.param(_run(client="kafka-python not.a.version"), id="unparseable-client-version"),
        pytest.param(_run(client="kafka-python"), id="no-client-version"),
        pytest.param(_run(client=None), id="no-client"),
    ],
)
def test_a_violation_the_finding_does_not_apply_to_is_new(run: RunIdentity) -> None:
    c = classify([LOST], run, {"lost-write": False})
    assert c.run_class == "violated"
    assert c.new == ("lost-write",)
    assert c.known == {} and c.findings == ()


@pytest.mark.parametrize(
    "kafka",
    [
        pytest.param("4.3.1", id="below-the-range"),
        pytest.param("5.0.0", id="above-the-range"),
        pytest.param("nightly", id="unparseable"),
        pytest.param(None, id="missing"),
    ],
)
def test_a_kafka_release_outside_the_range_is_new(kafka: str | None) -> None:
    f = _finding(kafka=">=4.4.0,<5", shows=(_shows("lost-write"),))
    assert classify([f], _run(kafka="4.4.0"), {"lost-write": False}).run_class == "known"  # the look-alike
    c = classify([f], _run(kafka=kafka), {"lost-write": False})
    assert (c.run_class, c.new) == ("violated", ("lost-write",))


def test_a_check_the_finding_does_not_name_is_new() -> None:
    c = classify([LOST], _run(), {"aborted-read": False})
    assert (c.run_class, c.new, c.known) == ("violated", ("aborted-read",), {})


def test_explained_and_unexplained_together_is_violated_with_both() -> None:
    c = classify([LOST], _run(), {"lost-write": False, "duplicate": False, "progress": True})
    assert c.run_class == "violated"
    assert c.known == {"lost-write": ("HW-T",)}
    assert c.new == ("duplicate",)
    assert c.findings == ("HW-T",)


def test_a_check_two_findings_explain_names_both_in_order() -> None:
    a = _finding("HW-A", shows=(_shows("lost-write"),))
    b = _finding("HW-B", shows=(_shows("lost-write", "progress"),))
    c = classify([a, b], _run(), {"progress": False, "lost-write": False})
    assert c.known == {"progress": ("HW-B",), "lost-write": ("HW-A", "HW-B")}
    assert c.findings == ("HW-B", "HW-A")


def test_only_the_shows_entry_of_the_run_s_scenario_explains() -> None:
    """A finding showing as progress in one scenario and as lost-write in another does not explain
    lost-write in the first."""
    f = _finding(shows=(_shows("progress"), _shows("lost-write", scenarios=("suite/b",))))
    assert classify([f], _run(), {"lost-write": False}).run_class == "violated"
    assert classify([f], _run(), {"progress": False}).run_class == "known"


# classify: fixed? ------------------------------------------------------------------------------


def test_a_strict_finding_whose_checks_judged_true_is_fixed() -> None:
    f = _finding(shows=(_shows("follower-fetch", "progress", strict=True),))
    c = classify([f], _run(), {"follower-fetch": True, "progress": True, "lost-write": True})
    assert (c.run_class, c.fixed, c.known, c.new) == ("fixed?", ("HW-T",), {}, ())
    assert c.to_json()["fixed"] == ["HW-T"]


def test_a_strict_finding_judged_true_in_one_check_and_unknown_in_another_is_fixed() -> None:
    f = _finding(shows=(_shows("follower-fetch", "progress", strict=True),))
    assert classify([f], _run(), {"follower-fetch": True, "progress": "unknown"}).run_class == "fixed?"


def test_a_non_strict_finding_that_did_not_show_is_valid() -> None:
    f = _finding(shows=(_shows("follower-fetch", "progress"),))
    c = classify([f], _run(), {"follower-fetch": True, "progress": True})
    assert (c.run_class, c.fixed) == ("valid", ())


@pytest.mark.parametrize(
    "verdicts, run_class",
    [
        ({"follower-fetch": "not-applicable", "progress": "not-applicable"}, "not-applicable"),
        ({"follower-fetch": "unknown", "progress": "not-applicable"}, "unknown"),
        ({"follower-fetch": "unknown", "lost-write": True}, "unknown"),
        ({"lost-write": True}, "valid"),  # its checks not judged at all
    ],
)
def test_a_strict_finding_whose_checks_did_not_judge_is_not_fixed(verdicts: dict, run_class: str) -> None:
    f = _finding(shows=(_shows("follower-fetch", "progress", strict=True),))
    c = classify([f], _run(), verdicts)
    assert (c.run_class, c.fixed) == (run_class, ())


def test_a_strict_finding_that_does_not_apply_is_not_fixed() -> None:
    f = _finding(shows=(_shows("progress", strict=True),))
    for run in (_run(client="java 4.4.0"), _run("suite/b"), _run(client="kafka-python 2.2.3")):
        assert classify([f], run, {"progress": True}).run_class == "valid"


def test_a_strict_finding_that_showed_is_known_not_fixed() -> None:
    f = _finding(shows=(_shows("follower-fetch", "progress", strict=True),))
    c = classify([f], _run(), {"follower-fetch": True, "progress": False})
    assert (c.run_class, c.known, c.fixed) == ("known", {"progress": ("HW-T",)}, ())


# classify: any check, no check -----------------------------------------------------------------


def test_any_check_explains_whatever_said_no() -> None:
    f = _finding(shows=(_shows("*"),))
    c = classify([f], _run(), {"duplicate": False, "share-delivery": False})
    assert c.run_class == "known"
    assert c.known == {"duplicate": ("HW-T",), "share-delivery": ("HW-T",)}


def test_any_check_never_yields_fixed() -> None:
    f = _finding(shows=(_shows("*", strict=True),))
    c = classify([f], _run(), {"progress": True, "lost-write": True})
    assert (c.run_class, c.fixed) == ("valid", ())


def test_shows_without_checks_explains_nothing() -> None:
    """Like HW-6 and HW-12: the scenario's tests meet the finding, no check's verdict shows it."""
    f = _finding(shows=(_shows(scenarios=("kip-320/unclean-truncation",), strict=True),))
    run = _run("kip-320/unclean-truncation")
    c = classify([f], run, {"truncation-undetected": False})
    assert (c.run_class, c.new) == ("violated", ("truncation-undetected",))
    c = classify([f], run, {"truncation-undetected": True})
    assert (c.run_class, c.fixed) == ("valid", ())


# classify: verdicts without findings -----------------------------------------------------------


@pytest.mark.parametrize(
    "verdicts, run_class",
    [
        ({"progress": True, "lost-write": True}, "valid"),
        ({"progress": True, "lost-write": "not-applicable"}, "valid"),
        ({"progress": True, "lost-write": "unknown"}, "unknown"),
        ({"progress": "not-applicable", "lost-write": "not-applicable"}, "not-applicable"),
        ({"progress": "unknown", "lost-write": False}, "violated"),
        ({}, "unknown"),
    ],
)
def test_without_findings_the_class_is_the_verdict(verdicts: dict, run_class: str) -> None:
    assert classify([], _run(), verdicts).run_class == run_class


# worst_class, RunIdentity ----------------------------------------------------------------------


def test_classes_are_worst_first() -> None:
    assert CLASSES == ("violated", "fixed?", "unknown", "known", "valid", "not-applicable")


@pytest.mark.parametrize(
    "classes, worst",
    [
        (["valid", "violated", "known"], "violated"),
        (["unknown", "fixed?", "valid"], "fixed?"),
        (["known", "unknown"], "unknown"),
        (["valid", "known"], "known"),
        (["not-applicable", "valid"], "valid"),
        (["not-applicable"], "not-applicable"),
        ([], "unknown"),
    ],
)
def test_worst_class(classes: list[str], worst: str) -> None:
    assert worst_class(classes) == worst


def test_run_identity_reads_the_client_label() -> None:
    assert RunIdentity.of("transactions", "coordinators-kill", "kafka-python 3.0.12", "4.4.0") == RunIdentity(
        "transactions/coordinators-kill", "kafka-python", "3.0.12", "4.4.0"
    )
    assert RunIdentity.of("kip-392", "replica-cut-off", None, None) == RunIdentity(
        "kip-392/replica-cut-off", None, None, None
    )
    assert RunIdentity.of("s", "a", "java", "4.4.0") == RunIdentity("s/a", "java", None, "4.4.0")


def test_a_local_version_is_within_its_release_range() -> None:
    f = _finding()
    assert f.applies_to("kafka-python", "3.0.12+local.abc", None)
    assert f.applies_to("kafka-python", "3.0.13", None)
    assert not f.applies_to("kafka-python", "3.0.11+local.abc", None)


def test_an_empty_client_range_is_every_version() -> None:
    f = _finding(clients={"java": ""})
    assert f.applies_to("java", None, None)
    assert f.applies_to("java", "0.1", "4.4.0")


# the bundled records in the suites' runs -------------------------------------------------------


BUNDLED = load()


def _bundled(scenario: str, client: str, verdicts: dict, kafka: str = "4.4.0"):
    return classify(BUNDLED, _run(scenario, client, kafka), verdicts)


def test_kafka_python_losing_a_write_in_a_transaction_is_hw10() -> None:
    c = _bundled("transactions/coordinators-kill", "kafka-python 3.0.12", {"lost-write": False, "progress": True})
    assert (c.run_class, c.known, c.new) == ("known", {"lost-write": ("HW-10",)}, ())


def test_kafkajs_stalling_in_kip320_is_hw13() -> None:
    c = _bundled(
        "kip-320/unclean-truncation",
        "kafkajs 2.2.4",
        {"follower-fetch": False, "progress": False, "truncation-undetected": True},
    )
    assert c.run_class == "known"
    assert c.known == {"follower-fetch": ("HW-13",), "progress": ("HW-13",)}
    assert c.findings == ("HW-13",)  # HW-12 applies too, and names no check


def test_java_losing_a_write_in_a_transaction_is_new() -> None:
    c = _bundled("transactions/coordinators-kill", "java 4.4.0", {"lost-write": False})
    assert (c.run_class, c.new, c.known) == ("violated", ("lost-write",), {})


def test_kafka_python_below_its_range_losing_a_write_is_new() -> None:
    c = _bundled("transactions/coordinators-kill", "kafka-python 2.2.3", {"lost-write": False})
    assert (c.run_class, c.new) == ("violated", ("lost-write",))


def test_confluent_kafka_moving_off_a_cut_follower_is_fixed_hw9() -> None:
    c = _bundled("kip-392/replica-cut-off", "confluent-kafka 2.16.1", {"follower-fetch": True, "progress": True})
    assert (c.run_class, c.fixed) == ("fixed?", ("HW-9",))


def test_confluent_kafka_stuck_on_a_cut_follower_is_known_hw9() -> None:
    c = _bundled("kip-392/replica-cut-off", "confluent-kafka 2.16.1", {"follower-fetch": False, "progress": True})
    assert (c.run_class, c.known) == ("known", {"follower-fetch": ("HW-9",)})


def test_hw9_in_coordinators_cut_pause_is_not_strict() -> None:
    c = _bundled("transactions/coordinators-cut-pause", "confluent-kafka 2.16.1", {"follower-fetch": True})
    assert (c.run_class, c.fixed) == ("valid", ())


def test_hw8_explains_a_stall_on_every_client_from_kafka_4_4_0() -> None:
    run = ("durability/leader-partition", "java 4.4.0", {"progress": False})
    assert _bundled(*run).known == {"progress": ("HW-8",)}
    assert _bundled(*run, kafka="4.3.1").run_class == "violated"


def test_hw20_explains_any_check_in_the_controller_clock_scenarios() -> None:
    c = _bundled("clock/controller-back-then-kill", "java 4.4.0", {"duplicate": False, "progress": False})
    assert c.known == {"duplicate": ("HW-20",), "progress": ("HW-20",)}


# validation ------------------------------------------------------------------------------------

RECORD = """\
[[finding]]
id = "{fid}"
component = "client: test"
what = "does a wrong thing"
seen = "test 1.0"
status = "open"
repro = ""
reason = "FINDING {fid}"
clients = {{ "kafka-python" = ">=3.0.12" }}
kafka = ">=4.4.0"
[[finding.shows]]
scenarios = ["transactions/*"]
checks = ["lost-write"]
strict = false
"""


def _write(tmp_path: Path, text: str, name: str = "findings.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _refused(*paths: Path) -> str:
    with pytest.raises(FindingsError) as exc:
        load(paths, bundled=False)
    message = str(exc.value)
    assert "\n" not in message and message.strip(), message
    return message


def test_a_clean_file_passes(tmp_path: Path) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-X1"))
    (f,) = load([path], bundled=False)
    assert f == Finding(
        id="HW-X1",
        component="client: test",
        what="does a wrong thing",
        seen="test 1.0",
        status="open",
        repro="",
        reason="FINDING HW-X1",
        clients={"kafka-python": ">=3.0.12"},
        kafka=">=4.4.0",
        shows=(Shows(("transactions/*",), ("lost-write",), False),),
    )
    validate([f], CHECKS, SCENARIOS)
    assert [g.id for g in load([path])][-1] == "HW-X1"  # after the bundled ones


def test_an_empty_file_has_no_records(tmp_path: Path) -> None:
    assert load([_write(tmp_path, "")], bundled=False) == ()


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"[[finding]\nid = 1\n", id="broken-toml"),
        pytest.param(b'id = "HW-1"\nid = "HW-2"\n', id="duplicate-key"),
        pytest.param(b"\xff\xfe\x00binary\x00", id="not-utf-8"),
    ],
)
def test_a_file_that_is_not_toml_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "findings.toml"
    path.write_bytes(content)
    message = _refused(path)
    assert str(path) in message and "not TOML" in message


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    message = _refused(path)
    assert str(path) in message


def test_finding_not_an_array_is_refused(tmp_path: Path) -> None:
    message = _refused(_write(tmp_path, 'finding = "HW-1"\n'))
    assert "[[finding]]" in message


def test_a_record_without_id_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-X1") + RECORD.format(fid="HW-X2").replace('id = "HW-X2"\n', ""))
    message = _refused(path)
    assert str(path) in message and "finding #2" in message and "no id" in message


def test_an_unknown_field_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace('kafka = ">=4.4.0"', 'kafka = ">=4.4.0"\nfixed = "5.0"'))
    message = _refused(path)
    assert str(path) in message and "HW-X1" in message and "unknown field(s) fixed" in message


def test_a_missing_required_field_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace('what = "does a wrong thing"\n', ""))
    message = _refused(path)
    assert "HW-X1" in message and "'what'" in message


@pytest.mark.parametrize(
    "old, new",
    [
        pytest.param('"kafka-python" = ">=3.0.12"', '"kafka-python" = ">=three"', id="client-range"),
        pytest.param('kafka = ">=4.4.0"', 'kafka = "4.4"', id="kafka-range"),
    ],
)
def test_a_bad_version_range_is_refused(tmp_path: Path, old: str, new: str) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace(old, new))
    message = _refused(path)
    assert str(path) in message and "HW-X1" in message and "is not a version range" in message


@pytest.mark.parametrize("replacement", [pytest.param("scenarios = []\n", id="empty"), pytest.param("", id="absent")])
def test_a_shows_entry_without_scenarios_is_refused(tmp_path: Path, replacement: str) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace('scenarios = ["transactions/*"]\n', replacement))
    message = _refused(path)
    assert str(path) in message and "HW-X1" in message
    assert "'shows.scenarios' must be a non-empty list of names" in message


def test_a_scenario_pattern_without_a_suite_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace('"transactions/*"', '"coordinators-kill"'))
    message = _refused(path)
    assert "HW-X1" in message and "'coordinators-kill' is not suite/scenario" in message


def test_a_shows_entry_with_another_field_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace("strict = false", "strict = false\nclient = 'java'"))
    assert "HW-X1" in _refused(path)
    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace("strict = false", 'strict = "yes"'))
    assert "shows.strict" in _refused(path)


def test_an_id_defined_in_two_files_is_refused(tmp_path: Path) -> None:
    first = _write(tmp_path, RECORD.format(fid="HW-X1"), "a.toml")
    second = _write(tmp_path, RECORD.format(fid="HW-X1"), "b.toml")
    message = _refused(first, second)
    assert str(second) in message and "HW-X1" in message and "defined twice" in message
    assert len(load([first], bundled=False)) == 1


def test_a_bundled_id_taken_again_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, RECORD.format(fid="HW-10"))
    with pytest.raises(FindingsError, match="HW-10 is defined twice"):
        load([path])


def test_validate_refuses_an_unknown_check() -> None:
    f = _finding(shows=(_shows("lost-writes", scenarios=("transactions/*",)),))
    with pytest.raises(FindingsError) as exc:
        validate([f], CHECKS)
    assert "\n" not in str(exc.value)
    assert "HW-T" in str(exc.value) and "unknown check 'lost-writes'" in str(exc.value)


def test_validate_refuses_a_scenario_matching_none() -> None:
    f = _finding(shows=(_shows("lost-write", scenarios=("transactions/coordinator-*",)),))
    validate([f], CHECKS)  # scenarios not judged when not given
    with pytest.raises(FindingsError) as exc:
        validate([f], CHECKS, SCENARIOS)
    assert "\n" not in str(exc.value)
    assert "HW-T" in str(exc.value) and "unknown scenario 'transactions/coordinator-*'" in str(exc.value)


def test_validate_passes_any_check_and_a_matching_pattern() -> None:
    f = _finding(shows=(_shows("*", scenarios=("clock/controller-back*",)),))
    validate([f], CHECKS, SCENARIOS)


def test_find_names_a_missing_id() -> None:
    assert find(BUNDLED, "HW-9").id == "HW-9"
    with pytest.raises(FindingsError, match="no finding HW-999"):
        find(BUNDLED, "HW-999")


# the bundled records against the real checks, scenarios and doc --------------------------------


def test_the_bundled_records_name_real_checks_and_scenarios() -> None:
    assert "transactions/coordinators-kill" not in PLANS and set(TRANSACTIONS) <= SCENARIOS
    validate(BUNDLED, CHECKS, SCENARIOS)


def test_a_pattern_of_a_project_s_own_suite_is_not_held_to_highwater_s_scenarios() -> None:
    mine = _finding("MY-1", shows=(Shows(("myapp/leader-kill",), ("poll-skip",), strict=False),))
    validate([mine], CHECKS, SCENARIOS)
    typo = _finding("MY-2", shows=(Shows(("durability/leader-kil",), ("poll-skip",), strict=False),))
    with pytest.raises(FindingsError, match="unknown scenario 'durability/leader-kil'"):
        validate([typo], CHECKS, SCENARIOS)


def test_the_bundled_ids_are_unique_and_in_order() -> None:
    ids = [f.id for f in BUNDLED]
    assert ids == [f"HW-{n}" for n in range(1, len(ids) + 1)]


def test_the_doc_s_table_is_the_records() -> None:
    table = markdown_table(BUNDLED)
    assert table in DOC.read_text(encoding="utf-8"), "docs/findings.md's table differs from core/findings.toml"


def test_the_doc_s_whole_table_is_the_records() -> None:
    """No row in the doc's table that no record has (a substring test alone would pass one at its end)."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("| id | component | what | versions seen | status | repro |")
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    assert "\n".join(lines[start:end]) == markdown_table(BUNDLED)


def test_a_changed_record_is_not_the_doc_s_table() -> None:
    doc = DOC.read_text(encoding="utf-8")
    changed = [dataclasses.replace(f, what=f.what + " (changed)") if f.id == "HW-9" else f for f in BUNDLED]
    assert markdown_table(changed) not in doc
    assert markdown_table([*BUNDLED, _finding("HW-99")]) not in doc


# finding_mark ----------------------------------------------------------------------------------


def _xfail(mark: pytest.MarkDecorator) -> dict:
    assert mark.mark.name == "xfail"
    return mark.mark.kwargs


def test_hw9_in_replica_cut_off_is_strict() -> None:
    kwargs = _xfail(finding_mark("HW-9", "kip-392/replica-cut-off"))
    assert kwargs["strict"] is True and "raises" not in kwargs
    assert kwargs["reason"] == find(BUNDLED, "HW-9").reason


def test_hw9_in_coordinators_cut_pause_is_not_strict_and_timed_only() -> None:
    kwargs = _xfail(finding_mark("HW-9", "transactions/coordinators-cut-pause"))
    assert kwargs["strict"] is False and kwargs["raises"] is TimedChecksOnly


def test_hw14_and_hw13_in_coordinators_kill_are_not_strict_nor_timed_only() -> None:
    kwargs = _xfail(finding_mark(("HW-14", "HW-13"), "transactions/coordinators-kill"))
    assert kwargs["strict"] is False and "raises" not in kwargs
    assert kwargs["reason"] == f"{find(BUNDLED, 'HW-14').reason} {find(BUNDLED, 'HW-13').reason}"


@pytest.mark.parametrize(
    "fids, scenario",
    [
        ("HW-9", "transactions/coordinators-kill"),
        ("HW-7", "groups/member-churn"),  # a finding with no shows at all
        (("HW-14", "HW-13"), "durability/leader-kill"),  # HW-13 shows there, HW-14 does not
    ],
)
def test_a_pair_the_records_do_not_have_is_refused(fids, scenario: str) -> None:
    with pytest.raises(ValueError, match="shows in no scenario"):
        finding_mark(fids, scenario)


def test_an_unknown_id_is_refused() -> None:
    with pytest.raises(FindingsError):
        finding_mark("HW-999", "kip-392/replica-cut-off")


# configured, preflight -------------------------------------------------------------------------


def test_configured_reads_the_files_of_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _write(tmp_path, RECORD.format(fid="HW-X1"), "a.toml")
    b = _write(tmp_path, RECORD.format(fid="HW-X2"), "b.toml")
    c = _write(tmp_path, RECORD.format(fid="HW-X3"), "c.toml")
    monkeypatch.setenv(ENV, os.pathsep.join([str(a), "", str(b)]))
    ids = [f.id for f in configured([c])]
    assert ids == [*(f.id for f in BUNDLED), "HW-X1", "HW-X2", "HW-X3"]


def test_configured_without_the_environment_is_the_bundled_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert configured() == BUNDLED


def test_preflight_refuses_a_malformed_findings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from highwater import preflight as pf

    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace('kafka = ">=4.4.0"', 'kafka = "four"'))
    monkeypatch.setenv(ENV, str(path))
    with pytest.raises(HighwaterError) as exc:
        pf.preflight()
    assert isinstance(exc.value, FindingsError)
    assert "\n" not in str(exc.value) and str(path) in str(exc.value) and "HW-X1" in str(exc.value)


def test_preflight_refuses_the_findings_before_anything_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from highwater import preflight as pf

    started: list[str] = []
    monkeypatch.setattr(pf, "ensure_kafka", lambda version, progress: started.append(version))
    monkeypatch.setattr(pf, "check_published", lambda version: started.append(version))
    monkeypatch.setattr(pf, "get_driver", lambda spec: started.append(str(spec)))
    monkeypatch.setenv(ENV, str(_write(tmp_path, "not toml at all")))
    with pytest.raises(HighwaterError, match="not TOML"):
        pf.preflight(["4.4.0"], ["kafka-python"])
    assert started == []


def test_preflight_refuses_an_unknown_check_in_a_findings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from highwater import preflight as pf

    path = _write(tmp_path, RECORD.format(fid="HW-X1").replace('"lost-write"', '"lost-writes"'))
    monkeypatch.setenv(ENV, str(path))
    with pytest.raises(HighwaterError, match="unknown check 'lost-writes'"):
        pf.preflight()


def test_preflight_passes_a_clean_findings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from highwater import preflight as pf

    monkeypatch.setenv(ENV, str(_write(tmp_path, RECORD.format(fid="HW-X1"))))
    pf.preflight()


def test_every_finding_a_test_names_has_a_record() -> None:
    """The repro tests of tests/integration keep xfail texts of their own (per client, with
    what was measured); each finding id they, or the suites, name must be a record's."""
    root = Path(__file__).resolve().parents[2]
    ids = {f.id for f in load()}
    named = {
        m
        for folder in ("tests/integration", "suites")
        for path in (root / folder).rglob("*.py")
        for m in re.findall(r"FINDINGS? (HW-\d+)", path.read_text(encoding="utf-8"))
    }
    assert named and named <= ids, sorted(named - ids)


def test_a_finding_a_suite_judged_beyond_explains_nothing_there_but_another_still_may() -> None:
    """``beyond``: HW-8's exact subtraction found a stall HW-8 cannot account for; HW-13 (a
    kafkajs consumer's crash) still explains it on kafkajs, nothing does on another client."""
    hw8 = _finding("HW-8", clients={}, shows=(Shows(("durability/*",), ("progress",), strict=False),))
    hw13 = _finding("HW-13", clients={"kafkajs": ""}, shows=(Shows(("durability/*",), ("progress",), strict=False),))
    kafkajs = RunIdentity("durability/leader-kill", "kafkajs", "2.2.4", "4.4.0")
    java = RunIdentity("durability/leader-kill", "java", "4.4.0", "4.4.0")
    beyond = {"HW-8": ["progress"]}
    assert classify([hw8, hw13], java, {"progress": False}).run_class == "known"
    c = classify([hw8, hw13], java, {"progress": False}, beyond)
    assert c.run_class == "violated" and c.new == ("progress",) and c.beyond == {"HW-8": ("progress",)}
    c = classify([hw8, hw13], kafkajs, {"progress": False}, beyond)
    assert c.run_class == "known" and c.known == {"progress": ("HW-13",)}
    assert beyond_of(c.to_json()) == {"HW-8": ("progress",)} and beyond_of(None) == {}
