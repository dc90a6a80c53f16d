"""The exit status of every ``highwater`` command, one meaning per code (docs/cli.md).

=====  ===========  ==========================================================================
code   name         meaning
=====  ===========  ==========================================================================
0      OK           valid: every check held, every test passed, the command did its work
1      VIOLATIONS   a violation: a check said no, or a suite's test failed
2      USAGE        the command line did not parse (argparse's own usage error)
3      UNKNOWN      something could not be judged and nothing said no: unknown is never valid
4      HARNESS      highwater refused its input (an unknown client, a release that does not
                    exist, an unreadable history, a run that cannot be replayed) or failed
                    itself (setup, a cluster that did not start, a report that was not built,
                    a bug): no verdict
130    INTERRUPTED  interrupted (Ctrl-C, or a child pytest that was)
=====  ===========  ==========================================================================

``run`` and ``campaign`` run the suites in a child pytest; its exit code is translated
(:func:`of_pytest`): a failed test is 1 (4 when every failed test failed for the harness: the
child runs with ``--highwater-exit-codes``, ``highwater.pytest_plugin``), an interrupted
session 130, and pytest's internal
error (3), usage error (4: the plugin refused its input, a path that does not exist) and "no
test collected" (5) are all 4, since nothing was judged. The codes pytest itself returns when
the plugin is used directly (``pytest suites/...``) are pytest's own.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    VIOLATIONS = 1
    USAGE = 2
    UNKNOWN = 3
    HARNESS = 4
    INTERRUPTED = 130


#: what each code means, one line each (``highwater --help``'s epilog and docs/cli.md)
MEANING: dict[Exit, str] = {
    Exit.OK: "valid: every check held, every test passed, the command did its work",
    Exit.VIOLATIONS: "a violation: a check said no, or a suite's test failed",
    Exit.USAGE: "the command line did not parse (argparse's usage error)",
    Exit.UNKNOWN: "something could not be judged and nothing said no (unknown is never valid)",
    Exit.HARNESS: "highwater refused its input or failed itself (setup, cluster, report, a bug): no verdict",
    Exit.INTERRUPTED: "interrupted",
}

# pytest.ExitCode's values, spelled out so that the CLI need not import pytest
_PYTEST = {
    0: Exit.OK,  # OK
    1: Exit.VIOLATIONS,  # TESTS_FAILED
    2: Exit.INTERRUPTED,  # INTERRUPTED
    3: Exit.HARNESS,  # INTERNAL_ERROR
    4: Exit.HARNESS,  # USAGE_ERROR: the plugin refused its input, or a path names nothing
    5: Exit.HARNESS,  # NO_TESTS_COLLECTED: nothing was judged
}

# which of two outcomes a command that has both reports (``worst``): an interruption over
# everything, a harness error over any verdict, a violation over unknown, unknown over valid
_SEVERITY = {
    Exit.OK: 0,
    Exit.UNKNOWN: 1,
    Exit.VIOLATIONS: 2,
    Exit.USAGE: 3,
    Exit.HARNESS: 3,
    Exit.INTERRUPTED: 4,
}


def of_verdict(valid: object) -> Exit:
    """A verdict (``True``, ``False`` or anything else: unknown) as an exit status."""
    if valid is True:
        return Exit.OK
    if valid is False:
        return Exit.VIOLATIONS
    return Exit.UNKNOWN


def of_pytest(code: int) -> Exit:
    """A child pytest's exit code as ours; a code pytest does not define is a harness error."""
    return _PYTEST.get(int(code), Exit.HARNESS)


def worst(*codes: int) -> Exit:
    """The one exit status of a command with several outcomes (suites, then their report)."""
    return max((of_child(c) for c in codes), key=lambda e: _SEVERITY[e], default=Exit.OK)


def of_child(code: int) -> Exit:
    """A child ``highwater`` command's exit code as ours; a code of no one's is a harness error."""
    try:
        return Exit(code)
    except ValueError:  # a code of no one's (a child killed by a signal): no verdict
        return Exit.HARNESS


def table() -> str:
    """The codes and their meanings, one line each."""
    return "\n".join(f"  {int(e):>3}  {MEANING[e]}" for e in Exit)
