"""CloudAI's hook scenarios (``pre_test = "nccl_test"``, ``post_test = ...``) as ordinary scenario entries.

Where CloudAI finds them: ``conf/hook/*.toml`` are hook scenarios (looked up by their ``name``),
``conf/hook/test/*.toml`` the tests they use. ``conf/hook`` is taken relative to the working
directory, as CloudAI does, and also as a ``hook`` dir near the scenario's and the tests' dirs
(see ``hook_dirs``), so ``--test-scenario conf/common/test_scenario/x.toml`` finds ``conf/hook``
from any directory.

How they run here: each hook entry becomes an entry of the scenario, id ``pre_test.<id>`` or
``post_test.<id>`` (``RunEntry.hook`` says which), run as a plain job on any system (one job per
hook entry, on Slurm its own sbatch job). Every test of the scenario starts after the pre-test
entries completed (``start_post_comp``); the post-test entries start after every test completed.
CloudAI instead runs the hooks inside each test's sbatch script and skips the test when a
pre-test failed. Here plain tests run whatever the hooks' status (each hook's status is in its
own ``job.json``); an agent-driven (DSE) test is not started when a pre-test job failed
(``cloudai.run.hooks``): the sweep is the test, the pre-test guards it once.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cloudai.config.scenario import Dependency, RunEntry, Scenario, load_scenario
from cloudai.config.test import load_tests
from cloudai.config.tomlfile import read_toml
from cloudai.errors import ConfigError, Problem, did_you_mean

HOOK_FIELDS = ("pre_test", "post_test")


def hook_dirs(scenario_file: Path, tests_dir: Path | None, hook_dir: Path | None = None) -> list[Path]:
    """``hook`` dirs to search, in order: ``--hook-dir`` when given (CloudAI's flag: then only it), else the
    cwd's ``conf/hook``, then a ``hook`` dir beside (or one level above) the scenario's dir and the tests dir:
    ``conf/common/test_scenario/x.toml`` and ``conf/common/test`` find ``conf/hook`` (CloudAI's tree),
    ``conf/test_scenario/x.toml`` and ``conf/test`` find ``conf/hook`` too."""
    if hook_dir is not None:
        if not hook_dir.is_dir():
            raise ConfigError("hook directory not found", file=hook_dir, field="--hook-dir",
                              hint="pass the directory of hook scenarios (CloudAI's conf/hook)")  # fmt: skip
        return [hook_dir]
    candidates = [Path("conf/hook")]
    for directory in (scenario_file.parent, tests_dir):
        if directory is not None:
            candidates += [parent / "hook" for parent in directory.parents[:2]]
    unique = {c.resolve(): c for c in candidates if c.is_dir()}
    return list(unique.values())


def hooks_of(scenario: Scenario) -> dict[str, str]:
    """``{"pre_test": "nccl_test", ...}``: the hook fields the scenario sets."""
    return {field: name for field in HOOK_FIELDS if (name := getattr(scenario, field)) is not None}


def load_hooks(scenario: Scenario, tests_dir: Path | None, hook_dir: Path | None = None) -> dict[str, Scenario]:
    """Every hook scenario ``scenario`` names, loaded and merged; unknown ones, a hook that names a hook itself
    (itself, or another hook that names it back: hooks do not nest) and a hook entry whose id would collide with
    an entry of the scenario are a ``ConfigError``."""
    dirs = hook_dirs(scenario.file, tests_dir, hook_dir)
    hooks = {field: load_hook(name, field, scenario.file, dirs) for field, name in hooks_of(scenario).items()}
    problems = [
        Problem(
            str(hook.file),
            nested,
            f"hook scenario '{hook.name}' names a hook itself ({nested} = '{name}')",
            "hooks do not nest: remove it from the hook scenario",
        )
        for hook in hooks.values()
        for nested, name in hooks_of(hook).items()
    ]
    ids = {e.id for e in scenario.entries}
    problems += [
        Problem(
            str(scenario.file),
            "Tests",
            f"entry id '{field}.{e.id}' is also the id of hook {field}'s entry "
            f"'{e.id}' (hook entries are named {field}.<id>)",
            "rename the scenario's entry",
        )
        for field, hook in hooks.items()
        for e in hook.entries
        if f"{field}.{e.id}" in ids
    ]
    if problems:
        raise ConfigError(problems=problems)
    return hooks


def load_hook(name: str, field: str, scenario_file: Path, dirs: list[Path]) -> Scenario:
    """The hook scenario called ``name`` (its ``name`` field), with its tests from ``<dir>/test``."""
    known: dict[str, Path] = {}
    for directory in dirs:
        for path in sorted(directory.glob("*.toml")):
            hook_name = read_toml(path).get("name")
            if isinstance(hook_name, str):
                known.setdefault(hook_name, path)
        if name in known:
            test_dir = directory / "test"
            tests = load_tests(test_dir) if test_dir.is_dir() else {}
            return load_scenario(known[name], tests)
    searched = ", ".join(str(d) for d in dirs) or "conf/hook (not found from here)"
    hint = did_you_mean(name, known) if known else "hook scenarios are conf/hook/*.toml, their tests conf/hook/test/"
    raise ConfigError(f"unknown hook scenario '{name}' (searched {searched})", file=scenario_file, field=field,
                      hint=hint)  # fmt: skip


def with_hooks(scenario: Scenario, hooks: dict[str, Scenario]) -> Scenario:
    """``scenario`` with the hook entries added and ordered around its own entries (see the module doc)."""
    pre = _renamed(hooks["pre_test"], "pre_test") if "pre_test" in hooks else []
    post = _renamed(hooks["post_test"], "post_test") if "post_test" in hooks else []
    after_pre = tuple(Dependency(type="start_post_comp", id=e.id) for e in pre)
    main = [dataclasses.replace(e, dependencies=(*e.dependencies, *after_pre)) for e in scenario.entries]
    after_main = tuple(Dependency(type="start_post_comp", id=e.id) for e in main)
    post = [dataclasses.replace(e, dependencies=(*e.dependencies, *after_main)) for e in post]
    return dataclasses.replace(scenario, entries=(*pre, *main, *post))


def hook_entries(scenario: Scenario, field: str) -> tuple[RunEntry, ...]:
    """The entries ``with_hooks`` added for ``field`` (``pre_test`` or ``post_test``), in order."""
    return tuple(e for e in scenario.entries if e.hook == field)


def _renamed(hook: Scenario, field: str) -> list[RunEntry]:
    prefix = f"{field}."
    return [
        dataclasses.replace(
            e,
            id=prefix + e.id,
            hook=field,
            dependencies=tuple(Dependency(type=d.type, id=prefix + d.id) for d in e.dependencies),
        )
        for e in hook.entries
    ]
