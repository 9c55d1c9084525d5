"""Agents: search strategies over a gym env, ask/tell style. Plugins: group ``cloudai.agents``.

May import ``envs`` (only the ``BaseGym``/``Feedback`` contract and the env_params sampler), ``space``
and the other leaves; never a concrete env, a system or the run stage that drives them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cloudai.registry import Registry

if TYPE_CHECKING:
    from cloudai.agents.base import BaseAgent

AGENTS: Registry[type[BaseAgent]] = Registry(
    "agent",
    "cloudai.agents",
    {
        "grid_search": "cloudai.agents.grid_search:GridSearchAgent",
        "random_search": "cloudai.agents.random_search:RandomSearchAgent",
        "optuna": "cloudai.agents.optuna_agent:OptunaAgent",
        "bandit": "cloudai.agents.bandit:BanditAgent",
    },
)

__all__ = ["AGENTS"]
