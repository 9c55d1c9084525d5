"""A live-RL ``GymServer`` that blocks inside ``step`` while a marker file exists: a trial in flight to interrupt.

Named by dotted path from the interrupt tests (``env_class = "tests.reliability.live_block.BlockingEnv"``).
It announces the blocked step by writing ``blocked_file``, so the test signals cloudai only
once a step is really in progress.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


class BlockingEnv:
    """One knob ``x``; observation ``[x]``; ``step`` number ``block_after + 1`` blocks while ``block_file`` exists."""

    def __init__(self, block_file: str = "", blocked_file: str = "", block_after: int = 0) -> None:
        self.block_file, self.blocked_file, self.block_after = Path(block_file), Path(blocked_file), block_after
        self.steps = 0

    def action_space(self) -> dict[str, list[Any]]:
        return {"x": list(range(32))}

    def observation_space(self) -> list[str]:
        return ["x"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[float], dict]:
        return [0.0], {}

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        if self.steps >= self.block_after and self.block_file.exists():
            self.blocked_file.write_text(str(self.steps + 1))
            while self.block_file.exists():  # the test interrupts cloudai here
                time.sleep(0.05)
        self.steps += 1
        return [float(action["x"])], float(action["x"]), False, {}
