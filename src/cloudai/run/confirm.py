"""Confirm the best candidates after the search: re-run the top k, so "best" is an estimate, not a lucky draw.

``confirm_plan`` decides how many: ``agent_config.confirm = k`` (0 turns it off), by default 3
when the reward is noisy (env_params, live RL, a workload marked ``noisy``) and off otherwise;
``confirm_repeats`` re-runs per candidate. ``run_confirmation`` ranks the search steps' actions
by mean scored reward, re-runs each of the top k ``confirm_repeats`` times as ordinary steps
(after the search; the env measures again instead of answering from its cache), marks them in
``confirm.csv`` and returns the estimates (``cloudai.reports.confirm``). A resumed run re-runs only
the repeats not yet recorded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError
from cloudai.recordfiles import SCORED
from cloudai.reports.confirm import Estimate, action_key, estimates, read_confirm, write_confirm

if TYPE_CHECKING:
    from cloudai.agents.base import AgentConfig
    from cloudai.config.scenario import RunEntry
    from cloudai.envs.base import BaseGym, Feedback

DEFAULT_CONFIRM = 3


def confirm_plan(entry: RunEntry, config: AgentConfig, live: bool) -> tuple[int, int]:
    """``(k candidates, repeats each)``; k = 0: no confirmation."""
    k = config.confirm
    if k is None:
        k = DEFAULT_CONFIRM if live or entry.agent.env_params or _noisy(entry) else 0
    return k, config.confirm_repeats


def _noisy(entry: RunEntry) -> bool:
    from cloudai.workloads import WORKLOADS

    try:
        return bool(WORKLOADS.get(entry.workload).noisy)
    except ConfigError:  # a live entry's placeholder workload: not known to be noisy
        return False


def search_steps(steps: Sequence[Feedback], out_dir: Path) -> list[Feedback]:
    """``steps`` minus the confirmation re-runs recorded in ``out_dir/confirm.csv``."""
    confirming = {step for step, _, _ in read_confirm(out_dir)}
    return [f for f in steps if f.step not in confirming]


def candidates(search: Sequence[Feedback], k: int) -> list[dict[str, Any]]:
    """The k actions with the highest mean scored reward in the search (ties: the earlier one first)."""
    rewards: dict[str, list[float]] = {}
    first: dict[str, Feedback] = {}
    for f in search:
        if f.status in SCORED and math.isfinite(f.reward):
            key = action_key(f.action)
            rewards.setdefault(key, []).append(f.reward)
            first.setdefault(key, f)
    ranked = sorted(rewards, key=lambda key: (-fmean(rewards[key]), first[key].step))
    return [dict(first[key].action) for key in ranked[:k]]


def run_confirmation(
    env: BaseGym,
    search: Sequence[Feedback],
    recorded: Sequence[Feedback],
    plan: tuple[int, int],
    out_dir: Path,
    parallel: int = 1,
) -> list[Estimate]:
    """Re-run the top ``k`` of ``search`` ``repeats`` times each (``plan``), up to ``parallel`` at once.

    ``recorded``: every step recorded before (search and, on resume, earlier confirmation steps).
    """
    k, repeats = plan
    if k == 0:
        return []
    chosen = candidates(search, k)
    number = {action_key(action): c for c, action in enumerate(chosen, 1)}
    outcome = {f.step: (f.status, f.reward) for f in recorded}
    # Numbered by this ranking; an earlier round's candidate that is no longer in the top k keeps its
    # rows as candidate 0 (still not search steps, left out of the estimates).
    rows = [(step, number.get(action_key(a), 0), a) for step, _, a in read_confirm(out_dir) if step in outcome]
    done = {c: sum(1 for _, cand, _ in rows if cand == c) for c in range(1, len(chosen) + 1)}
    todo = [  # round-robin: every candidate gets its first repeat before any gets its second
        (c, action) for r in range(repeats) for c, action in enumerate(chosen, 1) if done[c] <= r
    ]
    env.measure_again()
    parallel = 1 if env.live else max(1, min(parallel, env.max_in_flight))
    running: dict[int, int] = {}  # step -> candidate
    while todo or running:
        while todo and len(running) < parallel:
            c, action = todo.pop(0)
            step = env.step_async(action)
            running[step] = c
            rows.append((step, c, action))
        for feedback in env.step_wait():
            running.pop(feedback.step, None)
            outcome[feedback.step] = (feedback.status, feedback.reward)
            write_confirm(out_dir, [r for r in rows if r[0] in outcome])
            if env.live and feedback.done:
                env.reset()
    return estimates(rows, outcome)
