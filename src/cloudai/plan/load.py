"""The map of the program: load -> validate -> route -> run (runner or agent) -> report.

Nothing here prints; ``echo`` is the CLI's. Nothing is written before validation passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from cloudai.config.hooks import hooks_of, load_hooks, with_hooks
from cloudai.config.scenario import Scenario, scan_scenario
from cloudai.config.system import load_system
from cloudai.config.test import TestFiles, scan_tests
from cloudai.errors import ConfigError, Problem
from cloudai.plan.route import CheckedEntry, check_scenario, scan_checks
from cloudai.plan.valid_space import check_valid_spaces
from cloudai.systems import SYSTEMS, System
from cloudai.systems.base import NodeNeed
from cloudai.workloads import WORKLOADS
from cloudai.workloads.base import Workload

T = TypeVar("T")


@dataclass(frozen=True)
class Plan:
    """A validated scenario, ready to run: nothing has been written yet."""

    system_config: Any
    scenario: Scenario
    checked: dict[str, CheckedEntry]

    @property
    def agent_driven(self) -> bool:
        return any(c.agent_driven for c in self.checked.values())

    def workloads(self) -> dict[str, Workload]:
        return {c.entry.workload: WORKLOADS.get(c.entry.workload)() for c in self.checked.values() if not c.live_rl}


def load_plan(
    system_config: Path | None, tests_dir: Path | None, scenario_file: Path, hook_dir: Path | None = None
) -> Plan:
    """Every file loaded and checked. One ``ConfigError`` lists every problem of the system, the tests and the
    scenario at once, each once, at its cause (an entry naming a test file that failed to load is not also an
    "unknown test"). ``tests_dir`` may be None when the scenario defines its tests inline."""
    if tests_dir is not None:
        check_not_swapped(tests_dir, scenario_file)
    problems: list[Problem] = []
    system = _collect(problems, load_system, system_config)
    found = scan_tests(tests_dir) if tests_dir is not None else TestFiles()
    problems += found.problems
    scanned = _collect(problems, scan_scenario, scenario_file, found.tests, found.broken)
    scenario, checked = None, {}
    if scanned is not None:
        scenario, more = scanned
        checked, more_checks = scan_checks(scenario)
        problems += more + more_checks
        if hooks_of(scenario) and not problems:  # CloudAI's pre_test/post_test: entries around the scenario's own
            scenario = with_hooks(scenario, load_hooks(scenario, tests_dir, hook_dir))
            checked = check_scenario(scenario)
        if not problems:  # a space without a valid point runs nothing: refused now (its count needs the system)
            problems += check_valid_spaces(checked, getattr(system, "gpus_per_node", None))
    if problems or scenario is None:
        raise ConfigError(problems=list(dict.fromkeys(problems)))
    return Plan(system, scenario, checked)


def _collect(problems: list[Problem], load: Callable[..., T], *args: Any) -> T | None:
    """``load(*args)``, its ``ConfigError`` added to ``problems`` (None then) instead of stopping."""
    try:
        return load(*args)
    except ConfigError as exc:
        problems += exc.problems
        return None


def node_needs(plan: Plan) -> list[NodeNeed]:
    """What each entry asks of the cluster, for ``System.preflight``: its largest ``num_nodes`` and placement."""
    needs: list[NodeNeed] = []
    for checked in plan.checked.values():
        entry = checked.entry
        counts = entry.num_nodes if isinstance(entry.num_nodes, list) else [entry.num_nodes]
        where = f"{entry.scenario_file}: {entry.field_prefix} ({entry.id})"
        needs.append(NodeNeed(where, max(counts), entry.nodes, entry.exclude_nodes))
    return needs


def check_not_swapped(tests_dir: Path, scenario_file: Path) -> None:
    """A file given as --tests-dir and a directory as --test-scenario: the two flags were swapped."""
    if tests_dir.is_file() and scenario_file.is_dir():
        raise ConfigError(
            f"is a file, and --test-scenario {scenario_file} is a directory: did you swap them?",
            file=tests_dir,
            field="--tests-dir",
            hint=f"--tests-dir {scenario_file} --test-scenario {tests_dir}",
        )


def build_system(config: BaseModel) -> System:
    return SYSTEMS.get(str(getattr(config, "scheduler", "")))(config)  # type: ignore[call-arg]
