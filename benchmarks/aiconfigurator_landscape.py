"""Searches replayed on an exhaustively evaluated Aiconfigurator grid (``aiconfigurator_grid.py``'s CSV).

Each trial is a table lookup, so the comparison is of the samplers alone: % of the exhaustive optimum of
tokens/s/GPU after 50 and 200 trials, without and with the SLA (TTFT <= 1000 ms, TPOT <= 30 ms).
"""

from __future__ import annotations

import csv
import math
import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna

from cloudai.agents.optuna_agent import OptunaAgent
from cloudai.agents.optuna_config import OptunaConfig
from cloudai.config.objectives import Constraint
from cloudai.envs.base import BaseGym, Observation
from cloudai.space import Categorical, Space

KNOBS = ("p_tp", "p_pp", "p_bs", "p_workers", "d_tp", "d_pp", "d_bs", "d_workers")
Point = tuple[int, ...]
Table = dict[Point, tuple[float, float, float] | None]  # point -> (ttft, tpot, tokens/s/gpu), None: refused (OOM)


def load(*paths: Path) -> tuple[Table, dict[str, list[int]]]:
    """The rows of one grid (in one CSV, or in shards): point -> result, and each knob's values (in KNOBS
    order, the knobs the grid has)."""
    table: Table = {}
    knobs: list[str] = []
    for path in paths:
        with path.open() as f:
            for row in csv.DictReader(f):
                knobs = knobs or [k for k in KNOBS if k in row]
                ok = row["ok"] == "1"
                result = (
                    (float(row["ttft_ms"]), float(row["tpot_ms"]), float(row["tokens_per_s_per_gpu"])) if ok else None
                )
                table[tuple(int(row[k]) for k in knobs)] = result
    values = {k: sorted({p[i] for p in table}) for i, k in enumerate(knobs)}
    return table, values


def score(table: Table, point: Point, sla: bool) -> float | None:
    """tokens/s/GPU, or None when the point is infeasible (refused, or outside the SLA)."""
    found = table.get(point)
    if found is None or (sla and (found[0] > 1000 or found[1] > 30)):
        return None
    return found[2]


def best_after(scores: list[float | None], n: int) -> float:
    return max((s for s in scores[:n] if s is not None), default=0.0)


def random_search(table: Table, values: dict[str, list[int]], sla: bool, seed: int, n: int) -> list[float | None]:
    points = random.Random(seed).sample(sorted(table), n)
    return [score(table, p, sla) for p in points]


def plain_tpe(table: Table, values: dict[str, list[int]], sla: bool, seed: int, n: int) -> list[float | None]:
    """Optuna's TPE out of the box: categorical knobs (as a CloudAI list), an infeasible point scores 0."""
    scores: list[float | None] = []

    def objective(trial: optuna.Trial) -> float:
        point = tuple(int(trial.suggest_categorical(k, v)) for k, v in values.items())
        scores.append(score(table, point, sla))
        return scores[-1] or 0.0

    optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed)).optimize(objective, n)
    return scores


class LandscapeEnv(BaseGym):
    """A trial is a row of the table, with what cloudai's env would make of it: an out-of-memory point is
    ``failed``, one outside the SLA ``constraint`` (measured, refused), a point measured before ``cached`` (no
    share of the budget); ``scores`` holds each budgeted step's score in order."""

    def __init__(self, table: Table, values: dict[str, list[int]], sla: bool) -> None:
        super().__init__()
        self.table, self.sla, self.scores = table, sla, []
        self.knobs = list(values)
        self.space = Space(dims=tuple(Categorical(k, tuple(v)) for k, v in values.items()))
        self.constraints = (Constraint("ttft_ms", "<=", 1000), Constraint("tpot_ms", "<=", 30)) if sla else ()
        self._next, self._seen = 1, set()

    def define_action_space(self) -> Space:
        return self.space

    def define_observation_space(self) -> list[str]:
        return ["tokens_per_s_per_gpu", "ttft_ms", "tpot_ms"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        return [math.nan] * 3, {}

    @property
    def next_step(self) -> int:
        return self._next

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        self._next += 1
        point = tuple(int(action[k]) for k in self.knobs)
        found = self.table[point]
        observation = [math.nan] * 3 if found is None else [found[2], found[0], found[1]]
        if point in self._seen:
            status = "cached"
        else:
            self._seen.add(point)
            self.scores.append(score(self.table, point, self.sla))
            status = "failed" if found is None else "ok" if self.scores[-1] is not None else "constraint"
        reward = score(self.table, point, self.sla)
        return observation, -1.0 if reward is None else reward, False, {"status": status}


def cloudai_optuna(**config: Any) -> Callable[[Table, dict[str, list[int]], bool, int, int], list[float | None]]:
    """cloudai's optuna agent (``OptunaAgent``, its defaults unless ``config`` says otherwise) on the table."""

    def run(table: Table, values: dict[str, list[int]], sla: bool, seed: int, n: int) -> list[float | None]:
        env = LandscapeEnv(table, values, sla)
        OptunaAgent(env, OptunaConfig(seed=seed, **config), max_steps=n).run()
        return env.scores

    return run


Strategy = Callable[[Table, dict[str, list[int]], bool, int, int], list[float | None]]
STRATEGIES: dict[str, Strategy] = {
    "random": random_search,
    "plain TPE": plain_tpe,
    "cloudai TPE only": cloudai_optuna(local_search=0.0),
    "cloudai optuna": cloudai_optuna(),
    "+ ordinal = true": cloudai_optuna(ordinal=True),
}


def report(path: Path, seeds: int) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    table, values = load(path)
    valid = sum(v is not None for v in table.values())
    print(f"landscape: {len(table)} points, {valid} valid (the rest out of memory or refused)")
    for sla in (False, True):
        feasible = [s for p in table if (s := score(table, p, sla)) is not None]
        optimum = max(feasible)
        label = "with SLA (TTFT <= 1000 ms, TPOT <= 30 ms)" if sla else "without SLA"
        print(f"{label}: {len(feasible)} feasible ({100 * len(feasible) / len(table):.0f} %), optimum {optimum:.1f}")
        for name, strategy in STRATEGIES.items():
            runs = [strategy(table, values, sla, seed, 200) for seed in range(seeds)]
            at = {n: [100 * best_after(r, n) / optimum for r in runs] for n in (50, 200)}
            reached = sum(a >= 98 for a in at[200])
            print(f"  {name:>16}: median % of optimum after 50: {statistics.median(at[50]):.1f}, after 200: "
                  f"{statistics.median(at[200]):.1f}; runs at >= 98 % after 200: {reached}/{seeds}")  # fmt: skip
