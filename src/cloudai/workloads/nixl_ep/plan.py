"""A NIXL EP phase plan (``"[[0, 1], [0, 1, 2, 3]]"``: the ranks of each phase; a negative rank is a planned
removal) and the launches it needs, by CloudAI's rules (``NixlEPSlurmCommandGenStrategy.plan_stages``): each
phase's new ranks are packed onto the nodes in order, at most ``num_processes_per_node`` per node over the whole
run; phase 0's launch on node 0 is the primary (it serves the TCP store), every other launch joins it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Launch:
    phase: int
    node: int
    num_processes: int

    @property
    def primary(self) -> bool:
        return self.phase == 0 and self.node == 0


def parse_plan(text: str) -> list[list[int]]:
    """The phases; ``ValueError`` saying what is wrong."""
    try:
        phases = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"plan must be valid JSON: {exc}") from None
    if not isinstance(phases, list) or not phases:
        raise ValueError("plan must be a non-empty list of phases")
    for phase in phases:
        if not isinstance(phase, list) or not phase or any(type(rank) is not int for rank in phase):
            raise ValueError("each plan phase must be a non-empty list of integer ranks")
    return phases


def new_ranks(phases: list[list[int]]) -> list[int]:
    """How many ranks each phase adds to the previous one."""
    counts, previous = [], set()
    for phase in phases:
        current = {rank for rank in phase if rank >= 0}
        counts.append(len(current - previous))
        previous = current
    return counts


def launches(phases: list[list[int]], num_nodes: int, per_node: int) -> list[Launch]:
    """Every launch, phase by phase; ``ValueError`` when the nodes cannot hold the plan (CloudAI's checks)."""
    counts = new_ranks(phases)
    total = sum(counts)
    if num_nodes == 1 and per_node != total:
        raise ValueError(f"on one node, num_processes_per_node must equal the plan's {total} workers, not {per_node}")
    if total > per_node * num_nodes:
        raise ValueError(
            f"the plan needs {total} workers; {num_nodes} node(s) x {per_node} hold {per_node * num_nodes}"
        )
    capacity, found = [per_node] * num_nodes, []
    for phase, count in enumerate(counts):
        for node in range(num_nodes):
            take = min(capacity[node], count)
            if take:
                capacity[node] -= take
                count -= take
                found.append(Launch(phase, node, take))
    return found


def has_removal(phases: list[list[int]]) -> bool:
    return any(rank < 0 for phase in phases for rank in phase)
