"""What ``cloudai list [KIND] [-v]`` prints: the registries' names, and with ``-v`` what each one is."""

from __future__ import annotations

import typing
from collections.abc import Iterator

from pydantic import BaseModel

from cloudai.display import toml_text

TITLES = {
    "workloads": "Workloads (test_template_name)",
    "agents": "Agents",
    "rewards": "Reward functions (agent_reward_function)",
    "systems": "Systems (scheduler)",
    "reports": "Reports (written into every results dir)",
}


def listing(kinds: list[str], verbose: bool) -> list[str]:
    lines: list[str] = []
    for kind in kinds:
        lines.append(f"{TITLES[kind]}:")
        for name, details in _entries(kind, verbose):
            lines.append(f"  {name}")
            lines += [f"      {line}" for line in details]
    return lines


def _entries(kind: str, verbose: bool) -> Iterator[tuple[str, list[str]]]:
    if kind == "reports":
        from cloudai.reports import OUTPUTS

        for name, what in OUTPUTS.items():
            yield name, [what] if verbose else []
        return
    registry = _registry(kind)
    for name in registry.names():
        if kind == "agents":  # always described: the agent_config fields are what a user sets
            from cloudai.agents.describe import describe_agent

            yield name, describe_agent(registry.get(name))
        elif verbose:
            yield name, _describe(kind, name, registry.get(name))
        else:
            yield name, []


def _registry(kind: str) -> typing.Any:
    if kind == "workloads":
        from cloudai.workloads import WORKLOADS

        return WORKLOADS
    if kind == "agents":
        from cloudai.agents import AGENTS

        return AGENTS
    if kind == "rewards":
        from cloudai.envs.rewards import REWARDS

        return REWARDS
    from cloudai.systems import SYSTEMS

    return SYSTEMS


def _describe(kind: str, name: str, obj: typing.Any) -> list[str]:
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    lines = [doc[0]] if doc else []
    if kind == "workloads":
        if obj.metrics:
            lines.append(f"metrics: {', '.join(obj.metrics)}{'; noisy (the best is confirmed)' if obj.noisy else ''}")
        if obj.args_model is not None:
            lines += model_fields(obj.args_model)
    elif kind == "systems":
        from cloudai.config.system import system_model

        model = system_model(name)
        lines += model_fields(model) if model is not None else []
    return lines


def model_fields(model: type[BaseModel]) -> list[str]:
    """``name = default`` per field of a pydantic model, the default as a TOML reader writes it (``"/tmp"``,
    ``true``, ``{ cmd = "genai-perf profile" }``; ``(not set)`` for None), never a Python repr."""
    lines = []
    for name, info in model.model_fields.items():
        default = "(required)" if info.is_required() else toml_text(info.get_default(call_default_factory=True))
        lines.append(f"{info.alias or name} = {default}")
    return lines
