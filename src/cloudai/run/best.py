"""``best.toml``: the best trial of an agent-driven run as a test TOML that ``cloudai run`` accepts unchanged.

Every knob is a scalar there (fixed values, the best action, and the env_params that
trial was measured under), so the test is plain: put the file in a tests dir and name it
in a scenario (``test_name = "<name>"``). ``num_nodes`` is not a test field: when it was
swept, the chosen value is given in a comment for the scenario entry. An agent may add
comment lines (e.g. the bandit's best per env_params regime) through ``best_notes()``.

With env_params, one lucky draw can make a configuration look best: ``regime_notes`` puts
the best action's reward in every env_params regime (one param at a time: a list's
candidate, one of ``REGIME_BINS`` bins of a range) beside the mean and min across them,
and names the regimes it was never measured in, in best.toml and on the terminal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean
from typing import TYPE_CHECKING, Any

import toml

from cloudai.space import NUM_NODES, split_knobs

if TYPE_CHECKING:
    from cloudai.config.scenario import RunEntry
    from cloudai.envs.base import Feedback
    from cloudai.envs.env_params import EnvParamSampler
    from cloudai.space import Space

BEST_FILE = "best.toml"
REGIME_BINS = 3  # regimes per range env param
SCORED = ("ok", "cached")


def best_test(entry: RunEntry, space: Space, best: Feedback, kind: str = "best") -> dict[str, Any]:
    """The test table of the best (or another ``kind`` of) trial: plain, every cmd_arg a scalar."""
    values = space.full({**best.action, **best.env_params})
    cmd_args, env_vars, _ = split_knobs(values)
    test: dict[str, Any] = {
        "name": f"{entry.test_name}_{kind}",
        "description": f"{kind} trial of {entry.id}: step {best.step}, reward {best.reward:.6g}",
        "test_template_name": entry.workload,
        "cmd_args": cmd_args,
    }
    if cmd_args.get("live_rl_mode"):  # still a live episode: it needs its agent to step the server
        agent = entry.agent
        test["agent"] = agent.name
        if agent.steps is not None:
            test["agent_steps"] = agent.steps
    if env_vars:
        test["extra_env_vars"] = env_vars
    if entry.extra_cmd_args:
        test["extra_cmd_args"] = entry.extra_cmd_args
    return test


def best_text(
    entry: RunEntry, space: Space, best: Feedback, recorded: int, notes: Sequence[str] = (), kind: str = "best"
) -> str:
    """``kind``: "best", or e.g. "pareto_12" for one Pareto-optimal trial (the test is named after it)."""
    metrics = best.info.get("metrics") or dict(zip(entry.agent.metrics, best.observation, strict=False))
    live = bool(entry.cmd_args.get("live_rl_mode"))
    reward = "the live server's reward" if live else f"{entry.agent.reward}({entry.agent.metrics[0]})"
    title = "Best trial" if kind == "best" else "Pareto-optimal trial"
    lines = [
        f"# {title} of '{entry.id}' over {recorded} recorded step(s): step {best.step} ({best.status}),",
        f"# reward {best.reward:.6g} = {reward}.",
        "# Metrics: " + ", ".join(f"{k}={_num(v)}" for k, v in metrics.items()),
        f"# Action: {', '.join(f'{k}={v!r}' for k, v in best.action.items())}",
    ]
    if best.env_params:
        lines.append(f"# Measured under env_params {best.env_params} (sampled by the environment; fixed here).")
    nodes = space.full(best.action).get(NUM_NODES, 1)
    if NUM_NODES in best.action or nodes != 1:
        lines.append(f"# num_nodes = {nodes}: set it on the scenario entry (not a test field).")
    lines += [f"# {note}" for note in notes]
    test = best_test(entry, space, best, kind)
    lines.append(f'# Run it: copy this file into a tests dir; in a scenario: test_name = "{test["name"]}".')
    return "\n".join(lines) + "\n\n" + toml.dumps(test)


def regime_notes(steps: Sequence[Feedback], best: Feedback, sampler: EnvParamSampler | None) -> list[str]:
    """The best action's reward per env_params regime and across them; [] without env_params."""
    if sampler is None:
        return []
    groups: dict[tuple[str, str], list[float]] = {}
    for f in steps:
        if f.status in SCORED and f.action == best.action and all(n in f.env_params for n in sampler.names):
            for name, label in zip(sampler.names, sampler.regime(f.env_params, REGIME_BINS), strict=True):
                groups.setdefault((name, label), []).append(f.reward)
    lines = ["Reward of this action per env_params regime (mean / min over n trials):"]
    missing = []
    for name, labels in sampler.labels(REGIME_BINS).items():
        for label in labels:
            rewards = groups.get((name, label))
            if rewards:
                lines.append(f"  {name}={label}: {fmean(rewards):.6g} / {min(rewards):.6g} (n={len(rewards)})")
            else:
                missing.append(f"{name}={label}")
    means = [fmean(r) for r in groups.values()]
    lines.append(f"  across regimes: mean {fmean(means):.6g}, min {min(means):.6g}" if means else "  never scored")
    if missing:
        lines.append(f"  never measured in: {', '.join(missing)} (a good result there is unproven)")
    return lines


def _num(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) and math.isfinite(value) else str(value)
