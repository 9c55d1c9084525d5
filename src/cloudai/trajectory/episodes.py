"""``episodes.jsonl``: a live-RL run's steps as a trainer loads them, one JSON object per line.

Why JSON Lines and not Parquet: it is appended and flushed a row at a time like ``trajectory.csv`` (a killed run
keeps every written step; Parquet is written a row group at a time and needs pyarrow, ~100 MB, which cloudai
does not depend on), and both ``pandas.read_json(path, lines=True)`` and Hugging Face ``datasets``'
``load_dataset("json", data_files=path)`` read it without options. Every line has the same keys and value types
(a value not measured is ``null``), so a loader infers one schema:

``step`` (the run's global step, as in trajectory.csv), ``episode`` (the global episode id of trajectory.csv),
``env_id`` (which of the run's environments, 0..max_parallel-1), ``episode_in_env`` (that environment's own episode
count, from 1), ``step_in_episode`` (from 1), ``observation`` (a list, ``agent_metrics`` order: run.json names
them; for an environment whose observation is structured, an object of its leaves as it declares them: nested
dicts, a box of width > 1 a list, a categorical an int), ``action`` (an object), ``reward``, ``terminated`` (the
environment said done), ``truncated`` (the environment said its episode was cut short), ``info`` (``status``,
``reason``, ``env_params``).

Resume: lines of steps the trajectory no longer holds (an interrupted write) are dropped by rewriting the file to
the steps at or below ``last_step``, atomically, before appending.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cloudai.atomicfile import atomic_write
from cloudai.errors import ConfigError
from cloudai.readfile import UnsafeFileError, read_regular

EPISODES_FILE = "episodes.jsonl"
_MAX_BYTES = 1 << 30


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


class EpisodeLog:
    """Appends one line per step to ``directory/episodes.jsonl`` (see the module docstring)."""

    def __init__(self, directory: Path, last_step: int, *, resume: bool = False) -> None:
        path = directory / EPISODES_FILE
        kept = _kept_lines(path, last_step) if resume else []
        atomic_write(path, "".join(kept))
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 (held open for the run)

    def append(
        self,
        *,
        step: int,
        episode: int,
        env_id: int,
        episode_in_env: int,
        step_in_episode: int,
        observation: Sequence[float] | Mapping[str, Any],
        action: Mapping[str, Any],
        reward: float,
        terminated: bool,
        truncated: bool,
        status: str,
        reason: str,
        env_params: Mapping[str, Any],
    ) -> None:
        record = {
            "step": step,
            "episode": episode,
            "env_id": env_id,
            "episode_in_env": episode_in_env,
            "step_in_episode": step_in_episode,
            "observation": dict(observation) if isinstance(observation, Mapping) else [_finite(v) for v in observation],
            "action": dict(action),
            "reward": _finite(reward),
            "terminated": terminated,
            "truncated": truncated,
            "info": {"status": status, "reason": reason, "env_params": dict(env_params)},
        }
        self._fh.write(json.dumps(record, sort_keys=False, default=str, allow_nan=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def _kept_lines(path: Path, last_step: int) -> list[str]:
    """The whole, parseable lines of steps up to ``last_step`` (what trajectory.csv still holds)."""
    try:
        text = read_regular(path, _MAX_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    except UnsafeFileError as exc:
        raise ConfigError(f"refused: {exc}", file=path, hint="this is not a record cloudai wrote") from None
    kept: list[str] = []
    for line in text.split("\n")[:-1]:  # the text after the last newline is a torn line
        try:
            step = json.loads(line)["step"]
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(step, int) and step <= last_step:
            kept.append(line + "\n")
    return kept
