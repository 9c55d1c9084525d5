"""Pruning support of the DSE env: poll a running trial's intermediate values, let the agent judge, stop it.

An agent that prunes calls ``env.watch_progress(judge, poll_s)``. While trials run, the env's one
``system.wait`` call returns at least every ``poll_s`` seconds (the wait stays event-driven: a
finished job still wakes it at once; nothing spins); then ``ProgressWatch.check`` reads each
running trial's ``workload.progress(job_dir)`` and hands the *new* values, turned into rewards
by the entry's reward function (so "higher is better", like the agent's objective), to
``judge(step, [(progress step, reward), ...])``. True means prune: the env cancels the job
through its system (standalone: the process group is killed; Slurm: ``scancel``) and records
the step as ``pruned`` with its last intermediate value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cloudai.workloads.base import Workload


class PruneJudge(Protocol):
    def __call__(self, step: int, new: Sequence[tuple[int, float]]) -> bool: ...


@dataclass
class ProgressWatch:
    workload: Workload
    reward_fn: Callable[[float], float]
    judge: PruneJudge
    poll_s: float
    seen: dict[int, int] = field(default_factory=dict)  # step -> progress values already judged
    last: dict[int, tuple[int, float]] = field(default_factory=dict)  # step -> last (progress step, raw value)

    def check(self, step: int, job_dir: Path) -> bool:
        """Feed ``step``'s new intermediate values to the judge; True when it says prune."""
        values = self.workload.progress(job_dir)
        new = [(s, v) for s, v in values[self.seen.get(step, 0) :] if math.isfinite(v)]
        self.seen[step] = len(values)
        if not new:
            return False
        self.last[step] = new[-1]
        return self.judge(step, [(s, self.reward_fn(v)) for s, v in new])

    def forget(self, step: int) -> tuple[int, float] | None:
        self.seen.pop(step, None)
        return self.last.pop(step, None)
