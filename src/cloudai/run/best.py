"""``best.toml``: the best trial of an agent-driven run as a test TOML that ``cloudai run`` accepts unchanged.

Every knob is a scalar there (fixed values, the best action, and the env_params that
trial was measured under), so the test is plain: put the file in a tests dir and name it
in a scenario (``test_name = "<name>"``). ``num_nodes`` is not a test field: when it was
swept, the chosen value is given in a comment for the scenario entry. An agent may add
comment lines (e.g. the bandit's best per env_params regime) through ``best_notes()``.

With env_params, one lucky draw can make a configuration look best: ``regime_notes`` puts
the best action's reward in every env_params regime (one param at a time: a list's
candidate, one of ``REGIME_BINS`` bins of a range; ``space.RegimeBins``, the regimes the report
uses too) beside the mean and min across them, and names the regimes it was never measured
in, in best.toml and on the terminal.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

import toml

from cloudai.recordfiles import ENV_FILE, SCORED, TRAJECTORY_FILE
from cloudai.reports.confirm import Estimate, winner
from cloudai.space import NUM_NODES, split_knobs

if TYPE_CHECKING:
    from cloudai.config.scenario import RunEntry
    from cloudai.envs.base import Feedback
    from cloudai.envs.env_params import EnvParamSampler
    from cloudai.space import Space

BEST_FILE = "best.toml"


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
    entry: RunEntry,
    space: Space,
    best: Feedback,
    recorded: int,
    notes: Sequence[str] = (),
    kind: str = "best",
    *,
    confirmed: Sequence[Estimate] = (),
) -> str:
    """best.toml's text; with ``confirmed``, the confirmed winner's estimate leads and ``best`` is its search step.

    ``kind``: "best", or e.g. "pareto_12" for one Pareto-optimal trial (the test is named after it)."""
    metrics = best.info.get("metrics") or dict(zip(entry.agent.metrics, best.observation, strict=False))
    live = bool(entry.cmd_args.get("live_rl_mode"))
    reward = "the live server's reward" if live else f"{entry.agent.reward}({entry.agent.metrics[0]})"
    title = "Best trial" if kind == "best" else "Pareto-optimal trial"
    lines = [
        *_confirmed_lines(confirmed),
        f"# {title} of '{entry.id}' over {recorded} recorded step(s): step {best.step} ({best.status}),",
        f"# reward {best.reward:.6g} = {reward} (a single measurement).",
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


def _confirmed_lines(confirmed: Sequence[Estimate]) -> list[str]:
    top = winner(confirmed)
    if top is None:
        return []
    lines = [f"# Confirmed best: {top.text()}", "# Every confirmed candidate (re-run after the search):"]
    return lines + [f"#   {e.text()}" for e in confirmed]


def outcome_lines(
    label: str, single: Feedback, searched: int, confirmed: Sequence[Estimate], out_dir: Path
) -> list[str]:
    """What the terminal says at the end of an iteration: the estimate to rely on first, then the search's
    best single measurement, then (env_params) the report's trap/robust verdict on the best configuration."""
    best = f"best of {searched} step(s) is step {single.step}: reward {single.reward:.6g} (a single measurement)"
    top = winner(confirmed)
    if top is None:
        lines = [f"{label}: {best}", f"  action {json.dumps(single.action)}"]
    else:
        lines = [f"{label}: confirmed best, {top.text()}"]
        lines += [f"  {e.text()}" for e in confirmed if e is not top]
        lines.append(f"  search: {best}, action {json.dumps(single.action)}")
    verdict = regime_verdict(out_dir)
    if verdict:
        lines.append(f"  env_params: {verdict}")
    return lines


def regime_verdict(out_dir: Path) -> str | None:
    """The report's trap/robust verdict for this iteration (None without env_params): the same files, the same
    functions as ``cloudai generate-report``, so the terminal and the report agree."""
    from cloudai.reports.confirm import confirmed_in, headline_step
    from cloudai.reports.load import entry_of
    from cloudai.reports.regimes import regimes
    from cloudai.reports.trajectory import read_env, read_trajectory

    path = out_dir / TRAJECTORY_FILE
    if not (out_dir / ENV_FILE).is_file() or not path.is_file():
        return None
    traj = read_trajectory(path)
    read_env(out_dir / ENV_FILE, traj)
    found = regimes(traj, headline_step(traj, confirmed_in(traj, out_dir)), entry_of(out_dir).regimes)
    return None if found is None else found.verdict


def regime_notes(steps: Sequence[Feedback], best: Feedback, sampler: EnvParamSampler | None) -> list[str]:
    """The best action's reward per env_params regime and across them; [] without env_params."""
    if sampler is None:
        return []
    bins = sampler.bins()
    groups: dict[tuple[str, str], list[float]] = {}
    for f in steps:
        if f.status in SCORED and f.action == best.action and all(n in f.env_params for n in bins):
            for name, regimes in bins.items():
                groups.setdefault((name, regimes.label(f.env_params[name])), []).append(f.reward)
    lines = ["Reward of this action per env_params regime (mean / min over n trials):"]
    missing = []
    for name, regimes in bins.items():
        for label in regimes.labels():
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
