"""The records of an agent-driven run by name: their files, trajectory.csv's columns, the step statuses.

One definition for the writer (``cloudai.trajectory.records``) and every reader (``--resume``, the DSE's
counts and notes, the agents, the reports): a status added in one place and not another would make a
reader drop or miscount steps. The contract itself is in ``cloudai.trajectory.records``.
"""

from __future__ import annotations

TRAJECTORY_FILE = "trajectory.csv"
ENV_FILE = "env.csv"
COLUMNS = ("step", "episode", "action", "reward", "observation", "status", "elapsed_s", "reason")
LEGACY_COLUMNS = COLUMNS[:-1]  # written before the reason column: still read (empty reasons)
STATUSES = frozenset({"ok", "cached", "failed", "constraint", "timeout", "pruned"})
SCORED = frozenset({"ok", "cached"})  # the statuses whose reward measures the action
