"""Confirm the best candidates after the search: re-run the top k, so "best" is an estimate, not a lucky draw.

``confirm_plan`` decides how many: ``agent_config.confirm = k`` (0 turns it off), by default 3
when the reward is noisy (env_params, live RL, a workload marked ``noisy``) and off otherwise;
``confirm_repeats`` re-runs per candidate. ``run_confirmation`` ranks the search steps' actions
by mean scored reward, re-runs each of the top k ``confirm_repeats`` times as ordinary steps
(after the search; the env measures again instead of answering from its cache), marks them in
``confirm.csv`` and returns the estimates (``cloudai.reports.confirm``). A resumed run re-runs only
the repeats not yet recorded.

With env_params (offline): a pooled mean would mix regimes, and each candidate drawing its own environment
would make the verdict luck. So candidates are chosen by their value over the regimes they were measured in,
``confirm_repeats`` re-runs are made *per regime* (stratified draws: ``EnvParamSampler.confirmation_draw``),
re-run k of every candidate is under the same draw k (common random numbers: env.csv shows equal env_params,
confirm.csv the ``draw``), and the estimates combine every measurement per regime with the env's weights
(``cloudai.reports.regime_value``). A live env draws per episode: its confirmation is as without env_params.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError
from cloudai.recordfiles import SCORED
from cloudai.reports.confirm import ConfirmRow, Estimate, Measured, action_key, estimates, read_confirm, write_confirm
from cloudai.reports.regime_value import RegimeSpec, cells, selection_value

if TYPE_CHECKING:
    from cloudai.agents.base import AgentConfig
    from cloudai.config.scenario import RunEntry
    from cloudai.envs.base import BaseGym, Feedback

DEFAULT_CONFIRM = 3


def confirm_plan(entry: RunEntry, config: AgentConfig, live: bool, regimes: int = 1) -> tuple[int, int]:
    """``(k candidates, re-runs each)``; k = 0: no confirmation. ``regimes``: how many env_params regimes the
    offline env's confirmation draws stratify over (``confirm_repeats`` re-runs in each)."""
    k = config.confirm
    if k is None:
        k = DEFAULT_CONFIRM if live or entry.agent.env_params or _noisy(entry) else 0
    return k, config.confirm_repeats * (1 if live else regimes)


def regime_spec(env: BaseGym, config: AgentConfig) -> RegimeSpec | None:
    """The env's regimes and the objective over them (None: no env_params, or a live env, whose env_params
    are drawn per episode and cannot be held equal across candidates)."""
    sampler = env.env_param_sampler()
    if sampler is None or env.live or not env.draws_on_request:
        return None
    return RegimeSpec(sampler.bins(), config.regime_objective)


def _noisy(entry: RunEntry) -> bool:
    from cloudai.workloads import WORKLOADS

    try:
        return bool(WORKLOADS.get(entry.workload).noisy)
    except ConfigError:  # a live entry's placeholder workload: not known to be noisy
        return False


def search_steps(steps: Sequence[Feedback], out_dir: Path) -> list[Feedback]:
    """``steps`` minus the confirmation re-runs recorded in ``out_dir/confirm.csv``."""
    confirming = {row.step for row in read_confirm(out_dir)}
    return [f for f in steps if f.step not in confirming]


def candidates(search: Sequence[Feedback], k: int, spec: RegimeSpec | None = None) -> list[dict[str, Any]]:
    """The k actions with the highest mean scored reward in the search (ties: the earlier one first). With
    ``spec``: the highest value over the regimes (``selection_value``), not a pooled mean."""
    rewards: dict[str, list[float]] = {}
    first: dict[str, Feedback] = {}
    for f in search:
        if f.status in SCORED and math.isfinite(f.reward):
            key = action_key(f.action)
            rewards.setdefault(key, []).append(f.reward)
            first.setdefault(key, f)
    score = {key: fmean(r) for key, r in rewards.items()}
    if spec is not None:
        measured = _measured(search).values()
        everyone = cells(spec, (m[1:] for m in measured))
        typical = {c.regime: c.mean for c in everyone if c.rewards}
        score = {key: selection_value(cells(spec, (m[1:] for m in measured if m[0] == key)), spec.objective,
                                      typical) for key in rewards}  # fmt: skip
    ranked = sorted(rewards, key=lambda key: (-score[key], first[key].step))
    return [dict(first[key].action) for key in ranked[:k]]


def _measured(steps: Iterable[Feedback]) -> dict[int, Measured]:
    return {f.step: (action_key(f.action), f.env_params, f.status, f.reward) for f in steps}


def run_confirmation(
    env: BaseGym,
    search: Sequence[Feedback],
    recorded: Sequence[Feedback],
    plan: tuple[int, int],
    out_dir: Path,
    parallel: int = 1,
    spec: RegimeSpec | None = None,
) -> list[Estimate]:
    """Re-run the top ``k`` of ``search`` ``repeats`` times each (``plan``), up to ``parallel`` at once.

    ``recorded``: every step recorded before (search and, on resume, earlier confirmation steps). ``spec``
    (``regime_spec``): re-run k of every candidate is under the env's ``confirmation_draw(k)``, the same for
    all (common random numbers), and the estimates are per regime over every measurement.
    """
    k, repeats = plan
    if k == 0:
        return []
    sampler = env.env_param_sampler() if spec is not None else None
    chosen = candidates(search, k, spec)
    number = {action_key(action): c for c, action in enumerate(chosen, 1)}
    outcome = {f.step: (f.status, f.reward) for f in recorded}
    measured = _measured(recorded)
    # Numbered by this ranking; an earlier round's candidate that is no longer in the top k keeps its
    # rows as candidate 0 (still not search steps, left out of the estimates).
    rows = [
        r._replace(candidate=number.get(action_key(r.action), 0)) for r in read_confirm(out_dir) if r.step in outcome
    ]
    todo = _todo(rows, len(chosen), repeats)
    env.measure_again()
    parallel = 1 if env.live else max(1, min(parallel, env.max_in_flight))
    running: dict[int, int] = {}  # step -> candidate
    while todo or running:
        while todo and len(running) < parallel:
            c, draw = todo.pop(0)
            action = chosen[c - 1]
            if sampler is not None:
                step = env.step_async(action, env_params=sampler.confirmation_draw(draw))
            else:
                step = env.step_async(action)
            running[step] = c
            rows.append(ConfirmRow(step, c, action, draw))
        for feedback in env.step_wait():
            running.pop(feedback.step, None)
            outcome[feedback.step] = (feedback.status, feedback.reward)
            measured.update(_measured([feedback]))
            write_confirm(out_dir, [r for r in rows if r.step in outcome])
            if env.live and feedback.done:
                env.reset()
    return estimates(rows, outcome, spec, measured)


def _todo(rows: Sequence[ConfirmRow], k: int, repeats: int) -> list[tuple[int, int]]:
    """``(candidate, draw)`` re-runs not yet recorded, draw-major (every candidate gets draw 0 before any gets
    draw 1, so an interrupted confirmation leaves pairs). A row of a file from before draws were recorded (draw
    -1) stands for its candidate's lowest draw not yet taken."""
    done = {(r.candidate, r.draw) for r in rows if r.draw >= 0}
    legacy = {c: sum(1 for r in rows if r.candidate == c and r.draw < 0) for c in range(1, k + 1)}
    todo = []
    for draw in range(repeats):
        for c in range(1, k + 1):
            if (c, draw) in done:
                continue
            if legacy[c]:
                legacy[c] -= 1
                continue
            todo.append((c, draw))
    return todo
