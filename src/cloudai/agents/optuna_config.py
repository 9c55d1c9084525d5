"""``agent_config`` of the ``optuna`` agent (its own module: the sampler factory reads it too)."""

from __future__ import annotations

from pydantic import Field

from cloudai.agents.base import AgentConfig
from cloudai.agents.optuna_pruners import PrunerConfig
from cloudai.agents.optuna_samplers import SamplerName


class OptunaConfig(AgentConfig):
    """``agent_config`` for ``optuna``: the sampler and the knobs a user may want to turn."""

    sampler: SamplerName = "tpe"  # see cloudai.agents.optuna_samplers
    n_startup_trials: int = Field(default=10, ge=0)  # random trials before TPE/CMA-ES/GP model the landscape
    multivariate: bool = True  # TPE: model dimensions jointly (Optuna 5's default for one objective)
    constant_liar: bool = True  # TPE: treat in-flight trials as bad, so parallel asks spread out
    population_size: int = Field(default=16, ge=2)  # NSGA-II: trials per generation
    ordinal: bool = False  # TPE asks a list of >= 3 numbers as an ordered axis (its sorted index), not as labels
    local_search: float = Field(default=0.5, ge=0, le=0.9)  # share of trials after startup next to the best one
    pruner: PrunerConfig | None = None  # early stopping from intermediate values (optuna_pruners)
