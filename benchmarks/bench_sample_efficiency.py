"""Sample efficiency on the Synthetic landscape: steps to first reach 98% of the known optimum.

The landscape is ``cloudai.workloads.synthetic_model`` evaluated in-process (no jobs, so
this measures the search, not the orchestration) over a space of at least 2000 grid
points. ``grid_search`` needs the whole grid to be sure it saw the optimum; ``optuna`` and
``random_search`` stop counting at the first step whose reward (``bus_bw``) reaches 98% of
``optimum()``. Median over 5 seeds; a run that never gets there within the grid's size
counts as the grid's size (and is marked). Aim: optuna <= grid/10 and <= random/2.

    uv run python benchmarks/bench_sample_efficiency.py [--seeds 5] [--target 0.98] [--lists]

``--lists`` writes the numeric knobs as lists of the grid's values: TPE then sees unordered
categories and loses the ordering a range gives it (measured: about 0.6 of random's steps,
against about 0.3 with ranges), which is why numeric knobs are better written as ranges (or as lists with
``agent_config.ordinal = true``, which asks them as ordered axes: 0.36 of random's steps here).
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable, Mapping
from typing import Any

from cloudai.agents import AGENTS
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.space import Categorical, Range, Space

PENALTY = -1.0


class LandscapeGym(BaseGym):
    """A ``BaseGym`` over a pure reward function of the action, with the space's fixed values merged in."""

    def __init__(self, space: Space, reward: Callable[[Mapping[str, Any]], float | None]) -> None:
        super().__init__()
        self.space, self.reward, self.rewards = space, reward, list[float]()

    def define_action_space(self) -> Space:
        return self.space

    def define_observation_space(self) -> list[str]:
        return ["bus_bw"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        return [0.0], {}

    @property
    def next_step(self) -> int:
        return len(self.rewards) + 1

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        value = self.reward(self.space.full(action))
        if value is None:  # infeasible: a constraint step with the default penalty, as the real env records it
            self.rewards.append(PENALTY)
            return [math.nan], PENALTY, False, {"status": "constraint"}
        self.rewards.append(value)
        return [value], value, False, {"status": "ok"}


def steps_to_target(
    agent: str, space: Space, reward: Callable[[Mapping[str, Any]], float | None], target: float, seed: int
) -> tuple[int, bool]:
    """(steps to the first reward >= target, reached?) within a budget of the grid's size.

    The ask/tell loop is driven here (not ``run()``) so a run stops as soon as it hits the target.
    """
    env = LandscapeGym(space, reward)
    agent_cls = AGENTS.get(agent)
    searcher = agent_cls(env, agent_cls.config_model(seed=seed), space.grid_size)
    observation, _ = env.reset(seed=seed)
    while len(env.rewards) < space.grid_size and (choice := searcher.select_action(observation)) is not None:
        step, action = choice
        observation, value, done, info = env.step(action)
        searcher.update_policy(Feedback(step, 1, action, value, observation, info["status"], done, info))
        if value >= target:
            return step, True
    return space.grid_size, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--target", type=float, default=0.98, help="fraction of the known optimum to reach")
    parser.add_argument("--lists", action="store_true", help="every knob a list (the grid's values), no ranges")
    args = parser.parse_args()
    from cloudai.workloads import synthetic_model as model

    space, reward, best = landscape(model)
    if args.lists:
        space = Space(space.fixed, tuple(Categorical(d.name, tuple(d.grid_values)) for d in space.dims))
    print(f"knobs: {'lists only' if args.lists else 'algo a list; chunk_kb, num_channels int ranges'}")
    target = args.target * best
    print(f"Synthetic landscape: {len(space.dims)} dimensions, grid of {space.grid_size} points")
    print(f"known optimum bus_bw = {best:.4g}; target {args.target:.0%} = {target:.4g}; median over {args.seeds} seeds")
    medians: dict[str, float] = {}
    for agent in ("optuna", "random_search"):
        runs = [steps_to_target(agent, space, reward, target, seed) for seed in range(args.seeds)]
        medians[agent] = statistics.median(steps for steps, _ in runs)
        shown = ", ".join(f"{steps}{'' if hit else '+'}" for steps, hit in runs)
        print(f"  {agent:<14} median {medians[agent]:>7.1f} steps   (per seed: {shown})")
    grid = space.grid_size
    print(f"  {'grid_search':<14} needs   {grid:>7d} steps   (the whole grid, to be sure)")
    opt, rnd = medians["optuna"], medians["random_search"]
    print(f"optuna: {opt / grid:.3f} of the grid (aim <= 0.100), {opt / rnd:.2f} of random's steps (aim <= 0.50)")


def landscape(model: Any) -> tuple[Space, Callable[[Mapping[str, Any]], float | None], float]:
    """The model's recommended 2048-point space as a user writes it, its reward and the known optimum.

    ``algo`` is a list; ``chunk_kb`` (log) and ``num_channels`` are int ranges with ``grid_points``
    (16 and 32), so ``grid_search`` walks exactly ``recommended_space()``'s grid while optuna and
    random_search sample the ranges. The reward is ``bus_bw``; an infeasible point is None (a
    ``constraint`` step). The optimum is the grid's: searching the ranges may only beat it.
    """
    candidates, fixed = model.recommended_space()
    nodes = fixed.pop("num_nodes")
    chunks, channels = candidates["chunk_kb"], candidates["num_channels"]
    space = Space(
        fixed,
        (
            Categorical("algo", tuple(candidates["algo"])),
            Range("chunk_kb", min(chunks), max(chunks), log=True, dtype="int", grid_points=len(chunks)),
            Range("num_channels", min(channels), max(channels), dtype="int", grid_points=len(channels)),
        ),
    )
    assert space.grid_size == len(candidates["algo"]) * len(chunks) * len(channels)

    def reward(point: Mapping[str, Any]) -> float | None:
        return None if model.infeasible(point, nodes) else model.expected(point, nodes)["bus_bw"]

    return space, reward, model.optimum(candidates, nodes, fixed)[1]


if __name__ == "__main__":
    main()
