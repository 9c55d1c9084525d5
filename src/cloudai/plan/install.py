"""``cloudai install`` / ``uninstall``: what a scenario's (or a tests dir's) workloads need, put in place or removed.

Each workload says what it needs for given ``cmd_args`` (``Workload.installables``); a swept knob may change that
(a ``version`` list), so every candidate of every list knob is asked, one at a time, beside the fixed values. The
installables land under the system's ``install_path`` (see ``cloudai.installables`` for the install contract).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cloudai.config.scenario import excluded_names
from cloudai.config.test import GitRepoSpec, load_tests
from cloudai.errors import Problem
from cloudai.installables import GitRepo, Installable
from cloudai.space import Categorical, Space, entry_knobs, parse_space, split_knobs
from cloudai.workloads import WORKLOADS

Echo = Callable[[str], None]


@dataclass
class Needs:
    """What to install where, and for which tests (``by``: the tests that need each installable)."""

    install_path: Path
    by: dict[Installable, list[str]] = field(default_factory=dict)
    workloads: set[str] = field(default_factory=set)


def needs_of_plan(plan: Any) -> Needs:
    needs = Needs(_install_path(plan.system_config))
    for checked in plan.checked.values():
        if not checked.live_rl:
            _add(needs, checked.entry.workload, checked.space, checked.entry.id)
        _add_repos(needs, checked.entry.git_repos, checked.entry.id)
    return needs


def needs_of_tests(system_config: BaseModel, tests_dir: Path) -> Needs:
    needs = Needs(_install_path(system_config))
    for name, (test, path) in load_tests(tests_dir).items():
        if test.cmd_args.get("live_rl_mode") is True:
            continue
        whole = excluded_names(test.dse_excluded_args)
        knobs = entry_knobs(test.cmd_args, test.extra_env_vars, 1, whole)
        branches = WORKLOADS.get(test.test_template_name).branches
        space = parse_space(knobs, file=path, whole=whole, branches=branches)
        _add(needs, test.test_template_name, space, name)
        _add_repos(needs, test.git_repos, name)
    return needs


def install_problems(plan: Any, *, required: bool) -> list[Problem]:
    """What the plan's tests cannot run with, as installed: an installable missing (when ``required``: ``run``
    needs it, ``dry-run`` does not), or ``args`` the installed tool refuses (``Workload.installed_problem``)."""
    install_path = _install_path(plan.system_config)
    problems: dict[str, Problem] = {}
    for checked in plan.checked.values():
        if checked.live_rl:
            continue
        entry, workload = checked.entry, WORKLOADS.get(checked.entry.workload)()
        for args in _candidate_args(checked.space):
            missing = [item for item in workload.installables(args) if not item.installed(install_path)]
            if missing and required:
                field = f"{entry.field_prefix}.test_template_name"
                problems.setdefault(field, _not_installed(entry, field, missing[0], install_path))
            found = None if missing else workload.installed_problem(args, install_path)
            if found:
                field = f"{entry.field_prefix}.cmd_args.{found[0]}"
                problem = Problem(str(entry.scenario_file), field, found[1], _FIX)
                problems.setdefault(field, entry.attribute([problem])[0])  # a test file's value: that file's
    return list(problems.values())


_FIX = "use one of those, or `cloudai install` a release that has it"


def _not_installed(entry: Any, field: str, item: Installable, install_path: Path) -> Problem:
    message = f"{entry.workload} needs {item.describe()}, not installed at {item.path(install_path)}"
    problem = Problem(str(entry.scenario_file), field, message, "run `cloudai install` with the same options first")
    return entry.attribute([problem])[0]


def install_all(needs: Needs, *, dry: bool, echo: Echo) -> None:
    if not needs.by:
        echo(_nothing(needs, "install"))
        return
    for item, who in needs.by.items():
        where = f"{item.describe()} at {item.path(needs.install_path)} (for {', '.join(who)})"
        if item.installed(needs.install_path):
            echo(f"Already installed: {where}")
        elif dry:
            echo(f"Would install: {where}")
        else:
            echo(f"Installing: {where} ...")
            start = time.monotonic()
            item.install(needs.install_path)
            echo(f"Installed in {time.monotonic() - start:.1f} s: {item.path(needs.install_path)}")


def uninstall_all(needs: Needs, *, echo: Echo) -> None:
    if not needs.by:
        echo(_nothing(needs, "uninstall"))
        return
    for item in needs.by:
        removed = item.uninstall(needs.install_path)
        echo(f"{'Removed' if removed else 'Not installed'}: {item.describe()} at {item.path(needs.install_path)}")


def _add(needs: Needs, workload_name: str, space: Space, who: str) -> None:
    workload = WORKLOADS.get(workload_name)()
    needs.workloads.add(workload_name)
    for args in _candidate_args(space):
        for item in workload.installables(args):
            users = needs.by.setdefault(item, [])
            if who not in users:
                users.append(who)


def _add_repos(needs: Needs, repos: Iterable[GitRepoSpec], who: str) -> None:
    for repo in repos:
        item = GitRepo(repo.dir_name, repo.url, repo.commit, repo.init_submodules)
        users = needs.by.setdefault(item, [])
        if who not in users:
            users.append(who)


def _candidate_args(space: Space) -> Iterator[dict[str, Any]]:
    """The fixed cmd_args with each knob's first candidate (a range's low end), then each other list candidate."""
    first = {dim.name: dim.choices[0] if isinstance(dim, Categorical) else dim.clip(dim.low) for dim in space.dims}
    yield split_knobs(space.full(first))[0]
    for dim in space.dims:
        if isinstance(dim, Categorical):
            for value in dim.choices[1:]:
                yield split_knobs(space.full({**first, dim.name: value}))[0]


def _nothing(needs: Needs, verb: str) -> str:
    names = ", ".join(sorted(needs.workloads)) or "none"
    return f"Nothing to {verb}: these workloads ({names}) need nothing installed by cloudai"


def _install_path(system_config: BaseModel) -> Path:
    return Path(getattr(system_config, "install_path", "./install")).absolute()
