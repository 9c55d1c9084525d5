"""What a resumed env starts from: its recorded rows as the agent saw them, its unrecorded job dirs set aside.

Shared by the offline env, its live-RL sibling and ``--warm-start`` (``cloudai.run.warm``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cloudai.envs.base import Feedback
from cloudai.recordfiles import Row
from cloudai.space import Categorical, Space, env_cell


def replayed(row: Row, space: Space, metrics: tuple[str, ...]) -> Feedback:
    """A recorded row as the agent saw it, env_params typed back through the space (shared with the live env)."""
    env = {name: _typed(space, name, text) for name, text in row.env.items()}
    info = {"status": row.status, "step": row.step, "episode": row.episode, "env_params": env, "reason": row.reason,
            "metrics": dict(zip(metrics, row.observation, strict=False)), "replayed": True}  # fmt: skip
    return Feedback(row.step, row.episode, row.action, row.reward, row.observation, row.status, False, info)


def _typed(space: Space, name: str, text: str) -> Any:
    """An env.csv cell back to the value it was written from (a candidate, or a number for a range)."""
    dim = next((d for d in space.dims if d.name == name), None)
    if isinstance(dim, Categorical):
        return next((c for c in dim.choices if env_cell(c) == text), text)
    if dim is not None:
        return round(float(text)) if dim.dtype == "int" else float(text)
    return text


def set_aside_unrecorded(out_dir: Path, last_step: int) -> None:
    """Rename the job dirs of steps after the last recorded one (trials cancelled or in flight when the run
    stopped: never recorded) to ``<step>.cancelled`` (``.cancelled.2``...), so a resumed run numbers its steps as
    an uninterrupted run would (env_params are drawn per step number: env.csv stays identical) and no recorded
    trial's files are touched."""
    if not out_dir.is_dir():
        return
    for job_dir in out_dir.iterdir():
        if job_dir.name.isdigit() and int(job_dir.name) > last_step and job_dir.is_dir():
            target, n = out_dir / f"{job_dir.name}.cancelled", 1
            while target.exists():
                n += 1
                target = out_dir / f"{job_dir.name}.cancelled.{n}"
            job_dir.rename(target)
