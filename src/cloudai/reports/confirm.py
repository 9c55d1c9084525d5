"""Confirmation of the best candidates: ``confirm.csv`` and the mean ± 95 % CI per candidate.

A search's best step is the luckiest of many noisy samples (winner's curse). When an agent-driven
run confirms (``agent_config.confirm = k``), the k candidates with the highest mean search reward
are each run again ``confirm_repeats`` times, as ordinary steps after the search in
``trajectory.csv``; ``confirm.csv`` (``step,candidate,draw,action``) marks those steps. The estimate of
a candidate uses its confirmation steps only (the search picked it for a high value, so its search
samples are biased upward): mean and a Student-t 95 % confidence interval over the scored repeats;
a failed repeat counts in ``failed``, not in the mean.

The winner (the run's one recommendation: terminal, best.toml and report) is the candidate whose repeats failed
least often (a failed repeat broke a constraint, crashed or timed out: a configuration that breaks the SLA in
4 of 6 traffic draws is not the robust answer, however high its 2 good ones), then the one with the highest
lower 95 % bound (mean - CI): a higher mean whose interval spans 60 is not a better bet than a slightly lower
mean measured to ±1. With one repeat each (no interval) it is the highest mean. ``verdict_lines`` says why, and
says when the winner cannot be told apart from the runner-up at this n.

With env_params (``cloudai.reports.regime_value``): ``confirm.csv``'s ``draw`` says which common env draw a
re-run was under; a candidate's estimate is its value over the regimes from every measurement of it (search
steps too), the winner the lowest failure share over the regimes, then the highest value, and the verdict the
paired difference against each other candidate on the draws both ran (``not separable`` when its CI holds 0).

``cloudai.run`` (terminal, best.toml) and the report both call ``estimates`` on the same files,
so all three say the same thing. Reads files only; writing is ``write_confirm``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import fmean, stdev
from typing import Any, NamedTuple

from cloudai.atomicfile import atomic_write
from cloudai.display import show_action
from cloudai.recordfiles import SCORED
from cloudai.reports.regime_value import (
    Cell,
    Objective,
    RegimeSpec,
    cells,
    failure_share,
    paired,
    t95,
    value,
    value_ci95,
)
from cloudai.reports.trajectory import Step, Trajectory, action_key

CONFIRM_FILE = "confirm.csv"
CONFIRM_COLUMNS = ("step", "candidate", "draw", "action")


class ConfirmRow(NamedTuple):
    """One row of ``confirm.csv``: a re-run ``step`` of ``candidate``, its ``draw`` (the k-th re-run: with
    env_params, the same env draw for every candidate; -1 in a file from before draws were recorded)."""

    step: int
    candidate: int
    action: dict[str, Any]
    draw: int = -1


@dataclass(frozen=True)
class Estimate:
    """One candidate's confirmation: its re-run rewards and what they say.

    Without env_params: the re-runs' mean and Student-t CI. With them (``cells``): the candidate's value over
    the environment from every measurement of it per regime (``cloudai.reports.regime_value``); ``draws`` are
    its scored re-runs by draw, for the paired comparison."""

    candidate: int  # 1 = the highest search estimate
    action: dict[str, Any]
    rewards: tuple[float, ...]  # the scored confirmation repeats
    failed: int = 0  # repeats that failed, timed out or were infeasible
    steps: tuple[int, ...] = field(default=())
    cells: tuple[Cell, ...] = ()  # env_params: every measurement of this action, per regime
    spec: RegimeSpec | None = None
    draws: Mapping[int, tuple[Mapping[str, Any], float]] = field(default_factory=dict)

    @property
    def regime_aware(self) -> bool:
        return self.spec is not None and bool(self.cells)

    @property
    def objective(self) -> Objective:
        return self.spec.objective if self.spec is not None else "expectation"

    @property
    def n(self) -> int:
        """How many measurements the estimate uses (with env_params: search steps and re-runs, every regime)."""
        return sum(c.n for c in self.cells) if self.regime_aware else len(self.rewards)

    @property
    def failure_rate(self) -> float:
        """The share of its repeats that failed (0 with none recorded); with env_params, per regime, combined."""
        if self.regime_aware:
            return failure_share(self.cells, self.objective)
        return self.failed / (len(self.rewards) + self.failed) if self.rewards or self.failed else 0.0

    @property
    def mean(self) -> float:
        """The estimate: the re-runs' mean, or (env_params) the value over the regimes (NaN: a regime unscored)."""
        if self.regime_aware:
            return value(self.cells, self.objective)
        return fmean(self.rewards) if self.rewards else math.nan

    @property
    def ci95(self) -> float:
        """Half-width of the 95 % confidence interval of ``mean`` (NaN with too few measurements)."""
        if self.regime_aware:
            return value_ci95(self.cells, self.objective)
        if self.n < 2:
            return math.nan
        return t95(self.n - 1) * stdev(self.rewards) / math.sqrt(self.n)

    @property
    def low(self) -> float:
        """The lower end of the 95 % interval (-inf without one)."""
        return self.mean - self.ci95 if math.isfinite(self.ci95) else -math.inf

    def value(self, unit: str = "") -> str:
        """``confirmed: mean 55.7 ± 1.2 GB/s (95 % CI, n=3)``, or why there is no mean."""
        if not self.rewards:
            return f"confirmed: no scored repeat ({self.failed} failed)"
        ci = "" if math.isnan(self.ci95) else f" ± {self.ci95:.4g}"
        unit = " " + unit if unit else ""
        if self.regime_aware:
            return self._regime_value(ci, unit)
        failed = f", {self.failed} failed" if self.failed else ""
        return f"confirmed: mean {self.mean:.6g}{ci}{unit} (95 % CI, n={self.n}{failed})"

    def _regime_value(self, ci: str, unit: str) -> str:
        assert self.spec is not None
        how = "expected value" if self.objective == "expectation" else "worst-regime value"
        per = ", ".join(
            f"{self.spec.label(c.regime)}: {c.mean:.4g} (n={c.n}{f', {c.failed} failed' if c.failed else ''})"
            if c.rewards
            else f"{self.spec.label(c.regime)}: never scored ({c.failed} failed)"
            if c.failed
            else f"{self.spec.label(c.regime)}: never measured"
            for c in self.cells
        )
        fails = f", failing in {self.failure_rate:.0%} of the draws" if self.failure_rate else ""
        return f"{how} {self.mean:.6g}{ci}{unit} over the env regimes (95 % CI, n={self.n} measurements{fails}; {per})"

    def text(self, unit: str = "") -> str:
        return f"candidate {self.candidate}: {self.value(unit)}; action {show_action(self.action, sort_keys=True)}"


