"""Environments the lease tests serve with ``cloudai serve`` (named by dotted path, imported by its children)."""

from __future__ import annotations

import os
from typing import Any

from tests.gym.live_envs import EchoEnv


class DyingEcho(EchoEnv):
    """``EchoEnv`` whose whole process exits abruptly (no reply, no close frame) on its ``die_at``-th step."""

    def __init__(self, every: int = 3, die_at: int = 0) -> None:
        super().__init__(every)
        self.die_at, self.steps = die_at, 0

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        self.steps += 1
        if self.steps == self.die_at:
            os._exit(1)  # the sandbox dies mid-episode
        return super().step(action)
