"""Report sections that say what a run measured: observations, time spent, trials and why, repeats, Pareto.

Each returns one ``html.section`` (sub-section ids under the agent run's ``base``; ``drawn``: the run's table of
charted steps, ``chartdata.Rows``): ``--observations``
[observations], ``--time`` [time], ``--trials`` [trials], ``--top`` [top], ``--pareto`` [pareto].
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from statistics import fmean, stdev
from typing import TYPE_CHECKING

from cloudai.display import show_action
from cloudai.recordfiles import SCORED
from cloudai.reports import html as h
from cloudai.reports import plots_measure
from cloudai.reports.pareto import pareto_indices
from cloudai.reports.regime_top import regime_top

if TYPE_CHECKING:
    from collections.abc import Sequence

    from cloudai.reports.chartdata import Rows
    from cloudai.reports.confirm import Estimate
    from cloudai.reports.load import AgentRun, Entry
    from cloudai.reports.regime_value import RegimeSpec
    from cloudai.reports.trajectory import Step, Trajectory

MAX_TRIAL_ROWS = 100
TOP_N = 10
Z95 = 1.96  # normal approximation of a 95 % confidence interval of the mean


def observations_section(drawn: Rows, traj: Trajectory, entry: Entry, base: str) -> str:
    specs = plots_measure.observations(drawn, traj, entry)
    charts = h.charts(
        h.chart(f"{base}--observations-{i}", chart, f"observation {metric} per step")
        for i, (chart, metric) in enumerate(zip(specs, entry.agent_metrics, strict=True))
    )
    text = "Every observed metric against step: " + ", ".join(entry.label(m) for m in entry.agent_metrics) + "."
    title = "Observations per step"
    parts = [h.para(text), charts]
    unitless = [m for m in entry.agent_metrics if m not in entry.units]
    if entry.live_rl and unitless:  # a live server may declare none: say so rather than leave the reader guessing
        parts.insert(1, h.note(f"No unit declared by the live environment for: {', '.join(unitless)} (an env_class "
                               "declares them as a class attribute units = {metric: unit})."))  # fmt: skip
    return h.section(f"{base}--observations", title, parts, 3, data="observations")


def time_section(drawn: Rows, traj: Trajectory, base: str) -> str:
    """Per-trial duration and where the time went, by status (ok, cached, failed, pruned, ...)."""
    spent = {status: _seconds(steps) for status, steps in traj.by_status().items()}
    total = sum(sum(v) for v in spent.values()) or 1.0
    rows = [(status, len(v), sum(v), fmean(v), f"{100 * sum(v) / total:.1f} %") for status, v in spent.items()]
    header = ["status", "trials", "time [s]", "mean per trial [s]", "share of time"]
    chart = h.chart(f"{base}--time-chart", plots_measure.durations(drawn, traj), "trial duration per step")
    parts = [chart, h.table(header, rows, status_col=0)]
    if spent.get("pruned") and spent.get("ok"):
        saved = (fmean(spent["ok"]) - fmean(spent["pruned"])) * len(spent["pruned"])
        parts.append(h.note(f"Pruning stopped {len(spent['pruned'])} trial(s) early: about {saved:.1f} s saved "
                            "against running them to the end (at the mean duration of an ok trial)."))  # fmt: skip
    return h.section(f"{base}--time", "Time spent", parts, 3, data="time")


def _seconds(steps: list[Step]) -> list[float]:
    """Each step's duration (0 where none was recorded)."""
    spent = [s.elapsed_s for s in steps]
    return spent if all(map(math.isfinite, spent)) else [t if math.isfinite(t) else 0.0 for t in spent]


def trials_section(ar: AgentRun, base: str) -> str:
    """The trials that did not succeed, each with its status and reason."""
    bad = [s for s in ar.trajectory.steps if s.status not in SCORED]
    if not bad:
        none = [h.note("Every trial succeeded.")]
        return h.section(f"{base}--trials", "Trials that did not succeed", none, 3, data="trials")
    rows = [(s.step, s.status, s.elapsed_s, ar.reasons.get(s.step, ""), show_action(s.action, sort_keys=True))
            for s in bad[:MAX_TRIAL_ROWS]]  # fmt: skip
    parts = [h.table(["step", "status", "duration [s]", "reason", "action"], rows, status_col=1)]
    if len(bad) > MAX_TRIAL_ROWS:
        parts.append(h.note(f"{len(bad) - MAX_TRIAL_ROWS} more in trajectory.csv / trials.csv."))
    return h.section(f"{base}--trials", f"Trials that did not succeed ({len(bad)})", parts, 3, data="trials")


