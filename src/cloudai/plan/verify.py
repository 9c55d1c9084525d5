"""``verify-configs``: validate any mix of system, test and scenario files; collect every problem.

A file's kind is told by its content: ``scheduler`` -> system, ``Tests`` -> scenario,
``test_template_name`` -> test. Scenarios are checked against the tests found among the
given paths plus ``--tests-dir``; a test file is also checked on its own (``verify_tests``), so a
directory of tests alone is checked as deeply as a run would check it.

A test name several files use (CloudAI's ``conf/`` has a ``sglang`` test for AIDynamo and one for SGLang, and
Megatron-Bridge's per-GPU ``test/<gpu>/`` directories) is resolved per scenario: the file nearest to it (the
longest common directory, i.e. its own tree's ``test`` dir), each of them when several are as near (every GPU's
variant; a problem they share is reported once). The name is reported once: a note when the files are in
different directories (a ``--tests-dir`` holding only one of them runs), a problem when in one (no run can).
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


Tests = dict[str, tuple[WorkloadConfig, Path]]


def verify_paths(
    paths: list[Path], tests_dir: Path | None, hook_dir: Path | None = None
) -> tuple[int, list[Problem], list[str]]:
    """(number of files checked, every problem found, notes); a scenario's hooks are looked up as ``run`` does."""
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
    candidates: dict[str, list[tuple[WorkloadConfig, Path]]] = {}
    broken: dict[str, list[Problem]] = {}  # a scenario naming one is told its cause, not "unknown test"
    for file, content in data.items():
        if "test_template_name" in content and "Tests" not in content:
            try:
                test = load_test(file)
                candidates.setdefault(test.name, []).append((test, file))
                if file in files:
                    problems += check_test(test, file)
            except ConfigError as exc:
                name = content.get("name")
                broken.setdefault(name if isinstance(name, str) else file.stem, []).extend(exc.problems)
                if file in files:
                    problems += exc.problems
    notes, same_dir = _duplicates(candidates)
    problems += same_dir
    systems = [c for f, c in data.items() if f in files and "scheduler" in c]
    gpus = systems[0].get("gpus_per_node") if len(systems) == 1 else None  # a rule's GPU count, when one is given
    gpus = gpus if isinstance(gpus, int) else None
    for file in files:
        problems += _check_file(file, data.get(file), candidates, broken, hook_dir, gpus)
    return len(files), list(dict.fromkeys(problems)), notes  # a test's problem may be found via a scenario too


def _duplicates(candidates: dict[str, list[tuple[WorkloadConfig, Path]]]) -> tuple[list[str], list[Problem]]:
    """Each test name more than one file uses, once: a note when the files are in different directories, a
    problem (as ``run`` reports it) when two are in one directory."""
    notes: list[str] = []
    problems: list[Problem] = []
    for name, found in candidates.items():
        paths = [path for _, path in found]
        if len(paths) < 2:
            continue
        seen: dict[Path, Path] = {}
        clash = next(((p, seen[p.parent]) for p in paths if seen.setdefault(p.parent, p) is not p), None)
        if clash:
            problems.append(Problem(str(clash[0]), "name", f"test name '{name}' is also used by {clash[1]}",
                                    "give each test a unique name"))  # fmt: skip
            continue
        notes.append(
            f"note: test name '{name}' is used by {len(paths)} files ({', '.join(map(str, paths))}): each scenario "
            "is checked against the one in its own tree (the nearest); a --tests-dir holding two of them is refused"
        )
    return notes, problems


def _nearest(candidates: dict[str, list[tuple[WorkloadConfig, Path]]], scenario: Path) -> list[Tests]:
    """The tests a scenario is checked against: for each name the nearest file(s); one mapping per variant when
    several are as near (Megatron-Bridge's per-GPU tests)."""
    where = scenario.absolute().parts

    def shared(path: Path) -> int:
        return next(
            (i for i, (a, b) in enumerate(zip(where, path.absolute().parts, strict=False)) if a != b), len(where)
        )

    nearest: dict[str, list[tuple[WorkloadConfig, Path]]] = {}
    for name, found in candidates.items():
        best = max(shared(path) for _, path in found)
        nearest[name] = [item for item in found if shared(item[1]) == best]
    count = max((len(found) for found in nearest.values()), default=1)
    return [{name: found[min(i, len(found) - 1)] for name, found in nearest.items()} for i in range(count)]


def _check_file(
    file: Path,
    content: dict[str, Any] | None,
    candidates: dict[str, list[tuple[WorkloadConfig, Path]]],
    broken: dict[str, list[Problem]],
    hook_dir: Path | None = None,
    gpus_per_node: int | None = None,
) -> list[Problem]:
    if content is None or ("test_template_name" in content and "Tests" not in content):
        return []  # unreadable (reported) or a test (checked above)
    if "Tests" in content:
        problems: list[Problem] = []
        for tests in _nearest(candidates, file):  # a problem every variant has is reported for the first one
            known = {(p.field, p.message, p.hint) for p in problems}
            problems += [p for p in _check_scenario(file, tests, broken, hook_dir, gpus_per_node)
                         if (p.field, p.message, p.hint) not in known]  # fmt: skip
        return problems
    try:
        if "scheduler" in content:
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


def _check_scenario(
    file: Path, tests: Tests, broken: dict[str, list[Problem]], hook_dir: Path | None, gpus_per_node: int | None
) -> list[Problem]:
    from cloudai.plan.route import check_scenario
    from cloudai.plan.valid_space import check_valid_spaces

    try:
        scenario = load_scenario(file, tests, broken)
        if problems := check_valid_spaces(check_scenario(scenario), gpus_per_node):
            return problems
        if hooks_of(scenario):  # a pre_test/post_test names a hook scenario that exists, loads and is plain
            check_scenario(with_hooks(scenario, load_hooks(scenario, None, hook_dir)))
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
