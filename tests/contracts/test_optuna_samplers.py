"""Every ``agent_config.sampler`` of the optuna agent passes the agent contract (where it can be built here)."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from tests.contracts.test_agent_contract import AgentContract, ContractGym

from cloudai.agents import AGENTS
from cloudai.agents.base import BaseAgent
from cloudai.agents.optuna_samplers import SamplerName, missing_packages
from cloudai.envs.base import BaseGym

SAMPLERS = [
    pytest.param(name, marks=pytest.mark.skipif(bool(missing_packages(name)), reason=f"needs {missing_packages(name)}"))
    for name in typing.get_args(SamplerName)
]


class TestOptunaSamplers(AgentContract):
    @pytest.fixture(params=SAMPLERS)
    def sampler(self, request: pytest.FixtureRequest) -> str:
        return request.param

    @pytest.fixture
    def agent_cls(self) -> type[BaseAgent]:
        return AGENTS.get("optuna")

    @pytest.fixture(autouse=True)
    def _use_sampler(self, sampler: str) -> None:
        self.sampler = sampler

    def make(self, agent_cls: type[BaseAgent], env: BaseGym, max_steps: int, **config: Any) -> BaseAgent:
        config = {"sampler": self.sampler, "n_startup_trials": 3, "population_size": 4, **config}
        return agent_cls(env, agent_cls.config_model(**config), max_steps)

    def test_the_study_uses_that_sampler(self, sampler: str) -> None:
        agent = self.make(AGENTS.get("optuna"), ContractGym(), 3, seed=0)
        expected = {"tpe": "TPESampler", "random": "RandomSampler", "cmaes": "CmaEsSampler",
                    "nsga2": "NSGAIISampler", "qmc": "QMCSampler", "gp": "GPSampler"}[sampler]  # fmt: skip
        assert type(agent.study.sampler).__name__ == expected  # pyright: ignore[reportAttributeAccessIssue]


def test_list_shows_each_agents_config_and_capabilities() -> None:
    from click.testing import CliRunner

    from cloudai.cli import cli

    out = CliRunner().invoke(cli, ["list"], catch_exceptions=False).output
    optuna = out.split("  optuna\n", 1)[1].split("\n  random_search", 1)[0]
    assert 'sampler = "tpe"  (one of tpe, random, cmaes, nsga2, qmc, gp)' in optuna
    assert "n_startup_trials = 10" in optuna and "env_params: yes" in optuna
    assert "max_parallel: yes, reproducible (same seed" in optuna
    grid = out.split("  grid_search\n", 1)[1].split("\n  optuna", 1)[0]
    assert "env_params: no" in grid and "reproducible (same seed" in grid and "max_parallel = 1" in grid
