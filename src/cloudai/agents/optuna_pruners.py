"""``agent_config.pruner`` of the ``optuna`` agent: early stopping of hopeless trials with Optuna's pruners.

    agent_config = { pruner = { type = "median", n_startup_trials = 5, n_warmup_steps = 2 } }

| type | Optuna pruner | its fields here |
| --- | --- | --- |
| ``median`` | ``MedianPruner`` | ``n_startup_trials``, ``n_warmup_steps``, ``interval_steps`` |
| ``percentile`` | ``PercentilePruner`` | the same and ``percentile`` (25: keep the top 25 %, prune the rest) |
| ``successive_halving`` | ``SuccessiveHalvingPruner`` | ``min_resource``, ``reduction_factor`` |
| ``hyperband`` | ``HyperbandPruner`` | ``min_resource``, ``max_resource``, ``reduction_factor`` |

``poll_s`` is how often the env reads running trials' progress (``Workload.progress``). Pruning
needs a workload that reports progress (e.g. ``Synthetic`` with ``progress_chunks``) and a single
objective (Optuna cannot prune multi-objective trials).
"""

from __future__ import annotations

from typing import Literal

import optuna
from pydantic import BaseModel, ConfigDict, Field


class PrunerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["median", "percentile", "successive_halving", "hyperband"] = "median"
    poll_s: float = Field(default=0.25, gt=0, le=60)  # how often running trials' progress is read
    n_startup_trials: int = Field(default=5, ge=0)  # median/percentile: trials that are never pruned
    n_warmup_steps: int = Field(default=0, ge=0)  # median/percentile: progress steps before any pruning
    interval_steps: int = Field(default=1, ge=1)
    percentile: float = Field(default=25.0, ge=0, le=100)  # percentile: the top share of trials kept
    min_resource: int = Field(default=1, ge=1)  # successive halving/hyperband: progress steps of the first rung
    max_resource: int | None = Field(default=None, ge=1)  # hyperband: None = the most steps seen
    reduction_factor: int = Field(default=3, ge=2)


def build_pruner(config: PrunerConfig) -> optuna.pruners.BasePruner:
    if config.type == "percentile":
        return optuna.pruners.PercentilePruner(
            config.percentile, config.n_startup_trials, config.n_warmup_steps, config.interval_steps
        )
    if config.type == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=config.min_resource, reduction_factor=config.reduction_factor
        )
    if config.type == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=config.min_resource,
            max_resource=config.max_resource or "auto",
            reduction_factor=config.reduction_factor,
        )
    return optuna.pruners.MedianPruner(config.n_startup_trials, config.n_warmup_steps, config.interval_steps)
