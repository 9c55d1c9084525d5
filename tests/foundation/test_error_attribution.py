"""Errors point at the file that is wrong: a test's own value at the test file, an entry's override at the scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudai.config.scenario import load_scenario
from cloudai.config.test import load_tests
from cloudai.errors import ConfigError
from cloudai.plan.route import check_scenario

TEST = 'name = "syn"\ntest_template_name = "Synthetic"\n[cmd_args]\nduration_s = 0\nalgo = ["ring", "mesh"]\n'


def _problems(tmp_path: Path, entry_tail: str = "") -> list:
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "syn.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text(f'name = "s"\n[[Tests]]\nid = "first"\ntest_name = "syn"\n{entry_tail}')
    with pytest.raises(ConfigError) as caught:
        check_scenario(load_scenario(tmp_path / "s.toml", load_tests(tmp_path / "tests")))
    return caught.value.problems


def test_a_bad_value_from_the_test_file_names_the_test_file_and_the_entry(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path)
    assert problem.file == str(tmp_path / "tests" / "syn.toml")
    assert problem.field == "cmd_args.algo"
    assert f"used by Tests[0] (id 'first') of {tmp_path / 's.toml'}" in problem.message


def test_a_bad_override_in_the_scenario_names_the_scenario(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, '[Tests.cmd_args]\nalgo = ["tree", "mesh"]\n')
    assert problem.file == str(tmp_path / "s.toml") and problem.field == "Tests[0].cmd_args.algo"
