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


def verify_paths(paths: list[Path], tests_dir: Path | None, hook_dir: Path | None = None) -> tuple[int, list[Problem]]:
    """(number of files checked, every problem found); a scenario's hooks are looked up as ``run`` does."""
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
    gpus = gpus if isinstance(gpus, int) else None
    for file in files:
        problems += _check_file(file, data.get(file), tests, broken, hook_dir, gpus)
    return len(files), list(dict.fromkeys(problems))  # a test's problem may be found via a scenario too


def _check_file(
    file: Path,
    content: dict[str, Any] | None,
    tests: dict[str, tuple[WorkloadConfig, Path]],
    broken: dict[str, list[Problem]],
    hook_dir: Path | None = None,
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
                check_scenario(with_hooks(scenario, load_hooks(scenario, None, hook_dir)))
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


def install_notes(paths: list[Path]) -> list[str]:
    """One note per workload among the test files in ``paths`` whose arguments are checked against what ``cloudai
    install`` put in place (``Workload.installed_problem``): ``verify-configs`` has no system, so it cannot."""
    from cloudai.workloads import WORKLOADS
    from cloudai.workloads.base import Workload

    files, _ = _toml_files(paths)
    names: set[str] = set()
    for file in files:
        try:
            name = read_toml(file).get("test_template_name")
            if isinstance(name, str) and WORKLOADS.get(name).installed_problem is not Workload.installed_problem:
                names.add(name)
        except Exception:  # a broken file or unknown workload is reported by verify_paths
            continue
    return [
        f"note: {name}: what the installed tool ships (e.g. models, versions) is checked by `cloudai run` and "
        "`cloudai dry-run` with a system, after `cloudai install`; verify-configs checked the fields only"
        for name in sorted(names)
    ]
