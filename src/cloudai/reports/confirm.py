"""Confirmation of the best candidates: ``confirm.csv`` and the mean ± 95 % CI per candidate.

A search's best step is the luckiest of many noisy samples (winner's curse). When an agent-driven
run confirms (``agent_config.confirm = k``), the k candidates with the highest mean search reward
are each run again ``confirm_repeats`` times, as ordinary steps after the search in
``trajectory.csv``; ``confirm.csv`` (``step,candidate,action``) marks those steps. The estimate of
a candidate uses its confirmation steps only (the search picked it for a high value, so its search
samples are biased upward): mean and a Student-t 95 % confidence interval over the scored repeats;
a failed repeat counts in ``failed``, not in the mean.

The winner (the run's one recommendation: terminal, best.toml and report) is the candidate whose repeats failed
least often (a failed repeat broke a constraint, crashed or timed out: a configuration that breaks the SLA in
4 of 6 traffic draws is not the robust answer, however high its 2 good ones), then the one with the highest
lower 95 % bound (mean - CI): a higher mean whose interval spans 60 is not a better bet than a slightly lower
mean measured to ±1. With one repeat each (no interval) it is the highest mean. ``verdict_lines`` says why, and
says when the winner cannot be told apart from the runner-up at this n.

``cloudai.run`` (terminal, best.toml) and the report both call ``estimates`` on the same files,
so all three say the same thing. Reads files only; writing is ``write_confirm``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

from cloudai.atomicfile import atomic_write
from cloudai.recordfiles import SCORED
from cloudai.reports.trajectory import Step, Trajectory

CONFIRM_FILE = "confirm.csv"
CONFIRM_COLUMNS = ("step", "candidate", "action")
# Two-sided 95 % Student-t quantiles for 1..30 degrees of freedom; 1.96 beyond.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)  # fmt: skip


@dataclass(frozen=True)
class Estimate:
    """One candidate's confirmation: its re-run rewards and what they say."""

    candidate: int  # 1 = the highest mean search reward
    action: dict[str, Any]
    rewards: tuple[float, ...]  # the scored confirmation repeats
    failed: int = 0  # repeats that failed, timed out or were infeasible
    steps: tuple[int, ...] = field(default=())

    @property
    def n(self) -> int:
        return len(self.rewards)

    @property
    def failure_rate(self) -> float:
        """The share of its repeats that failed (0 with none recorded)."""
        return self.failed / (self.n + self.failed) if self.n + self.failed else 0.0

    @property
    def mean(self) -> float:
        return fmean(self.rewards) if self.rewards else math.nan

    @property
    def ci95(self) -> float:
        """Half-width of the 95 % confidence interval of the mean (NaN with fewer than 2 repeats)."""
        if self.n < 2:
            return math.nan
        return t95(self.n - 1) * stdev(self.rewards) / math.sqrt(self.n)

    @property
    def low(self) -> float:
        """The lower end of the 95 % interval (-inf without one): what the recommendation ranks by."""
        return self.mean - self.ci95 if math.isfinite(self.ci95) else -math.inf

    def value(self, unit: str = "") -> str:
        """``confirmed: mean 55.7 ± 1.2 GB/s (95 % CI, n=3)``, or why there is no mean."""
        if not self.rewards:
            return f"confirmed: no scored repeat ({self.failed} failed)"
        ci = "" if math.isnan(self.ci95) else f" ± {self.ci95:.4g}"
        failed = f", {self.failed} failed" if self.failed else ""
        return f"confirmed: mean {self.mean:.6g}{ci}{' ' + unit if unit else ''} (95 % CI, n={self.n}{failed})"

    def text(self, unit: str = "") -> str:
        return f"candidate {self.candidate}: {self.value(unit)}; action {json.dumps(self.action, sort_keys=True)}"


def t95(dof: int) -> float:
    return _T95[dof - 1] if 1 <= dof <= len(_T95) else 1.96


def action_key(action: Mapping[str, Any]) -> str:
    return json.dumps(action, sort_keys=True, default=str)


def read_confirm(directory: Path) -> list[tuple[int, int, dict[str, Any]]]:
    """``(step, candidate, action)`` rows of ``confirm.csv`` ([] when there is none; damaged rows skipped)."""
    path = directory / CONFIRM_FILE
    if not path.is_file():
        return []
    rows = []
    for cells in list(csv.reader(io.StringIO(path.read_text(errors="replace"))))[1:]:
        try:
            rows.append((int(cells[0]), int(cells[1]), dict(json.loads(cells[2]))))
        except (ValueError, IndexError, TypeError):
            continue
    return rows


