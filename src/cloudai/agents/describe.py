"""What ``cloudai list`` says of each agent: its ``agent_config`` fields with defaults and its capabilities."""

from __future__ import annotations

import typing

from cloudai.agents.base import BaseAgent


def describe_agent(agent_cls: type[BaseAgent]) -> list[str]:
    """Lines: capabilities (env_params, parallel asks and their reproducibility), then one per config field."""
    if not agent_cls.can_ask_ahead:
        parallel = "one trial at a time"
    elif agent_cls.parallel_reproducible:
        parallel = "max_parallel: yes, reproducible (same seed, same trials)"
    else:
        parallel = "max_parallel: yes, not reproducible above 1 (asks depend on which trial finishes first)"
    lines = [f"env_params: {'yes' if agent_cls.samples_env_params else 'no'}; {parallel}"]
    for name, info in agent_cls.config_model.model_fields.items():
        choices = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is typing.Literal else ()
        text = f"{name} = {info.default!r}"
        if choices:
            text += f"  (one of {', '.join(map(str, choices))})"
        lines.append(text)
    lines += agent_cls.list_notes()
    return lines
