"""Load-time checks and notes of a space shaped by its workload's rule (``cloudai.workloads.validity``).

A scenario whose agent-driven test has no valid point would run nothing but refusals: ``check_valid_spaces``
refuses it before anything is written (exit 2; ``verify-configs``, ``dry-run`` and ``run`` alike), naming the rule
through an example point and why it breaks it. ``valid_note`` is the "192 points, 61 valid" line that ``run`` and
``dry-run`` print. Both count over the test's whole space (env_params included), on the system's GPUs per node.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cloudai.errors import Problem
from cloudai.workloads import WORKLOADS
from cloudai.workloads.base import constraint_of
from cloudai.workloads.validity import ValidPoints

if TYPE_CHECKING:
    from cloudai.plan.route import CheckedEntry


def entry_rule(checked: CheckedEntry, gpus_per_node: int | None) -> ValidPoints | None:
    """The rule over the test's whole space; None for live RL, a workload without a rule, or no grid to count."""
    if checked.live_rl or not checked.agent_driven or not checked.space.has_grid:
        return None
    nodes_set = "num_nodes" in checked.entry.scenario_fields
    rule = ValidPoints(checked.space, WORKLOADS.get(checked.entry.workload)(), gpus_per_node, nodes_set=nodes_set)
    return rule if rule.has_rule else None


def valid_note(checked: CheckedEntry, rule: ValidPoints) -> str:
    """``"192 points, 61 valid (...)"``: what the run and the dry-run say of a space shaped by a rule."""
    return f"{rule.summary()} (points that break {checked.entry.workload}'s rule are never run)"


def check_valid_spaces(checked: Mapping[str, CheckedEntry], gpus_per_node: int | None) -> list[Problem]:
    """One problem per agent-driven test whose space has no valid point."""
    problems = []
    for item in checked.values():
        if not item.live_rl and not item.agent_driven:
            problems += _plain_problem(item, gpus_per_node)  # only a workload whose rule is hard_rule
            continue
        rule = entry_rule(item, gpus_per_node)
        if rule is None or rule.count() != 0:
            continue
        entry = item.entry
        example = rule.example()
        why = f"; e.g. {json.dumps(example[0], default=str)}: {example[1]}" if example else ""
        gpus = "not given by the system" if gpus_per_node is None else str(gpus_per_node)
        problems.append(
            Problem(
                str(entry.scenario_file),
                f"{entry.field_prefix}.cmd_args",
                f"no point of the space of '{entry.id}' satisfies {entry.workload}'s rule "
                f"({rule.space.grid_size} points, 0 valid){why}",
                f"widen the lists so some combination fits (gpus_per_node: {gpus}; num_nodes counts too)",
            )
        )
    return problems


def _plain_problem(checked: CheckedEntry, gpus_per_node: int | None) -> list[Problem]:
    """A plain test's one point breaking a ``hard_rule`` would build no job (NixlEP's plan on nodes that cannot
    hold it was an internal error, exit 1): refused at load with the rule's reason. A plain test breaking any
    other rule still runs, as CloudAI runs it (its reference configs do)."""
    entry = checked.entry
    workload = WORKLOADS.get(entry.workload)()
    if not workload.hard_rule:
        return []
    point = checked.space.full({})
    why = constraint_of(workload, point, gpus_per_node, nodes_set="num_nodes" in entry.scenario_fields)
    if why is None:
        return []
    return [
        Problem(
            str(entry.scenario_file),
            f"{entry.field_prefix}.cmd_args",
            f"'{entry.id}' breaks {entry.workload}'s rule: {why}",
            "change the values (or num_nodes) so the job fits",
        )
    ]