def read_confirm(directory: Path) -> list[ConfirmRow]:
    """The rows of ``confirm.csv`` ([] when there is none; damaged rows skipped; a file from before the ``draw``
    column reads with draw -1)."""
    path = directory / CONFIRM_FILE
    if not path.is_file():
        return []
    table = list(csv.reader(io.StringIO(path.read_text(errors="replace"))))
    drawn = bool(table) and "draw" in table[0]
    rows = []
    for row in table[1:]:
        try:
            action = dict(json.loads(row[3 if drawn else 2]))
            rows.append(ConfirmRow(int(row[0]), int(row[1]), action, int(row[2]) if drawn else -1))
        except (ValueError, IndexError, TypeError):
            continue
    return rows


def write_confirm(directory: Path, rows: Iterable[ConfirmRow]) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CONFIRM_COLUMNS)
    writer.writerows(
        [r.step, r.candidate, r.draw, json.dumps(r.action, sort_keys=True, default=str)] for r in sorted(rows)
    )
    return atomic_write(directory / CONFIRM_FILE, buf.getvalue())


Measured = tuple[str, Mapping[str, Any], str, float]  # (action key, env_params, status, reward) of one step


def estimates(
    rows: Sequence[ConfirmRow],
    outcome: Mapping[int, tuple[str, float]],
    spec: RegimeSpec | None = None,
    measured: Mapping[int, Measured] | None = None,
) -> list[Estimate]:
    """Per candidate, its confirmation steps' rewards; ``outcome``: step -> (status, reward) from trajectory.csv.

    Rows whose step is not in ``outcome`` (a repeat cancelled before it was recorded) are left out. With
    ``spec`` (env_params), each estimate is per regime over every step of ``measured`` (step -> its action
    key, env_params, status and reward: search steps and re-runs alike) with that action.
    """
    by_candidate: dict[int, tuple[dict[str, Any], list[float], list[int], int]] = {}
    draws: dict[int, dict[int, tuple[Mapping[str, Any], float]]] = {}
    for step, candidate, action, draw in sorted(rows):
        if step not in outcome or candidate < 1:  # 0: an earlier round's candidate, out of the top k now
            continue
        entry = by_candidate.setdefault(candidate, (dict(action), [], [], 0))
        status, reward = outcome[step]
        entry[2].append(step)
        if status in SCORED and math.isfinite(reward):
            entry[1].append(reward)
            if measured is not None and step in measured and draw >= 0:
                draws.setdefault(candidate, {})[draw] = (measured[step][1], reward)
        else:
            by_candidate[candidate] = (entry[0], entry[1], entry[2], entry[3] + 1)
    found = [
        Estimate(c, action, tuple(rewards), failed, tuple(steps), draws=draws.get(c, {}))
        for c, (action, rewards, steps, failed) in sorted(by_candidate.items())
    ]
    if spec is None or measured is None:
        return found
    return [replace(e, spec=spec, cells=_cells(spec, action_key(e.action), measured.values())) for e in found]


