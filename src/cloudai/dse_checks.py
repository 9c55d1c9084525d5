"""Load-time checks of an agent-driven entry: agent, reward, metrics, agent_config, env_params."""

from __future__ import annotations

from cloudai.agents import AGENTS
from cloudai.config.scenario import RunEntry
from cloudai.errors import ConfigError, Problem
from cloudai.rewards import REWARDS
from cloudai.space import Space


def check_agent_entry(entry: RunEntry, space: Space, live: bool) -> list[Problem]:
    problems: list[Problem] = []
    prefix = entry.field_prefix
    for registry, name, field in (
        (AGENTS, entry.agent.name, "agent"),
        (REWARDS, entry.agent.reward, "agent_reward_function"),
    ):
        try:
            registry.get(name, file=entry.scenario_file, field=f"{prefix}.{field}")
        except ConfigError as exc:
            problems += exc.problems
    return problems
