"""Confirmation benchmark (issue 40): how often the recommendation is the true best over a randomized environment.

    uv run python benchmarks/bench_confirm.py [--seeds 50] [--steps 60]

Per seed, in this process, a synthetic landscape: 8 configurations, each with a value on a quiet network and a
load sensitivity (so the best one depends on the load: the rankings cross), 3 load regimes drawn with weights
0.5 / 0.3 / 0.2, a uniform jitter in [0, 0.3] that shaves every reward alike (``reward = value * (1 - jitter)``)
and Gaussian measurement noise (sd 3). The search is a contextual epsilon-greedy over ``--steps`` steps (it sees
the step's load, as the ``bandit`` does, so it measures each configuration mostly in the regime it is good in:
the skew that makes a pooled mean lie). Then the top 3 are confirmed through cloudai's own
``run_confirmation``, by:

* today's rule: candidates by pooled search mean, 3 re-runs each, each under its own env draw, the winner by
  the highest lower 95 % bound of its re-runs (``run_confirmation`` without a ``RegimeSpec``);
* today's rule with the new rule's budget: the same with 9 re-runs each;
* the new rule: candidates by their value over the regimes they were measured in, 3 re-runs in each regime
  under the same draws for every candidate (common random numbers), the winner by the expected value per
  regime over every measurement (``RegimeSpec``).

A recommendation is right when its true expected value (the weights, jitter's mean) is within 1 % of the true
best's. Printed: the share of right recommendations per rule, the mean regret (true best - recommended), and
how often the true best was among the confirmed candidates at all (the search's share, which no verdict fixes).
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
from pathlib import Path
from statistics import fmean
from typing import Any

from cloudai.config.test import EnvParamSpec
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.envs.env_params import EnvParamSampler
from cloudai.reports.confirm import winner
from cloudai.reports.regime_value import RegimeSpec
from cloudai.run.confirm import run_confirmation
from cloudai.space import Categorical, Range, Space

CONFIGS = 8
LOADS = (0.0, 0.5, 0.9)
WEIGHTS = (0.5, 0.3, 0.2)
JITTER_MEAN = 0.15
NOISE_SD = 3.0
SPACE = Space({}, (Categorical("cfg", tuple(range(CONFIGS))), Categorical("load", LOADS), Range("jitter", 0.0, 0.3)))
SPECS = {"load": EnvParamSpec(weights=list(WEIGHTS)), "jitter": EnvParamSpec()}
TOP_K, REPEATS = 3, 3


def landscape(seed: int) -> list[dict[float, float]]:
    """Per configuration, its value in each load regime (before jitter)."""
    rng = random.Random(f"landscape:{seed}")
    values = []
    for _ in range(CONFIGS):
        quiet, sensitivity = rng.uniform(40.0, 100.0), rng.uniform(0.1, 1.0)
        values.append({load: quiet * (1 - sensitivity * load) for load in LOADS})
    return values


def true_value(table: dict[float, float]) -> float:
    return sum(w * table[load] for w, load in zip(WEIGHTS, LOADS, strict=True)) * (1 - JITTER_MEAN)


class LandscapeGym(BaseGym):
    """The landscape in-process: a step's env_params drawn by cloudai's ``EnvParamSampler`` (or given:
    confirmation's common draws), its noise a pure function of (seed, step)."""

    draws_on_request = True

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed, self.table = seed, landscape(seed)
        self.sampler = EnvParamSampler(SPECS, SPACE, seed)
        self._next = 1

    def env_param_sampler(self) -> EnvParamSampler:
        return self.sampler

    def define_action_space(self) -> Space:
        return SPACE.without(set(SPECS))

    def define_observation_space(self) -> list[str]:
        return ["bw"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        return [math.nan], {}

    @property
    def next_step(self) -> int:
        return self._next

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        raise NotImplementedError("steps through step_async")

    def step_async(self, action: dict[str, Any], env_params: Any = None) -> int:
        step, self._next = self._next, self._next + 1
        env = dict(env_params) if env_params is not None else self.sampler.sample(step)
        noise = random.Random(f"noise:{self.seed}:{step}").gauss(0.0, NOISE_SD)
        value = self.table[action["cfg"]][env["load"]] * (1 - env["jitter"]) + noise
        self._ready.append(Feedback(step, 1, dict(action), value, [value], "ok", False, {"env_params": env}))
        return step


def search(gym: LandscapeGym, steps: int) -> list[Feedback]:
    """Contextual epsilon-greedy (epsilon 0.3): per load, the configuration with the best mean there."""
    rng = random.Random(f"search:{gym.seed}")
    seen: dict[tuple[float, int], list[float]] = {}
    done: list[Feedback] = []
    for _ in range(steps):
        load = gym.sampler.sample(gym.next_step)["load"]
        tried = [c for c in range(CONFIGS) if (load, c) in seen]
        explore = not tried or rng.random() < 0.3
        cfg = rng.randrange(CONFIGS) if explore else max(tried, key=lambda c: fmean(seen[load, c]))
        gym.step_async({"cfg": cfg})
        (feedback,) = gym.step_wait()
        seen.setdefault((load, cfg), []).append(feedback.reward)
        done.append(feedback)
    return done


def recommend(seed: int, steps: int, repeats: int, regimes: bool, out_dir: Path) -> tuple[int, list[int]]:
    """The recommended configuration and the confirmed candidates."""
    gym = LandscapeGym(seed)
    found = search(gym, steps)
    spec = RegimeSpec(gym.sampler.bins()) if regimes else None
    estimates = run_confirmation(gym, found, found, (TOP_K, repeats), out_dir, spec=spec)
    top = winner(estimates)
    assert top is not None
    return int(top.action["cfg"]), [int(e.action["cfg"]) for e in estimates]


def main() -> None:
    parser = argparse.ArgumentParser(description="share of right recommendations under env_params, old vs new rule")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    rules = {
        f"today's rule ({REPEATS} re-runs each, own draws)": (REPEATS, False),
        f"today's rule, same budget ({REPEATS * len(LOADS)} re-runs each)": (REPEATS * len(LOADS), False),
        f"new rule ({REPEATS} re-runs per regime, same draws, per-regime value)": (REPEATS * len(LOADS), True),
    }
    right, among = dict.fromkeys(rules, 0), dict.fromkeys(rules, 0)
    regret: dict[str, list[float]] = {name: [] for name in rules}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            values = [true_value(t) for t in landscape(seed)]
            best = max(values)
            for i, (name, (repeats, regimes)) in enumerate(rules.items()):
                pick, candidates = recommend(seed, args.steps, repeats, regimes, Path(tmp) / f"{seed}-{i}")
                chosen = values[pick]
                right[name] += chosen >= best * 0.99
                among[name] += max(values[c] for c in candidates) >= best * 0.99
                regret[name].append(best - chosen)
    print(f"{args.seeds} seeds, {CONFIGS} configurations, {args.steps} search steps, top {TOP_K} confirmed")
    for name in rules:
        print(f"  {name}: right {right[name]}/{args.seeds} ({right[name] / args.seeds:.0%}), mean regret "
              f"{fmean(regret[name]):.3g}; the true best among the candidates {among[name]}/{args.seeds}")  # fmt: skip


if __name__ == "__main__":
    main()