def _cells(spec: RegimeSpec, key: str, measured: Iterable[Measured]) -> tuple[Cell, ...]:
    return cells(spec, ((env, status, reward) for k, env, status, reward in measured if k == key))


def _rank(e: Estimate) -> tuple[float, ...]:
    if e.regime_aware:  # the value over the environment; a regime never scored ranks last
        return -e.failure_rate, e.mean if math.isfinite(e.mean) else -math.inf, -e.candidate
    return -e.failure_rate, e.low, e.mean, -e.candidate


def ranked(found: Sequence[Estimate]) -> list[Estimate]:
    """The candidates with a scored re-run, best first, by the recommendation's own rule."""
    return sorted((e for e in found if e.rewards), key=_rank, reverse=True)


def winner(found: Sequence[Estimate]) -> Estimate | None:
    """The recommendation: the fewest failed repeats (as a share), then the highest lower 95 % bound, then the
    higher mean, then the lower candidate number. With env_params: the lowest failure share over the regimes,
    then the highest value over them (``regime_value``)."""
    return next(iter(ranked(found)), None)


def verdict_lines(found: Sequence[Estimate], unit: str = "") -> list[str]:
    """Why the winner is recommended over a candidate with a higher mean, and whether the runner-up is separable."""
    top = winner(found)
    if top is None:
        return []
    if top.regime_aware:
        return _paired_lines(top, ranked(found)[1:], unit)
    lines = []
    others = ranked(found)[1:]
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


def _paired_lines(top: Estimate, others: Sequence[Estimate], unit: str) -> list[str]:
    """env_params: the winner against each other candidate on the draws both were re-run under."""
    assert top.spec is not None
    spec, unit = top.spec, f" {unit}" if unit else ""
    lines = [f"value = {spec.describe()}"]
    for e in others:
        if e.failure_rate > top.failure_rate:
            higher = f" (its value {e.mean:.6g} is higher)" if e.mean > top.mean else ""
            lines.append(
                f"candidate {e.candidate} fails more often: in {e.failure_rate:.0%} of the draws over the regimes "
                f"against {top.failure_rate:.0%} for candidate {top.candidate}{higher}"
            )
            continue
        d = paired(spec, top.draws, e.draws)
        ci = f" ± {d.ci95:.4g}" if math.isfinite(d.ci95) else " (no CI: one draw per regime)"
        where = "" if d.regimes == d.of else f", in {d.regimes} of {d.of} regimes"
        said = (
            f"paired on the same {d.pairs} env draws{where}, candidate {top.candidate} - candidate {e.candidate} = "
            f"{d.diff:+.4g}{ci}{unit} (95 % CI; values from {top.n} and {e.n} measurements)"
        )
        if d.separable and d.diff > 0:
            lines.append(said)
        else:
            lines.append(f"not separable from candidate {e.candidate}: {said}; raise agent_config.confirm_repeats "
                         "to tell them apart")  # fmt: skip
    return lines


def confirmed_in(traj: Trajectory, directory: Path, spec: RegimeSpec | None = None) -> list[Estimate]:
    """The estimates of an iteration dir's confirmation ([] when it did not confirm); ``spec``: the run's
    env_params regimes (None without env_params)."""
    rows = read_confirm(directory)
    if not rows:
        return []
    outcome = {s.step: (s.status, s.reward) for s in traj.steps}
    measured = {s.step: (s.key, s.env, s.status, s.reward) for s in traj.steps} if spec is not None else None
    return estimates(rows, outcome, spec, measured)


def headline_step(traj: Trajectory, found: Sequence[Estimate]) -> Step | None:
    """The step that stands for the run's best: the confirmed winner's best search step, else the best step."""
    top = winner(found)
    if top is None:
        return traj.best()
    confirming = {step for e in found for step in e.steps}
    key = action_key(top.action)
    mine = [s for s in traj.scored() if s.step not in confirming and action_key(s.action) == key]
    return max(mine, key=lambda s: (s.reward, -s.step), default=None) or traj.best()
