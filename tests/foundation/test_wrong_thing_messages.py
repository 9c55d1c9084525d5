"""Messages that name the real mistake when a file is in the wrong place or a value makes the wrong kind of test.

Each through the CLI as typed (click's CliRunner, in this process): exit 2, the one error that says what happened,
not the wall of "unknown field" errors the wrong model would report. (SIGTERM's wording is in
``test_signals_and_security.py``, an unknown aiconfigurator model in ``workloads/aiconfigurator``.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner
from tests.conftest import CONF

from cloudai.cli import cli

TESTS = CONF / "common" / "test"
SCENARIOS = CONF / "common" / "test_scenario"


def errors(*args: str | Path) -> list[str]:
    """The ``error:`` lines of a command that must exit 2."""
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "unknown field" not in result.output, result.output
    return [line for line in result.output.splitlines() if line.startswith("error:")]


def run(tests_dir: Path, scenario: Path, tmp_path: Path) -> list[str]:
    return errors("run", "--tests-dir", tests_dir, "--test-scenario", scenario, "--output-dir", tmp_path / "out")


def test_a_test_file_as_the_scenario_is_told_it_is_a_test_file(tmp_path: Path) -> None:
    assert run(TESTS, TESTS / "sleep.toml", tmp_path) == [
        f"error: {TESTS / 'sleep.toml'}: is a test file (it has test_template_name), not a test scenario"
    ]
    assert not (tmp_path / "out").exists()


def test_a_directory_of_scenarios_as_tests_dir_is_one_error_naming_the_right_one(tmp_path: Path) -> None:
    (line,) = run(SCENARIOS, SCENARIOS / "sleep.toml", tmp_path)  # was ~30 "unknown field" errors
    assert line.startswith(f"error: {SCENARIOS}: --tests-dir: holds test scenarios, not test files (")


def test_a_scenario_inside_the_tests_dir_is_told_to_move_out(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    shutil.copytree(TESTS, tests)
    shutil.copy(SCENARIOS / "sleep.toml", tests / "my_scenario.toml")
    assert run(tests, tests / "my_scenario.toml", tmp_path) == [
        f"error: {tests / 'my_scenario.toml'}: is a test scenario (it has [[Tests]]), not a test file"
    ]


def test_a_node_count_list_on_a_workload_without_metrics_names_num_nodes(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\nnum_nodes = [1, 2]\n')
    (line,) = run(TESTS, scenario, tmp_path)  # was: conf/common/test/sleep.toml: test_template_name: 'Sleep' ...
    assert line == (
        f"error: {scenario}: Tests[0].num_nodes: num_nodes = [1, 2] makes this a search (a list or range is a "
        "knob), but 'Sleep' reports no metrics, so an agent has nothing to optimise"
    )


def test_a_missing_scenario_gets_a_did_you_mean(tmp_path: Path) -> None:
    scenario = SCENARIOS / "slep.toml"
    result = CliRunner().invoke(cli, ["run", "--tests-dir", str(TESTS), "--test-scenario", str(scenario)])
    assert result.exit_code == 2
    assert f"error: {scenario}: file not found\n  hint: did you mean {SCENARIOS / 'sleep.toml'}?\n" in result.output


def test_list_opens_the_log_file_like_every_command(tmp_path: Path) -> None:
    log = tmp_path / "no" / "such" / "dir" / "cloudai.log"
    assert errors("--log-file", log, "list") == [
        f"error: {log}: cannot open the log file: No such file or directory"
    ]  # was: the listing, exit 0, no log
