"""``cloudai dry-run`` of agent-driven tests: the space, its size, and the agent's first trials as scripts.

Nothing runs and the grid is never materialised: its size is a product of the dimension
sizes, and the trials shown are the agent's own first asks (``select_action`` against an
env that runs nothing), so a 10^6-point grid costs what a 10-point one does.

A workload with a validity rule: the header says how many points are valid ("192 points, 61 valid", counted
vectorised where the workload allows: ``cloudai.workloads.validity``), the agent asks valid points only (a grid
skips the rest, a sampler redraws), a sampling agent's plan also lists the grid's first valid points, and each
step shows the knobs the workload derives (``Workload.derived``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.display import show_action
from cloudai.envs.base import BaseGym, Observation
from cloudai.run import Echo
from cloudai.space import Categorical, Dimension, Space, split_knobs

if TYPE_CHECKING:
    from cloudai.envs.env_params import EnvParamSampler
    from cloudai.plan.load import Plan
    from cloudai.systems.base import System
    from cloudai.workloads.validity import ValidPoints


def dry_run_entries(plan: Plan, run_dir: Path, system: System, echo: Echo, n: int = 5) -> None:
    """Print each agent-driven entry's space and write its agent's first ``n`` trials' scripts; run nothing."""
    from cloudai.agents import AGENTS
    from cloudai.envs.env_params import sampler_for
    from cloudai.jobs.spec import build_spec
    from cloudai.plan.agent_checks import agent_config, agent_space, default_steps, finite, short_sweep_note
    from cloudai.plan.valid_space import entry_rule, valid_note
    from cloudai.workloads import WORKLOADS
    from cloudai.workloads.base import Resources
    from cloudai.workloads.validity import ValidPoints

    for checked in (c for c in plan.checked.values() if c.agent_driven):
        entry = checked.entry
        agent_cls = AGENTS.get(entry.agent.name)
        config = agent_config(entry, agent_cls)
        action = agent_space(entry, checked.space)
        size = f"{action.grid_size} grid points" if finite(action, agent_cls) else "continuous"
        rule_all = entry_rule(checked, system.gpus_per_node)
        steps = default_steps(entry, checked.space, agent_cls, rule_all.count() if rule_all else None)
        echo(f"{entry.id}: agent {entry.agent.name}, {steps} step(s), {len(action.dims)} dimension(s), {size}")
        short = short_sweep_note(entry, checked.space, agent_cls)
        if short:
            echo(f"  note: {short}")
        if rule_all is not None:
            echo(f"  space: {valid_note(checked, rule_all)}")
        if checked.live_rl:  # the server defines the rest of the space, the observation and the reward
            echo("  live RL: each trial is a step of the live environment, which gives the reward; no scripts")
            echo("  knobs the test declares or narrows (the server adds its others when the run starts):")
        else:
            echo(f"  reward {entry.agent.reward}({entry.agent.metrics[0]}); observation {list(entry.agent.metrics)}")
            if len(entry.agent.objectives) > 1:
                objectives = ", ".join(f"{o.metric} ({o.direction})" for o in entry.agent.objectives)
                echo(f"  objectives: {objectives}: the run writes the Pareto front (pareto.csv, pareto/<step>.toml)")
            if entry.agent.constraints:
                echo(f"  constraints: {', '.join(c.text for c in entry.agent.constraints)}")
        for dim in checked.space.dims:
            sampled = " (env_param: sampled by the environment)" if dim.name not in action.names else ""
            branch = checked.space.when.get(dim.name)
            applies = f" (when {branch[0]} = {branch[1]!r})" if branch else ""
            echo(f"  {_describe(dim)}{applies}{sampled}")
        if checked.live_rl:
            continue
        workload, sampler = WORKLOADS.get(entry.workload)(), sampler_for(entry, checked.space)
        names = frozenset(sampler.names if sampler else ())
        nodes_set = "num_nodes" in entry.scenario_fields
        rule = ValidPoints(action, workload, system.gpus_per_node, names, nodes_set=nodes_set)
        dry = _DryGym(action, list(entry.agent.metrics), sampler, rule if rule.has_rule else None)
        if rule.has_rule and action.has_grid and entry.agent.name != "grid_search":
            first = [show_action(action.active(action.grid_point(i))) for i in rule.first(3)]
            echo(f"  first valid points: {', '.join(first) or 'none'}")
        agent = agent_cls(dry, config, min(n, steps or n))
        queue = [dict(p) for p in config.enqueue]  # evaluated first by the run (agent_config.enqueue)
        for _ in range(min(n, steps or n)):
            choice = (dry.next_step, queue.pop(0)) if queue else agent.select_action(dry.reset()[0])
            if choice is None:
                break
            step, point = choice
            dry.step_count += 1
            env = sampler.sample(step) if sampler else {}
            values = action.full({**point, **env})
            why = rule.violation(point, env)
            directory = run_dir / entry.id / "0" / str(step)
            spec = build_spec(
                entry,
                workload,
                values,
                directory,
                f"{entry.id}.0.{step}",
                system.install_path,
                system.gpus_per_node,
                system.hf_home_path,
            )
            directory.mkdir(parents=True, exist_ok=True)
            (directory / system.script_name).write_text(system.render(spec))
            note = f"  [infeasible: {why}]" if why else ""
            args, _, num_nodes = split_knobs(values)
            derived = workload.derived(args, Resources(num_nodes, system.gpus_per_node))
            note += f"  derived {json.dumps(derived, default=str)}" if derived else ""
            echo(f"  step {step}: {json.dumps(action.active(point))}{' env ' + json.dumps(env) if env else ''}{note}")


class _DryGym(BaseGym):
    """An env that runs nothing: dry-run asks the agent for its first actions against it."""

    def __init__(
        self, space: Space, metrics: list[str], sampler: EnvParamSampler | None, rule: ValidPoints | None = None
    ) -> None:
        super().__init__()
        self.space, self.metrics, self.sampler, self.step_count = space, metrics, sampler, 0
        self.rule = rule

    def valid_points(self) -> ValidPoints | None:
        return self.rule

    def env_param_sampler(self) -> EnvParamSampler | None:
        return self.sampler

    def define_action_space(self) -> Space:
        return self.space

    def define_observation_space(self) -> list[str]:
        return self.metrics

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        return [math.nan] * len(self.metrics), {}

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        raise NotImplementedError("a dry run runs no trial")

    @property
    def next_step(self) -> int:
        return self.step_count + 1


def _describe(dim: Dimension) -> str:
    if isinstance(dim, Categorical):
        more = " ..." if len(dim.choices) > 8 else ""
        return f"{dim.name}: {len(dim.choices)} choices {list(dim.choices)[:8]}{more}"
    grid = f", grid_points {dim.grid_points}" if dim.grid_points else ""
    return f"{dim.name}: range [{dim.low:g}, {dim.high:g}] {dim.dtype}{' log' if dim.log else ''}{grid}"
