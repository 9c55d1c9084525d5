"""What an agent-driven iteration keeps of its steps as they finish, for its progress line and its conclusion.

Every step's status is counted (this process's and the recorded ones); a scored step is kept slim (``slim``), so
10^5 failed steps cost no memory and a scored one a few hundred bytes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cloudai.envs.base import Feedback
from cloudai.recordfiles import SCORED, UNBUDGETED

if TYPE_CHECKING:
    from cloudai.run.progress import StepProgress


@dataclass
class Tally:
    """The steps of one iteration: ``on_step`` is the env's callback, ``replayed`` takes the recorded ones."""

    metrics: tuple[str, ...]
    progress: StepProgress
    history: list[Feedback] = field(default_factory=list)  # the steps recorded before this process (resume)
    finished: list[Feedback] = field(default_factory=list)  # this process's scored steps, slim: all the notes read
    counts: Counter[str] = field(default_factory=Counter)  # every step's status, this process's and the recorded ones

    def on_step(self, feedback: Feedback) -> None:
        self.counts[feedback.status] += 1
        if feedback.status in SCORED:  # 10^5 failed steps cost no memory
            self.finished.append(slim(feedback, self.metrics))
        self.progress.update(feedback)

    def replayed(self, history: list[Feedback]) -> None:
        """The env's recorded steps: counted, and where the progress line starts."""
        self.history = history
        self.counts.update(f.status for f in history)
        self.progress.done = sum(f.status not in UNBUDGETED for f in history)
        self.progress.best = max((f.reward for f in history if f.status in SCORED), default=None)

    def steps(self) -> list[Feedback]:
        """The scored steps of this process after every recorded one (the end-of-run notes read these)."""
        return [*self.history, *self.finished]


def slim(feedback: Feedback, metrics: tuple[str, ...]) -> Feedback:
    """A scored step as the end-of-run notes read it (best.toml, regimes, confirmation, Pareto): its ``info``
    cut to ``metrics`` (only when they say more than the observation; ``best_text`` rebuilds them from it) and
    ``env_params``. A few hundred bytes per step instead of the env's whole info (its job dir, its reason...)."""
    info: dict[str, Any] = {}
    if extra := feedback.extra_metrics(metrics):
        info["metrics"] = extra
    if env := feedback.info.get("env_params"):
        info["env_params"] = env
    f = feedback  # built field by field: dataclasses.replace walks the fields by name, 5x the cost, every step
    return Feedback(f.step, f.episode, f.action, f.reward, f.observation, f.status, f.done, info)
