"""``--warm-start DIR[,DIR...]``: earlier runs' trials told to a new run's agent before its first ask.

A warm-start trial is a recorded step of an earlier results dir, for a test of the same id
(every iteration's ``trajectory.csv``). It is told only when its action names exactly the
knobs the new agent chooses and every value lies in the new space (a list's candidate, inside
a range); the others are skipped and counted, and the count is printed. The trials inform
the agent (optuna adds them to its study, the bandit to its arms; the sweeps ignore them) but
never become the new run's best: they were measured under another definition of the trial.

``check_warm_dirs`` runs before anything is written (bad input: exit 2): each DIR must be a
results dir (``run.json``) holding at least one of this scenario's agent-driven tests.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.envs.base import Feedback
from cloudai.envs.resume import replayed
from cloudai.errors import ConfigError
from cloudai.recordfiles import ENV_FILE, SCORED, TRAJECTORY_FILE
from cloudai.space import point_problem
from cloudai.trajectory.records import read_trajectory

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.space import Space


@dataclass(frozen=True)
class WarmStart:
    """The trials of earlier runs that fit one entry's space, and how many did not."""

    told: list[Feedback]
    skipped: int
    dirs: tuple[Path, ...]

    def note(self, test_id: str) -> str:
        where = ", ".join(str(d) for d in self.dirs)
        why = "knobs or values outside the new space, or a reward that is not a finite number"
        skipped = f"; {self.skipped} skipped ({why})" if self.skipped else ""
        return f"{test_id}: warm start from {where}: {len(self.told)} earlier trial(s) told to the agent{skipped}"


def parse_warm_dirs(text: str | None) -> tuple[Path, ...]:
    """``DIR[,DIR...]`` as paths (empty parts ignored); a value that names no dir (``","``) is a ``ConfigError``:
    starting cold when a warm start was asked for would be a silent surprise."""
    dirs = tuple(Path(part.strip()) for part in (text or "").split(",") if part.strip())
    if text is not None and not dirs:
        raise ConfigError(
            f"{text!r} names no directory", field="--warm-start", hint="pass DIR[,DIR...]: earlier results dirs"
        )
    return dirs


def check_warm_dirs(plan: Plan, dirs: tuple[Path, ...]) -> None:
    """Each dir is a results dir holding a trajectory of one of this plan's agent-driven tests; else ConfigError."""
    ids = [c.entry.id for c in plan.checked.values() if c.agent_driven]
    for directory in dirs:
        if not (directory / "run.json").is_file():
            raise ConfigError(
                "not a cloudai results directory (no run.json)",
                file=directory,
                field="--warm-start",
                hint="pass a results dir that `cloudai run` wrote (comma-separate several)",
            )
        found = [it_dir for test_id in ids for it_dir in _trajectories(directory, test_id)]
        for it_dir in found:  # each reads back whole before anything is written (a damaged row names its line)
            read_trajectory(it_dir, _env_names(it_dir))
        if not found:
            raise ConfigError(
                f"holds no trajectory.csv of this scenario's agent-driven test(s) {ids}",
                file=directory,
                field="--warm-start",
                hint="warm start from a run of a test with the same id",
            )


def load_warm_start(
    dirs: tuple[Path, ...], test_id: str, space: Space, full_space: Space, metrics: tuple[str, ...]
) -> WarmStart:
    """Every recorded step of ``test_id`` in ``dirs`` whose action is a point of ``space`` (the agent's).

    ``full_space`` (env_params included) types the recorded env_params back; ``metrics`` names the observation.
    """
    told: list[Feedback] = []
    skipped = 0
    for directory in dirs:
        for iteration_dir in _trajectories(directory, test_id):
            for row in read_trajectory(iteration_dir, _env_names(iteration_dir)):
                infinite = row.status in SCORED and not math.isfinite(row.reward)  # not a trial Optuna can rank
                if infinite or point_problem(space, row.action) is not None:
                    skipped += 1
                    continue
                feedback = replayed(row, full_space, metrics)
                told.append(replace(feedback, info={**feedback.info, "warm_start": True, "from": str(iteration_dir)}))
    return WarmStart(told, skipped, dirs)


def _trajectories(directory: Path, test_id: str) -> list[Path]:
    test_dir = directory / test_id
    if not test_dir.is_dir():
        return []
    found = [d for d in test_dir.iterdir() if d.is_dir() and (d / TRAJECTORY_FILE).is_file()]
    return sorted(found, key=lambda d: (not d.name.isdigit(), int(d.name) if d.name.isdigit() else 0, d.name))


def _env_names(iteration_dir: Path) -> tuple[str, ...]:
    """The env_params that run recorded (env.csv's header), so its rows read back consistently."""
    path = iteration_dir / ENV_FILE
    if not path.is_file():
        return ()
    with path.open(newline="", encoding="utf-8", errors="replace") as fh:
        header = next(csv.reader(fh), [])
    return tuple(header[1:])
