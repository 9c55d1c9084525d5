"""The map of the program: load -> validate -> route -> run (runner or agent) -> report.

Nothing here prints; ``echo`` is the CLI's. Nothing is written before validation passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cloudai.config.hooks import hooks_of, load_hooks, with_hooks
from cloudai.config.scenario import Scenario, load_scenario
from cloudai.config.system import load_system
from cloudai.config.test import load_tests
from cloudai.errors import ConfigError
from cloudai.plan.route import CheckedEntry, check_scenario
from cloudai.systems import SYSTEMS, System
from cloudai.systems.base import NodeNeed
from cloudai.workloads import WORKLOADS
from cloudai.workloads.base import Workload


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


def load_plan(system_config: Path | None, tests_dir: Path, scenario_file: Path) -> Plan:
    check_not_swapped(tests_dir, scenario_file)
    system = load_system(system_config)
    tests = load_tests(tests_dir)
    scenario = load_scenario(scenario_file, tests)
    checked = check_scenario(scenario)
    if hooks_of(scenario):  # CloudAI's pre_test/post_test: entries ordered around the scenario's own
        scenario = with_hooks(scenario, load_hooks(scenario, tests_dir))
        checked = check_scenario(scenario)
    return Plan(system, scenario, checked)


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
