"""The records of an agent-driven run by name: their files, trajectory.csv's columns, the step statuses.

One definition for the writer (``cloudai.trajectory.records``) and every reader (``--resume``, the DSE's
counts and notes, the agents, the reports): a status added in one place and not another would make a
reader drop or miscount steps. A step's record is ``Row``, and ``parse_row`` the one parser of a trajectory.csv
line, behind ``--resume``'s strict reader (``cloudai.trajectory.records``, which also holds the writing contract)
and the reports' lenient, streaming one (``cloudai.reports.trajectory``, whose ``Step`` adds a view for figures).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

TRAJECTORY_FILE = "trajectory.csv"
ENV_FILE = "env.csv"
COLUMNS = ("step", "episode", "action", "reward", "observation", "status", "elapsed_s", "reason")
LEGACY_COLUMNS = COLUMNS[:-1]  # written before the reason column: still read (empty reasons)
STATUSES = frozenset({"ok", "cached", "failed", "constraint", "timeout", "pruned", "infeasible"})
SCORED = frozenset({"ok", "cached"})  # the statuses whose reward measures the action
# Steps that do not use up agent_steps: answered from the cache, or refused by the workload's rule before any job
# (``infeasible``: the sampler drew the point, the rule refused it; recorded once per point, no job dir).
UNBUDGETED = frozenset({"cached", "infeasible"})


@dataclass(frozen=True)
class Row:
    """One recorded step as trajectory.csv (and env.csv, ``env``: its cells as written, by param name) hold it; a
    value not measured is NaN. The writer appends these; ``--resume`` (strict) and the reports (lenient) read
    rows through ``parse_row``: one parser, so they never disagree on what a row says."""

    step: int
    episode: int
    action: dict[str, Any]
    reward: float
    observation: list[float]
    status: str
    elapsed_s: float
    env: dict[str, str] = field(default_factory=dict)
    reason: str = ""


def parse_row(cells: list[str]) -> Row | None:
    """A row's cells (``COLUMNS``, or ``LEGACY_COLUMNS`` without the reason) as a ``Row``; None when they do not
    parse (a wrong count, bad JSON, an unknown status, a number that is not one)."""
    if len(cells) == len(LEGACY_COLUMNS):
        cells = [*cells, ""]
    if len(cells) != len(COLUMNS):
        return None
    step, episode, action, reward, observation, status, elapsed, reason = cells
    try:
        act = json.loads(action)
        obs = json.loads(observation) if observation else []
        if not isinstance(act, dict) or not isinstance(obs, list) or status not in STATUSES:
            return None
        values = [math.nan if v is None else float(v) for v in obs]
        return Row(
            int(step),
            int(episode or 0),
            act,
            parse_number(reward),
            values,
            status,
            parse_number(elapsed),
            reason=reason,
        )
    except (ValueError, TypeError, RecursionError):
        return None


def parse_number(text: str) -> float:
    """A reward or duration cell: NaN where none was written (empty, ``None``, ``null``)."""
    return math.nan if text in ("", "None", "null") else float(text)
