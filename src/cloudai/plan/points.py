"""Whether a point fits an agent's space: ``agent_config.enqueue`` at load, warm-start trials at run.

A point fits when it names exactly the space's dimensions and each value is one of a list's
candidates, or inside a range (an integer for an ``int`` range). ``cloudai.space.point_problem`` says
what does not fit, for a message; ``check_enqueue`` turns that into load-time problems (exit 2).
"""

from __future__ import annotations

from typing import Any

from cloudai.config.scenario import RunEntry
from cloudai.errors import Problem
from cloudai.space import Space, point_problem


def check_enqueue(entry: RunEntry, space: Space, points: list[dict[str, Any]]) -> list[Problem]:
    """Each ``agent_config.enqueue`` point must be a point of the agent's space."""
    field = f"{entry.field_prefix}.agent_config.enqueue"
    problems = []
    for i, point in enumerate(points):
        why = point_problem(space, point)
        if why:
            hint = "give every knob the agent chooses, each a value of its list or range"
            problems.append(Problem(str(entry.scenario_file), f"{field}[{i}]", f"{point!r}: {why}", hint))
    return problems
