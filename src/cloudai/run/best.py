"""``best.toml``: the best trial of an agent-driven run as a test TOML that ``cloudai run`` accepts unchanged.

Every knob is a scalar there (fixed values, the best action, and the env_params that
trial was measured under), so the test is plain: put the file in a tests dir and name it
in a scenario (``test_name = "<name>"``). ``num_nodes`` is not a test field: when it was
swept, the chosen value is given in a comment for the scenario entry. An agent may add
comment lines (e.g. the bandit's best per env_params regime) through ``best_notes()``.

With env_params, one lucky draw can make a configuration look best: ``regime_notes`` puts
the best action's reward in every env_params regime (one param at a time: a list's
candidate, one of ``REGIME_BINS`` bins of a range; ``space.RegimeBins``, the regimes the report
uses too) beside, after a confirmation, its value over the environment as the recommendation states it (else
the mean and min across them), and names the regimes it was never measured in, in best.toml and on the
terminal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

import toml

from cloudai.display import show_action, show_value
from cloudai.recordfiles import ENV_FILE, SCORED, TRAJECTORY_FILE
from cloudai.reports.baseline import versus_first
from cloudai.reports.choice import use_line
from cloudai.reports.confirm import Estimate, ranked, verdict_lines, winner
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
    if entry.whole:  # lists that are one value (aiperf_phases) stay one value
        test["dse_excluded_args"] = [f"cmd_args.{name}" for name in entry.whole]
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
    if confirmed and kind == "best":
        title = "The recommendation's best search step"
    name, unit = measured_as(entry)
    lines = [
        *_confirmed_lines(confirmed, unit),
        f"# {title} of '{entry.id}' over {recorded} recorded step(s): step {best.step} ({best.status}),",
        f"# {name} {best.reward:.6g}{' ' + unit if unit else ''} (reward = {reward}; a single measurement).",
        "# Metrics: " + _metrics_text(entry, metrics),
        f"# Action: {', '.join(f'{k}={show_value(v)}' for k, v in space.active(best.action).items())}",
    ]
    if best.env_params:
        drawn = show_action(best.env_params)
        lines.append(f"# Measured under env_params {drawn} (sampled by the environment; fixed here).")
    nodes = space.full(best.action).get(NUM_NODES, 1)
    if NUM_NODES in best.action or nodes != 1:
        lines.append(f"# num_nodes = {nodes}: set it on the scenario entry (not a test field).")
    lines += [f"# {note}" for note in notes]
    test = best_test(entry, space, best, kind)
    lines.append(f'# Run it: copy this file into a tests dir; in a scenario: test_name = "{test["name"]}".')
    return "\n".join(lines) + "\n\n" + toml.dumps(test)


def measured_as(entry: RunEntry) -> tuple[str, str]:
    """How a reward reads to a user: ``("bus_bw", "GB/s")`` when the reward is the metric itself (identity), else
    ``("reward", "")`` (an inverse or a live server's reward has no unit of its own)."""
    from cloudai.workloads import default_means, units_of

    metric = entry.agent.metrics[0]
    if entry.agent.reward != "identity" or entry.cmd_args.get("live_rl_mode"):
        return "reward", ""
    name = (default_means(entry.workload, entry.cmd_args) if metric == "default" else None) or metric
    return name, units_of(entry.workload, entry.cmd_args).get(metric, "")


def _metric_of(entry: RunEntry, step: Feedback) -> str:
    """``default 1854 ms``: the step's first agent metric in its unit when the reward is a transform of it
    (``inverse``, ``negative``, ``log``); "" otherwise (live RL, a reward of the whole observation)."""
    from cloudai.envs.rewards import GROWS_WITH_METRIC
    from cloudai.workloads import default_means

    if entry.cmd_args.get("live_rl_mode") or entry.agent.reward not in GROWS_WITH_METRIC or not step.observation:
        return ""
    value = step.observation[0]
    if not isinstance(value, int | float) or not math.isfinite(value):
        return ""
    metric = entry.agent.metrics[0]
    name = (default_means(entry.workload, entry.cmd_args) if metric == "default" else None) or metric
    unit = metric_units(entry).get(metric, "")
    return f"{name} {value:.6g}{' ' + unit if unit else ''}"


def metric_units(entry: RunEntry) -> dict[str, str]:
    """Each metric's unit: the workload's, or for a live environment the ones its class declares."""
    from cloudai.gymserver.factory import declared_units
    from cloudai.workloads import units_of

    if entry.cmd_args.get("live_rl_mode"):
        return declared_units(entry.cmd_args)
    return units_of(entry.workload, entry.cmd_args)


def _metrics_text(entry: RunEntry, metrics: dict[str, Any]) -> str:
    """``throughput=41.2 requests/s, queue_depth=3``; a live environment that declares no units is said to."""
    units = metric_units(entry)
    text = ", ".join(f"{k}={_num(v)}{' ' + units[k] if k in units else ''}" for k, v in metrics.items())
    if entry.cmd_args.get("live_rl_mode") and not units:
        text += " (the live environment declares no units)"
    return text


def _confirmed_lines(confirmed: Sequence[Estimate], unit: str) -> list[str]:
    top = winner(confirmed)
    if top is None:
        return []
    lines = [f"# Recommended (best.toml is it): {top.text(unit)}"]
    lines += [f"#   why: {line}" for line in verdict_lines(confirmed, unit)]
    lines.append("# Every confirmed candidate (re-run after the search):")
    return lines + [f"#   {e.text(unit)}" for e in _in_order(confirmed)]


def outcome_lines(
    label: str,
    entry: RunEntry,
    single: Feedback,
    first: Feedback,
    searched: int,
    confirmed: Sequence[Estimate],
    out_dir: Path,
    baseline: float | None = None,
) -> list[str]:
    """What the terminal says at the end of an iteration: one recommendation (the confirmed winner, with why),
    then the search's best single measurement, each against the first trial (``first``: the baseline), then
    (env_params) what the regimes say of the recommendation. ``baseline``: the first trial's configuration's value
    over the env regimes (env_params; ``regime_top.value_in``)."""
    name, unit = measured_as(entry)
    single_text = f"{name} {single.reward:.6g}{' ' + unit if unit else ''}"
    metric = _metric_of(entry, single)
    if name == "reward" and metric:  # a transform of one metric (inverse step time): say the metric too
        single_text = f"{metric} (reward {single.reward:.6g})"
    best = f"best of {searched} step(s) is step {single.step}: {single_text} (a single measurement)"
    top = winner(confirmed)
    if top is None:
        lines = [f"{label}: {best}", f"  action {show_action(single.action)}"]
        versus = versus_first(single.reward, single.action, (first.step, first.action, first.reward), (), unit)
    else:
        lines = [f"{label}: recommended {name}: {top.text(unit)}"]
        lines += [f"  why: {line}" for line in verdict_lines(confirmed, unit)]
        lines += [f"  {e.text(unit)}" for e in _in_order(confirmed) if e is not top]
        lines.append(f"  search: {best}, action {show_action(single.action)}")
        use = use_line(confirmed, (single.step, single.reward, single.action, single.env_params), single_text, unit)
        lines.append(f"  {use}")
        base = baseline if top.regime_aware else None  # the baseline's value over the env regimes, not one draw
        versus = versus_first(top.mean, top.action, (first.step, first.action, first.reward), confirmed, unit, base)
    if entry.cmd_args.get("live_rl_mode"):  # the reward is the server's: its metrics, in their units, say what it was
        metrics = single.info.get("metrics") or dict(zip(entry.agent.metrics, single.observation, strict=False))
        lines.append(f"  search best's metrics: {_metrics_text(entry, metrics)}")
    if versus:
        lines.append(f"  against the baseline: {versus}")
    verdict = regime_verdict(out_dir)
    if verdict:
        lines.append(f"  env_params: {verdict}")
    return lines


def regime_verdict(out_dir: Path) -> str | None:
    """The report's trap/robust verdict for this iteration (None without env_params): the same files, the same
    functions as ``cloudai generate-report``, so the terminal and the report agree. After a confirmation the
    verdict is a caveat on the recommendation (its re-runs already weighed the regimes), naming no other
    configuration."""
    from cloudai.reports.confirm import confirmed_in, headline_step
    from cloudai.reports.env_csv import read_env
    from cloudai.reports.load import entry_of
    from cloudai.reports.regimes import regimes
    from cloudai.reports.trajectory import read_trajectory

    path = out_dir / TRAJECTORY_FILE
    if not (out_dir / ENV_FILE).is_file() or not path.is_file():
        return None
    traj = read_trajectory(path)
    read_env(out_dir / ENV_FILE, traj)
    entry = entry_of(out_dir)
    estimates = confirmed_in(traj, out_dir, entry.regime_spec)
    found = regimes(traj, headline_step(traj, estimates), entry.regimes, alternative=not estimates)
    return None if found is None else found.verdict


def regime_notes(
    steps: Sequence[Feedback], best: Feedback, sampler: EnvParamSampler | None, top: Estimate | None = None
) -> list[str]:
    """The best action's reward per env_params regime and across them; [] without env_params. With ``top``
    (the recommendation, estimated per regime: ``best`` is its step), "across them" is its value over the
    environment as the recommendation states it, not an unweighted mean of the rows above."""
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
    if top is not None and top.regime_aware:
        how = "expected value" if top.objective == "expectation" else "worst-regime value"
        lines.append(f"  over the environment: {how} {top.mean:.6g} (the recommendation's estimate)")
    else:
        lines.append(f"  across regimes: mean {fmean(means):.6g}, min {min(means):.6g}" if means else "  never scored")
    if missing:
        lines.append(f"  never measured in: {', '.join(missing)} (a good result there is unproven)")
    return lines


def _in_order(confirmed: Sequence[Estimate]) -> list[Estimate]:
    """The candidates as the verdict ranks them, then those without a scored re-run."""
    return [*ranked(confirmed), *(e for e in confirmed if not e.rewards)]


def _num(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) and math.isfinite(value) else str(value)
