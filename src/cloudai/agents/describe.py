"""What ``cloudai list`` says of each agent: its ``agent_config`` fields with defaults and its capabilities."""

from __future__ import annotations

import typing

from cloudai.agents.base import BaseAgent
from cloudai.display import toml_text


def describe_agent(agent_cls: type[BaseAgent]) -> list[str]:
    """Lines: capabilities (env_params, parallel asks and their reproducibility), then one per config field."""
    # Every agent is told finished steps in step order (the DSE holds early finishers back), so the same seed
    # asks the same trials whatever the timing: tests/dse/test_trust.py runs optuna at max_parallel 4 twice.
    parallel = (
        "max_parallel: yes, reproducible (same seed, same trials)"
        if agent_cls.can_ask_ahead
        else ("one trial at a time")
    )
    lines = [f"env_params: {'yes' if agent_cls.samples_env_params else 'no'}; {parallel}"]
    for name, info in agent_cls.config_model.model_fields.items():
        choices = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is typing.Literal else ()
        text = f"{name} = {toml_text(info.get_default(call_default_factory=True))}"
        if choices:
            text += f"  (one of {', '.join(map(str, choices))})"
        lines.append(text)
    lines += agent_cls.list_notes()
    return lines
