"""The workload contract: argv from one trial's scalar arguments, metrics from its job dir.

A workload is system-agnostic: it never starts processes itself. Contract:

* ``args_model`` (pydantic, ``extra="forbid"``) validates one trial's scalar ``cmd_args``;
  ``validate`` applies it to every candidate of a swept space at load time.
* ``argv(args, job)`` is the command for one trial; values are passed as separate argv
  entries (never through a shell unless the workload *is* a shell command).
* ``constraint(args)`` returns why a point is infeasible (recorded as a ``constraint``
  step without running anything), or None.
* ``progress(job_dir)`` (optional): the intermediate values of the headline (first) metric the
  running job has reported so far, as ``[(step, value), ...]`` in step order; the DSE env polls it
  while a trial runs, for pruning. Default: none. It must be cheap and tolerate a torn last line.
* ``read_metrics(job_dir)`` reads ``metrics.json`` (``{"name": number}``; ``default`` is the
  headline metric) and raises ``WorkloadError`` when it is missing or malformed.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from cloudai.config.tomlfile import problems_from
from cloudai.errors import Problem, WorkloadError
from cloudai.space import Categorical, Space

METRICS_FILE = "metrics.json"


@dataclass(frozen=True)
class JobContext:
    """What a workload may know about the job it builds a command for."""

    job_dir: Path
    num_nodes: int = 1
    extra_cmd_args: Mapping[str, Any] | str = ""


class Workload(ABC):
    name: ClassVar[str]
    args_model: ClassVar[type[BaseModel] | None] = None
    produces_metrics: ClassVar[bool] = False  # True: a job without valid metrics.json has failed
    units: ClassVar[dict[str, str]] = {}  # metric -> unit, shown on report axes and tables

    @abstractmethod
    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]: ...

    def constraint(self, args: Mapping[str, Any]) -> str | None:
        return None

    def validate(self, space: Space, *, file: Path | None, prefix: str) -> list[Problem]:
        """Check every candidate value of the knobs in ``space`` that are this workload's args."""
        if self.args_model is None:
            return []
        args = {k: v for k, v in space.fixed.items() if not k.startswith("extra_env_vars.") and k != "num_nodes"}
        trial_points = [{}]
        for dim in space.dims:
            if dim.name.startswith("extra_env_vars.") or dim.name == "num_nodes":
                continue
            values = dim.choices if isinstance(dim, Categorical) else (dim.clip(dim.low), dim.clip(dim.high))
            trial_points += [{dim.name: v} for v in values]
            args.setdefault(dim.name, values[0])
        problems: dict[str, Problem] = {}
        for point in trial_points:
            try:
                self.args_model.model_validate(_nested({**args, **point}))
            except ValidationError as exc:
                for p in problems_from(exc, self.args_model, file):
                    field = f"{prefix}.{p.field}" if p.field else prefix
                    problems.setdefault(field, Problem(p.file, field, p.message, p.hint))
        return list(problems.values())

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        return read_metrics_file(job_dir / METRICS_FILE)

    def progress(self, job_dir: Path) -> list[tuple[int, float]]:
        return []


def read_metrics_file(path: Path) -> dict[str, float]:
    """``{"name": number}`` from ``path``; a missing, malformed or non-finite file raises ``WorkloadError``."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise WorkloadError(f"no {path.name} was written") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkloadError(f"{path.name} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise WorkloadError(f"{path.name} must hold a JSON object of metric names to numbers")
    metrics: dict[str, float] = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise WorkloadError(f"{path.name}: metric '{key}' is {value!r}, not a finite number")
        metrics[str(key)] = float(value)
    return metrics


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    from cloudai.space import unflatten

    return unflatten(flat)