def write_confirm(directory: Path, rows: Iterable[tuple[int, int, Mapping[str, Any]]]) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CONFIRM_COLUMNS)
    writer.writerows([step, candidate, action_key(action)] for step, candidate, action in sorted(rows))
    return atomic_write(directory / CONFIRM_FILE, buf.getvalue())


def estimates(
    rows: Sequence[tuple[int, int, Mapping[str, Any]]], outcome: Mapping[int, tuple[str, float]]
) -> list[Estimate]:
    """Per candidate, its confirmation steps' rewards; ``outcome``: step -> (status, reward) from trajectory.csv.

    Rows whose step is not in ``outcome`` (a repeat cancelled before it was recorded) are left out.
    """
    by_candidate: dict[int, tuple[dict[str, Any], list[float], list[int], int]] = {}
    for step, candidate, action in sorted(rows):
        if step not in outcome or candidate < 1:  # 0: an earlier round's candidate, out of the top k now
            continue
        entry = by_candidate.setdefault(candidate, (dict(action), [], [], 0))
        status, reward = outcome[step]
        entry[2].append(step)
        if status in SCORED and math.isfinite(reward):
            entry[1].append(reward)
        else:
            by_candidate[candidate] = (entry[0], entry[1], entry[2], entry[3] + 1)
    return [
        Estimate(c, action, tuple(rewards), failed, tuple(steps))
        for c, (action, rewards, steps, failed) in sorted(by_candidate.items())
    ]


def _rank(e: Estimate) -> tuple[float, float, float, int]:
    return -e.failure_rate, e.low, e.mean, -e.candidate


def winner(found: Sequence[Estimate]) -> Estimate | None:
    """The recommendation: the fewest failed repeats (as a share), then the highest lower 95 % bound, then the
    higher mean, then the lower candidate number."""
    return max((e for e in found if e.rewards), key=_rank, default=None)


def verdict_lines(found: Sequence[Estimate], unit: str = "") -> list[str]:
    """Why the winner is recommended over a candidate with a higher mean, and whether the runner-up is separable."""
    top = winner(found)
    if top is None:
        return []
    lines = []
    others = sorted((e for e in found if e.rewards and e is not top), key=_rank, reverse=True)
    for e in (e for e in others if e.mean > top.mean):
        if e.failure_rate > top.failure_rate:
            lines.append(
                f"candidate {e.candidate}'s mean {e.mean:.6g} is higher, but {e.failed} of its {e.n + e.failed} "
                f"repeats failed ({top.failed} of candidate {top.candidate}'s)"
            )
            continue
        spread = f"its CI spans ±{e.ci95:.4g}" if math.isfinite(e.ci95) else f"it has n={e.n}, no CI"
        lines.append(
            f"candidate {e.candidate}'s mean {e.mean:.6g} is higher, but {spread}: at worst {e.low:.4g} against "
            f"{top.low:.4g} for candidate {top.candidate}"
        )
    if others and math.isfinite(top.ci95) and others[0].mean + others[0].ci95 >= top.low:
        lines.append(
            f"not separable from candidate {others[0].candidate} at n={top.n} (the 95 % intervals overlap): "
            "raise agent_config.confirm_repeats to tell them apart"
        )
    return lines


def confirmed_in(traj: Trajectory, directory: Path) -> list[Estimate]:
    """The estimates of an iteration dir's confirmation ([] when it did not confirm)."""
    rows = read_confirm(directory)
    if not rows:
        return []
    return estimates(rows, {s.step: (s.status, s.reward) for s in traj.steps})


def headline_step(traj: Trajectory, found: Sequence[Estimate]) -> Step | None:
    """The step that stands for the run's best: the confirmed winner's best search step, else the best step."""
    top = winner(found)
    if top is None:
        return traj.best()
    confirming = {step for e in found for step in e.steps}
    key = action_key(top.action)
    mine = [s for s in traj.scored() if s.step not in confirming and action_key(s.action) == key]
    return max(mine, key=lambda s: (s.reward, -s.step), default=None) or traj.best()
