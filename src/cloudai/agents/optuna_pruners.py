"""``agent_config.pruner`` of the ``optuna`` agent: early stopping of hopeless trials with Optuna's pruners.

    agent_config = { pruner = {} }   # successive halving: keep the top quarter at progress lines 1, 4, 16, ...
    agent_config = { pruner = { type = "median", n_startup_trials = 5, n_warmup_steps = 2 } }

| type | Optuna pruner | its fields here |
| --- | --- | --- |
| ``successive_halving`` (default) | ``SuccessiveHalvingPruner`` | ``min_resource``, ``reduction_factor`` |
| ``hyperband`` | ``HyperbandPruner`` | ``min_resource``, ``max_resource``, ``reduction_factor`` |
| ``median`` | ``MedianPruner`` | ``n_startup_trials``, ``n_warmup_steps``, ``interval_steps`` |
| ``percentile`` | ``PercentilePruner`` | the same and ``percentile`` (25: keep the top 25 %, prune the rest) |

``min_resource`` is 1: the first progress line is the first rung (Optuna's ``"auto"`` for
successive halving waits for a finished trial, and the trials reported before it never count at
a rung; raise ``min_resource`` when a workload's first lines are warm-up). An unset
``reduction_factor`` is Optuna's default for the pruner: 4 for successive halving, 3 for hyperband.

Why successive halving by default: ``median`` and ``percentile`` compare a running trial with the
*completed* trials only. Pruning removes the weak trials from that set, so the reference climbs
with every pruned trial (survivorship): late in a search, a near-optimal trial is measured
against the best few survivors, and noise in its early values gets it pruned. Successive halving
ranks a trial among every trial that reached the same rung, pruned ones included, so it keeps
the top ``1 / reduction_factor`` at each rung however far the search has come.
``benchmarks/bench_pruning.py`` compares them (the README has the numbers).

``poll_s`` is how often the env reads running trials' progress (``Workload.progress``): a pruned
trial runs on for half of it on average, so keep it well under the time between two progress
lines (each read is one small file read). Pruning needs a workload that reports progress (e.g.
``Synthetic`` with ``progress_chunks``) and a single objective (Optuna cannot prune
multi-objective trials).
"""

from __future__ import annotations

from typing import Literal

import optuna
from pydantic import BaseModel, ConfigDict, Field, model_validator


class PrunerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["successive_halving", "hyperband", "median", "percentile"] = "successive_halving"
    poll_s: float = Field(default=0.1, gt=0, le=60)  # how often running trials' progress is read
    n_startup_trials: int = Field(default=5, ge=0)  # median/percentile: trials that are never pruned
    n_warmup_steps: int = Field(default=0, ge=0)  # median/percentile: progress steps before any pruning
    interval_steps: int = Field(default=1, ge=1)
    percentile: float = Field(default=25.0, ge=0, le=100)  # percentile: the top share of trials kept
    min_resource: int = Field(default=1, ge=1)  # SH/hyperband: progress steps of the first rung
    max_resource: int | None = Field(default=None, ge=1)  # hyperband: None = the most steps seen
    reduction_factor: int | None = Field(default=None, ge=2)  # SH/hyperband: 1 / the share kept per rung

    @model_validator(mode="after")
    def _rungs_in_order(self) -> PrunerConfig:
        if self.max_resource is not None and self.max_resource < self.min_resource:
            raise ValueError(
                f"max_resource ({self.max_resource}) is below min_resource ({self.min_resource}): Hyperband's last "
                "rung must not come before its first; raise max_resource or leave it unset (the most steps seen)"
            )
        return self


def build_pruner(config: PrunerConfig) -> optuna.pruners.BasePruner:
    """The configured pruner; an unset ``reduction_factor`` is left to Optuna's default for it."""
    rungs = {"min_resource": config.min_resource}
    if config.reduction_factor is not None:
        rungs["reduction_factor"] = config.reduction_factor
    if config.type == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(**rungs)
    if config.type == "hyperband":
        return optuna.pruners.HyperbandPruner(**rungs, max_resource=config.max_resource or "auto")
    if config.type == "percentile":
        return optuna.pruners.PercentilePruner(
            config.percentile, config.n_startup_trials, config.n_warmup_steps, config.interval_steps
        )
    return optuna.pruners.MedianPruner(config.n_startup_trials, config.n_warmup_steps, config.interval_steps)