def top_section(traj: Trajectory, entry: Entry, base: str, confirmed: Sequence[Estimate] = ()) -> str:
    """The best configurations by mean reward over their measurements, with a 95 % CI and n. With env_params
    regimes: by the recommendation's own estimate (``regime_top``), never a mean pooled across regimes."""
    spec = entry.regime_spec
    if spec is not None and traj.scored():
        return _regime_top(traj, entry, base, spec, confirmed)
    groups: dict[str, list[float]] = defaultdict(list)
    first: dict[str, int] = {}
    for s in traj.scored():
        groups[s.key].append(s.reward)
        first.setdefault(s.key, s.step)
    if not groups:
        none = [h.note("No ok or cached trial yet.")]
        return h.section(f"{base}--top", "Top 10 configurations", none, 3, data="top")
    ranked = sorted(groups, key=lambda k: (-fmean(groups[k]), first[k]))[:TOP_N]
    actions = {s.key: s.action for s in traj.steps}
    rows = []
    for key in ranked:
        values = groups[key]
        ci = Z95 * stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None
        mean = f"{fmean(values):.6g}" + (f" ± {ci:.3g}" if ci is not None else "")
        rows.append([first[key], mean, len(values), *(_cell(actions[key].get(k)) for k in traj.knobs)])
    header = ["first step", f"mean {entry.reward_label} ± 95 % CI", "n", *traj.knobs]
    note = h.note("A configuration measured several times (env_params, repeats) shows its mean, not its best draw.")
    return h.section(f"{base}--top", f"Top {len(rows)} configurations", [h.table(header, rows), note], 3, data="top")


def _regime_top(traj: Trajectory, entry: Entry, base: str, spec: RegimeSpec, confirmed: Sequence[Estimate]) -> str:
    rows = []
    for r in regime_top(traj, spec, confirmed, TOP_N):
        value = "—" if math.isnan(r.value) else f"{r.value:.6g}" + ("" if math.isnan(r.ci95) else f" ± {r.ci95:.3g}")
        per = [f"{c.mean:.4g} (n={c.n})" if c.rewards else f"— ({c.failed} failed)" if c.failed else "—"
               for c in r.cells]  # fmt: skip
        failed = f"{r.failure_share:.0%}" if r.failure_share else ""
        rows.append([r.first, r.rank, value, r.n, failed, *per, *(_cell(r.action.get(k)) for k in traj.knobs)])
    how = "expected value" if spec.objective == "expectation" else "worst-regime value"
    header = ["first step", "rank", f"{how} ± 95 % CI", "n", "failed", *(spec.label(r) for r in spec.weights),
              *traj.knobs]  # fmt: skip
    note = h.note(
        f"Ranked as the recommendation is ({spec.describe()}): the confirmed candidates first, in the verdict's "
        "order, then the other configurations measured in every regime, then those that were not (no value: a "
        "regime never measured is not guessed). Each regime column is the mean of every measurement there."
    )
    title = f"Top {len(rows)} configurations"
    return h.section(f"{base}--top", title, [h.table(header, rows), note], 3, data="top")


def pareto_section(drawn: Rows, traj: Trajectory, entry: Entry, base: str) -> str | None:
    """With two or more objectives: the front (scatter or parallel coordinates) and its table; else None."""
    names = list(entry.objectives)
    if len(names) < 2:
        return None
    slots = [entry.agent_metrics.index(n) for n in names if n in entry.agent_metrics]
    directions = [entry.objectives[n] for n in names]
    measured = [s for s in traj.steps if s.status == "ok"]
    points = [[_num(s.observation, i) for i in slots] for s in measured]
    keep = [i for i, p in enumerate(points) if all(math.isfinite(v) for v in p)]
    measured, points = [measured[i] for i in keep], [points[i] for i in keep]
    if len(slots) != len(names) or not points:
        empty = [h.note("No ok trial measured every objective.")]
        return h.section(f"{base}--pareto", "Pareto front", empty, 3, data="pareto")
    front = pareto_indices(points, directions)
    header = ["step", *(f"{entry.label(n)} ({d})" for n, d in zip(names, directions, strict=True)), *traj.knobs]
    rows = [[measured[i].step, *points[i], *(_cell(measured[i].action.get(k)) for k in traj.knobs)] for i in front]
    alt = "Pareto front of " + " vs ".join(names)
    labels = [entry.label(n) for n in names]
    text = (f"{len(front)} of {len(points)} ok trials are Pareto-optimal (none better in every objective); "
            "grey: dominated. Files: pareto.csv, pareto/<step>.toml.")  # fmt: skip
    parts = [
        h.para(text),
        h.chart(f"{base}--pareto-chart", plots_measure.pareto(drawn, measured, points, slots, labels, directions), alt),
        h.table(header, rows),
    ]
    return h.section(f"{base}--pareto", "Pareto front", parts, 3, data="pareto")


def _num(observation: list[float], index: int) -> float:
    value = observation[index] if index < len(observation) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def _cell(value: object) -> object:
    return value if value is None or isinstance(value, bool | int | float | str) else json.dumps(value)
