"""``verify-configs DIR_OF_TESTS``: a test file checked as deeply as a run would check it, on its own.

A test is checked as the one entry of a scenario that names it, with the test file standing in
for the scenario: the workload (``test_template_name``), every ``cmd_args`` value against the
workload's model, and the agent fields (agent, reward, ``agent_metrics`` against the workload's
metric names). Problems name the test file and its own fields (``cmd_args.x``, not ``Tests[0]...``).
"""

from __future__ import annotations

from pathlib import Path

from cloudai.config.scenario import Scenario, entry_for_test
from cloudai.config.test import WorkloadConfig
from cloudai.errors import ConfigError, Problem

_PREFIX = "Tests[0]."


def check_test(test: WorkloadConfig, path: Path) -> list[Problem]:
    """Every problem a run of ``test`` (alone, with its own values) would stop on."""
    from cloudai.plan.route import check_scenario

    try:
        entry = entry_for_test(test, path)
        checked = check_scenario(Scenario(test.name, path, (entry,)))[entry.id]
        problems = [] if checked.agent_driven else _plain_metric_problems(test, path, entry.agent.explicit)
    except ConfigError as exc:
        problems = exc.problems
    return [_as_test_problem(p, path) for p in problems]


def _plain_metric_problems(test: WorkloadConfig, path: Path, explicit: bool) -> list[Problem]:
    """``agent_metrics`` of a test that is not agent-driven here: still names the workload's metrics.

    (For an agent-driven test ``check_scenario`` checked them already; a plain test may become one
    when a scenario sweeps it, so a typo is worth reporting now.)
    """
    if not explicit or test.agent_metrics is None:
        return []
    from cloudai.plan.agent_checks import check_metric_names

    return check_metric_names(test.test_template_name, test.agent_metrics, str(path), "agent_metrics")


def _as_test_problem(problem: Problem, path: Path) -> Problem:
    field = problem.field
    if field is not None and field.startswith(_PREFIX):
        field = field.removeprefix(_PREFIX)
    elif field == "Tests[0]":
        field = None
    return Problem(problem.file or str(path), field, problem.message, problem.hint)
