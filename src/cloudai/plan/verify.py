"""``verify-configs``: validate any mix of system, test and scenario files; collect every problem.

A file's kind is told by its content: ``scheduler`` -> system, ``Tests`` -> scenario,
``test_template_name`` -> test. Scenarios are checked against the tests found among the
given paths plus ``--tests-dir``; a test file is also checked on its own (``verify_tests``), so a
directory of tests alone is checked as deeply as a run would check it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cloudai.config.hooks import hooks_of, load_hooks, with_hooks
from cloudai.config.scenario import load_scenario
from cloudai.config.system import system_from_dict
from cloudai.config.test import WorkloadConfig, load_test
from cloudai.config.tomlfile import read_toml
from cloudai.errors import ConfigError, Problem
from cloudai.plan.verify_tests import check_test


def _toml_files(paths: list[Path]) -> tuple[list[Path], list[Problem]]:
    files: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_dir():
            files += sorted(path.rglob("*.toml"))
        elif path.exists():
            files.append(path)
        else:
            problems.append(Problem(str(path), None, "file not found"))
    return files, problems


def verify_paths(paths: list[Path], tests_dir: Path | None) -> tuple[int, list[Problem]]:
    """(number of files checked, every problem found)."""
    files, problems = _toml_files(paths)
    extra_tests, more = _toml_files([tests_dir]) if tests_dir else ([], [])
    problems += more
    data: dict[Path, dict[str, Any]] = {}
    for file in dict.fromkeys(files + extra_tests):
        try:
            data[file] = read_toml(file)
        except ConfigError as exc:
            if file in files:
                problems += exc.problems
    tests: dict[str, tuple[WorkloadConfig, Path]] = {}
    broken: dict[str, list[Problem]] = {}  # a scenario naming one is told its cause, not "unknown test"
    for file, content in data.items():
        if "test_template_name" in content and "Tests" not in content:
            try:
                test = load_test(file)
                tests.setdefault(test.name, (test, file))
                if file in files:
                    problems += check_test(test, file)
            except ConfigError as exc:
                name = content.get("name")
                broken.setdefault(name if isinstance(name, str) else file.stem, []).extend(exc.problems)
                if file in files:
                    problems += exc.problems
    systems = [c for f, c in data.items() if f in files and "scheduler" in c]
    gpus = systems[0].get("gpus_per_node") if len(systems) == 1 else None  # a rule's GPU count, when one is given
    for file in files:
        problems += _check_file(file, data.get(file), tests, broken, gpus if isinstance(gpus, int) else None)
    return len(files), list(dict.fromkeys(problems))  # a test's problem may be found via a scenario too


def _check_file(
    file: Path,
    content: dict[str, Any] | None,
    tests: dict[str, tuple[WorkloadConfig, Path]],
    broken: dict[str, list[Problem]],
    gpus_per_node: int | None = None,
) -> list[Problem]:
    if content is None or ("test_template_name" in content and "Tests" not in content):
        return []  # unreadable (reported) or a test (checked above)
    try:
        if "Tests" in content:
            from cloudai.plan.route import check_scenario
            from cloudai.plan.valid_space import check_valid_spaces

            scenario = load_scenario(file, tests, broken)
            if problems := check_valid_spaces(check_scenario(scenario), gpus_per_node):
                return problems
            if hooks_of(scenario):  # a pre_test/post_test names a hook scenario that exists, loads and is plain
                check_scenario(with_hooks(scenario, load_hooks(scenario, None)))
        elif "scheduler" in content:
            system_from_dict(content, file)
        else:
            return [
                Problem(
                    str(file),
                    None,
                    "not a system, test or scenario file",
                    "a system has 'scheduler', a test 'test_template_name', a scenario '[[Tests]]'",
                )
            ]
    except ConfigError as exc:
        return exc.problems
    return []
