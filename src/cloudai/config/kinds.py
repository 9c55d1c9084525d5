"""Which of CloudAI's three TOML files a file is, so that one given in the wrong place is told so.

A test file has ``test_template_name`` (and no ``[[Tests]]``), a scenario ``[[Tests]]``, a system
``scheduler``: the same rule ``cloudai verify-configs`` sorts files by. A test file passed as
``--test-scenario`` would otherwise get a wall of "unknown field" errors (its every field is unknown to a
scenario), a directory of scenarios as ``--tests-dir`` one wall per file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cloudai.errors import ConfigError, Problem

Kind = Literal["test", "scenario", "system"]
_WHAT = {
    "test": "a test file (it has test_template_name)",
    "scenario": "a test scenario (it has [[Tests]])",
    "system": "a system file (it has scheduler)",
}
_GOES_TO = {
    "test": "a test file goes in the --tests-dir directory",
    "scenario": "a scenario goes to --test-scenario",
    "system": "a system file goes to --system-config",
}
_TAKES = {
    "test": "--tests-dir takes a directory of test files (test_template_name, cmd_args), e.g. conf/common/test",
    "scenario": '--test-scenario takes a scenario: [[Tests]] entries naming tests (test_name = "sleep"), '
    "e.g. conf/common/test_scenario/sleep.toml",
    "system": "--system-config takes a system file (scheduler = ...), e.g. conf/common/system/standalone_system.toml",
}


def kind_of(data: Mapping[str, Any]) -> Kind | None:
    if "Tests" in data:
        return "scenario"
    if "test_template_name" in data:
        return "test"
    if "scheduler" in data:
        return "system"
    return None


def check_kind(data: Mapping[str, Any], path: Path, expected: Kind) -> None:
    """``ConfigError`` when ``data`` is plainly another kind of file than ``expected`` (unknown: left to the
    model's own errors)."""
    kind = kind_of(data)
    if kind is not None and kind != expected:
        what = _WHAT[expected].split(" (")[0]
        raise ConfigError(f"is {_WHAT[kind]}, not {what}", file=path, hint=f"{_GOES_TO[kind]}; {_TAKES[expected]}")


def scenarios_in_tests_dir(tests_dir: Path, scenarios: Sequence[Path], files: int) -> list[Problem]:
    """Scenario files found under ``--tests-dir``: one per stray scenario; a ``ConfigError`` when that is all it
    holds (the wrong directory, e.g. ``conf/common/test_scenario``: every test a scenario names is then unknown
    for that one reason, which is all there is to say)."""
    if scenarios and len(scenarios) == files:
        raise ConfigError(
            f"holds test scenarios, not test files ({files} files with [[Tests]], e.g. {scenarios[0].name})",
            file=tests_dir,
            field="--tests-dir",
            hint=f"{_TAKES['test']}; pass one of these scenarios to --test-scenario",
        )
    hint = f"move it out of {tests_dir} ({_GOES_TO['scenario']})"
    return [Problem(str(path), None, f"is {_WHAT['scenario']}, not a test file", hint) for path in scenarios]
