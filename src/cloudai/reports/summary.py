"""The short forms of a run: ``summary.csv`` (one row per test iteration) and the terminal table.

``summary.csv`` columns (``SUMMARY_COLUMNS``): ``kind`` is ``plain``, ``dse`` or ``live_rl``. For plain jobs
``status``, ``duration_s`` and ``metric`` (the ``default`` metric) come from ``job.json``/``metrics.json``.
For agent-driven tests ``status`` is ``failed`` (a hard failure, ``dse_failure.txt``, or no step scored),
``incomplete`` (stopped early without a ``best.toml``: Ctrl-C, a kill) or ``ok``, and ``steps, ok_steps,
best_step, best_reward, best_action`` describe the search. With env_params and a confirmation, ``best_*`` is
the recommendation (its best search step, its value over the regimes): the luckiest single draw would be the
configuration that happened to meet the quietest environment.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING

from cloudai.atomicfile import atomic_write
from cloudai.display import show_action
from cloudai.recordfiles import SCORED
from cloudai.reports.confirm import Estimate, headline_step, ranked, winner
from cloudai.reports.load import AgentRun, Entry, RunData, load_run

if TYPE_CHECKING:
    from rich.console import Console

    from cloudai.reports.trajectory import Step

SUMMARY_FILE = "summary.csv"
REPORT_FILE = "report.html"
SUMMARY_COLUMNS = (
    "test_id",
    "test_name",
    "iteration",
    "kind",
    "status",
    "duration_s",
    "metric",
    "steps",
    "ok_steps",
    "best_step",
    "best_reward",
    "best_action",
)


def summary_rows(run: RunData) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for job in run.jobs:
        rows.append(
            {
                "test_id": job.test_id,
                "test_name": run.entry(job.test_id).test_name,
                "iteration": job.iteration,
                "kind": "plain",
                "status": job.status,
                "duration_s": None if job.duration_s is None else round(job.duration_s, 3),
                "metric": job.headline,
            }
        )
    for ar in run.agent_runs:
        entry, traj = run.entry(ar.test_id), ar.trajectory
        best = traj.best()
        row: dict[str, object] = {
            "test_id": ar.test_id,
            "test_name": entry.test_name,
            "iteration": ar.iteration,
            "kind": "live_rl" if entry.live_rl else "dse",
            "status": ar.status,
            "steps": len(traj.steps),
            "ok_steps": traj.status_counts().get("ok", 0),
        }
        top = winner(ar.confirmed)
        if top is not None and top.regime_aware:  # env_params: the recommendation, not the luckiest draw
            best = headline_step(traj, ar.confirmed)
        if best is not None:
            reward = top.mean if top is not None and top.regime_aware else best.reward
            row.update(best_step=best.step, best_reward=reward)
            row["best_action"] = json.dumps(best.action, sort_keys=True)
        rows.append(row)
    return rows


def write_summary_csv(run: RunData) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    for row in summary_rows(run):
        writer.writerow(["" if row.get(c) is None else row[c] for c in SUMMARY_COLUMNS])
    return atomic_write(run.path / SUMMARY_FILE, buf.getvalue())


def print_summary(run_dir: Path, console: Console | None = None, *, rendering: int | None = None) -> None:
    """Status counts per test, the best trial of agent-driven tests, and where the report is (or how to make it).

    Raises ``ConfigError`` when ``run_dir`` is not a results dir (see ``load_run``).
    """
    from rich.console import Console
    from rich.table import Table

    run = load_run(run_dir)
    console = console or Console()
    driven = bool(run.agent_runs)
    table = Table(title=f"{run.scenario}: {run_dir}")
    for column in ("test", "kind", "iterations", "status", *(("best",) if driven else ())):
        table.add_column(column, overflow="fold")
    notes: list[str] = []  # best actions and incomplete runs, below the table: too wide for a column
    for entry in run.entries:
        jobs = [j for j in run.jobs if j.test_id == entry.id]
        agent_runs = [a for a in run.agent_runs if a.test_id == entry.id]
        counts = Counter(j.status for j in jobs)
        for ar in agent_runs:
            counts.update(ar.trajectory.status_counts())
        kind = "live RL" if entry.live_rl else "DSE" if entry.agent_driven else "plain"
        status = ", ".join(f"{_style(s)}{n} {s}[/]" for s, n in sorted(counts.items())) or "no results"
        best = _best(agent_runs)
        confirmed = [(w, ar) for ar in agent_runs if (w := winner(ar.confirmed)) is not None]
        best_of = ranked([w for w, _ in confirmed])  # the recommendation's own rule, across iterations
        top = next((c for c in confirmed if best_of and c[0] is best_of[0]), None)
        if top is not None:
            text = top[0].text(entry.reward_unit)
            notes.append(f"Recommended for {entry.id} (iteration {top[1].iteration}, best.toml): {text}")
        elif best is not None:
            notes.append(f"Best of {entry.id}: {show_action(entry.active(best.action), sort_keys=True)}")
        if any(ar.status == "incomplete" for ar in agent_runs):
            notes.append(
                f"{entry.id} is incomplete: it stopped before its last step; `--resume {run_dir}` continues it"
            )
        row = [f"{entry.id} ({entry.test_name})", kind, str(len(jobs) + len(agent_runs)), status]
        if driven:
            row.append(_best_cell(entry, agent_runs, best, top[0] if top else None))
        table.add_row(*row)
    console.print(table)
    for line in notes:
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    report = run_dir / REPORT_FILE
    where = report if report.exists() else f"run `cloudai generate-report {run_dir}`"
    if rendering is not None:
        where = f"{report} (being written in the background by process {rendering})"
    console.print(f"Report: {where}", soft_wrap=True, markup=False, highlight=False)


def _best_cell(entry: Entry, agent_runs: list[AgentRun], best: Step | None, top: Estimate | None) -> str:
    """The best as the user measures it: ``step_time_s 8.08 s (step 12)`` when the reward is a transform of one
    metric (``Entry.objective_metric``), else the reward. After a confirmation, its mean ± CI; a non-linear
    transform's mean is not the metric's, so there the metric's mean over the re-runs leads and the reward's
    estimate (what the verdict ranked) follows."""
    if not agent_runs:
        return ""
    metric = entry.objective_metric
    if top is not None:
        ci = "" if math.isnan(top.ci95) else f" ± {top.ci95:.2g}"
        how = "over the env regimes" if top.regime_aware else "mean"
        if metric is None:
            return f"reward {top.mean:.4g}{ci} ({how} of n={top.n}, confirmed)"
        if entry.reward_function in ("identity", "negative"):  # linear: the metric's own estimate
            sign = 1.0 if entry.reward_function == "identity" else -1.0
            return f"{entry.measured(sign * top.mean, ci)} ({how} of n={top.n}, confirmed)"
        runs = next(ar for ar in agent_runs if top in ar.confirmed).trajectory
        values = [s.observation[0] for s in runs.steps if s.step in top.steps and s.scored and s.observation]
        values = [v for v in values if not math.isnan(v)]
        if not values or top.regime_aware:
            return f"reward {top.mean:.4g}{ci} ({how} of n={top.n}, confirmed; reward = {entry.reward_function})"
        return f"{entry.measured(fmean(values))} (mean of {len(values)} confirmed re-runs; reward {top.mean:.4g}{ci})"
    if best is None:
        return "—"
    if metric is None or not best.observation or math.isnan(best.observation[0]):
        return f"reward {best.reward:.4g} (step {best.step})"
    return f"{entry.measured(best.observation[0])} (step {best.step})"


def _best(agent_runs: list[AgentRun]) -> Step | None:
    return max(
        (b for ar in agent_runs if (b := ar.trajectory.best()) is not None), key=lambda b: b.reward, default=None
    )


def _style(status: str) -> str:
    return "[green]" if status in SCORED else "[yellow]" if status in ("constraint", "infeasible") else "[red]"
