"""What an agent-driven iteration leaves once its search and confirmation are over and its env is closed.

``best.toml`` (the confirmed winner when there is one, from its best search step), the terminal's outcome lines, the
status counts, the Pareto front (several objectives), trials.csv and the Optuna study's dashboard command. The exit
code is 1 when no trial succeeded (nothing to recommend), else 0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.atomicfile import atomic_write
from cloudai.envs.base import BaseGym, Feedback
from cloudai.recordfiles import SCORED, TRAJECTORY_FILE
from cloudai.reports.confirm import Estimate, action_key, confirmed_in, winner
from cloudai.reports.regime_top import value_in
from cloudai.run import Echo
from cloudai.run.best import BEST_FILE, best_text, outcome_lines, regime_notes
from cloudai.run.tally import Tally

if TYPE_CHECKING:
    from cloudai.agents.base import BaseAgent
    from cloudai.plan.route import CheckedEntry
    from cloudai.reports.regime_value import RegimeSpec
    from cloudai.reports.trajectory import Trajectory


@dataclass(frozen=True)
class Found:
    """What an iteration's search found (``agent.run()`` and the confirmation re-runs)."""

    agent: BaseAgent
    budget: int  # agent_steps
    ran: int  # the steps the agent ran
    searched: int  # the search's steps, failed ones too
    search: list[Feedback]  # the search steps (confirmation's left out)
    confirmed: list[Estimate]


def conclude(
    checked: CheckedEntry,
    label: str,
    env: BaseGym,
    spec: RegimeSpec | None,
    tally: Tally,
    found: Found,
    out_dir: Path,
    echo: Echo,
) -> int:
    """best.toml and what the terminal says of the iteration ``label`` (``<test id>/<iteration>``); its exit code."""
    entry, search, confirmed = checked.entry, found.search, found.confirmed
    if spec is not None and confirmed:  # every recorded step (failed ones too), as the report reads them
        confirmed = confirmed_in(_recorded(out_dir), out_dir, spec)
    if found.ran < found.budget:
        why = found.agent.stop_reason or "the agent had nothing left to try"
        echo(f"note: {label}: stopped after {found.ran} of {found.budget} step(s) (agent_steps): {why}")
    recorded = tally.progress.done
    best = max((f for f in search if f.status in SCORED), key=lambda f: (f.reward, -f.step), default=None)
    if best is None:
        echo(f"{label}: no trial succeeded in {recorded} step(s); see {out_dir / 'trajectory.csv'}")
        return 1
    single, top = best, winner(confirmed)
    first = min((f for f in search if f.status in SCORED), key=lambda f: f.step)  # the baseline
    if top is not None:  # the TOML of the confirmed winner, from its best search step (its env_params)
        best = max((f for f in search if action_key(f.action) == action_key(top.action) and f.status in SCORED),
                   key=lambda f: f.reward)  # fmt: skip
    steps = tally.steps()
    regimes = regime_notes(steps, best, env.env_param_sampler(), top)
    notes = [*regimes, *found.agent.best_notes()]
    text = best_text(entry, checked.space, best, recorded, notes, confirmed=confirmed)
    path = atomic_write(out_dir / BEST_FILE, text)
    base = value_in(_recorded(out_dir), action_key(first.action), spec) if spec is not None and top else None
    for line in outcome_lines(label, entry, single, first, found.searched, confirmed, out_dir, base):
        echo(line)
    echo(f"  test TOML: {path}")
    for line in regimes:
        echo(f"  {line}")
    _after_run(checked, steps, tally.counts, out_dir, echo, tuple(env.define_observation_space()))
    return 0


def _recorded(out_dir: Path) -> Trajectory:
    """The iteration's trajectory.csv with env.csv: every step, as the report reads it."""
    from cloudai.recordfiles import ENV_FILE
    from cloudai.reports.env_csv import read_env
    from cloudai.reports.trajectory import read_trajectory

    traj = read_trajectory(out_dir / TRAJECTORY_FILE)
    read_env(out_dir / ENV_FILE, traj)
    return traj


def _after_run(
    checked: CheckedEntry,
    steps: list[Feedback],
    counts: Counter[str],
    out_dir: Path,
    echo: Echo,
    observed: tuple[str, ...],
) -> None:
    """Status counts, the Pareto front (several objectives), trials.csv and the Optuna study's dashboard command.

    ``steps``: the scored ones (and every recorded one on resume); ``counts``: every step's status; ``observed``:
    the observation's names (a live server's own when the test names no ``agent_metrics``)."""
    from cloudai.reports.trials_csv import write_trials
    from cloudai.run.pareto_out import write_pareto

    if set(counts) - {"ok"}:
        echo("  steps: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda x: -x[1])))
    write_pareto(checked.entry, checked.space, steps, out_dir, echo, recorded=counts.total())
    if (out_dir / TRAJECTORY_FILE).is_file():
        write_trials(out_dir, observed)
    if checked.entry.agent.name == "optuna":  # only its runs have a study (and only they may import optuna)
        from cloudai.agents.optuna_storage import JOURNAL_FILE, dashboard_command

        if (out_dir / JOURNAL_FILE).is_file():
            echo(f"  Optuna study: {dashboard_command(out_dir)}")
