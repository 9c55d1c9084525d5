"""In-process ``GymServer``s the live-RL tests name by dotted path (``env_class = "tests.gym.live_envs.X"``).

``EchoEnv`` reports what reached it (the reset's seed and env_params, the step number within
the episode, the action) so a test can read from trajectory.csv that the env passed them on.
``FailingSim`` is ``ServingSim`` that raises a plain ``RuntimeError`` from ``step`` while a
marker file exists, once it has taken ``fail_after`` steps: a crash a resumed run gets past.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from cloudai.gym.examples import ServingSim
from cloudai.gymserver.spaces import ContinuousSpace

ECHO_METRICS = ["load_scale", "seed", "t", "x", "z"]


class EchoEnv:
    """Episodes of ``every`` steps; observation: load_scale, reset seed (-1: None), t, x, z."""

    def __init__(self, every: int = 3) -> None:
        self.every = every
        self.t = 0
        self.seed = -1.0
        self.load_scale = 1.0

    def action_space(self) -> dict[str, list[Any] | ContinuousSpace]:
        return {"x": [0, 1, 2], "y": ContinuousSpace(0.0, 1.0), "z": [0, 1]}

    def observation_space(self) -> list[str]:
        return list(ECHO_METRICS)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[float], dict]:
        self.t = 0
        self.seed = -1.0 if seed is None else float(seed)
        self.load_scale = float(((options or {}).get("env_params") or {}).get("load_scale", 1.0))
        return [self.load_scale, self.seed, 0.0, 0.0, 0.0], {}

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        self.t += 1
        observation = [self.load_scale, self.seed, float(self.t), float(action["x"]), float(action["z"])]
        return observation, float(action["x"]), self.t >= self.every, {}


class FailingSim(ServingSim):
    """``ServingSim`` whose ``step`` raises ``RuntimeError`` while ``fail_file`` exists, after ``fail_after`` steps."""

    def __init__(self, fail_file: str = "", fail_after: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fail_file, self.fail_after, self.steps = fail_file, fail_after, 0

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        if self.fail_file and Path(self.fail_file).exists() and self.steps >= self.fail_after:
            raise RuntimeError("injected crash")
        self.steps += 1
        return super().step(action)


class NumpyEnv:
    """Answers with numpy values, as environments written with numpy do; ``mode`` picks what: ``array`` (the
    observation a float64 array, the reward ``np.float64``), ``scalars`` (a list of ``np.float32``/``np.int64``, the
    reward ``np.float32``), ``long`` (one value more than declared), ``nan`` (a NaN in the observation)."""

    def __init__(self, mode: str = "array") -> None:
        self.mode = mode

    def action_space(self) -> dict[str, list[Any]]:
        return {"x": [1, 2, 3]}

    def observation_space(self) -> list[str]:
        return ["a", "b"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        return np.zeros(2), {}

    def step(self, action: dict[str, Any]) -> tuple[Any, Any, bool, dict]:
        x = action["x"]
        if self.mode == "scalars":
            return [np.float32(x / 2), np.int64(x)], np.float32(x / 4), False, {}
        values = {"array": [x / 2, x], "long": [x / 2, x, 99.0], "nan": [x / 2, math.nan]}[self.mode]
        return np.array(values), np.float64(x / 4), False, {}


class RendezvousEnv(EchoEnv):
    """``EchoEnv`` whose every step waits until ``parties`` instances are stepping at once (a shared barrier):
    a run whose steps were not concurrent breaks the barrier and fails the step. Reports its instance number."""

    _barriers: dict[int, threading.Barrier] = {}
    _made = itertools.count()

    def __init__(self, every: int = 3, parties: int = 4) -> None:
        super().__init__(every)
        self.barrier = self._barriers.setdefault(parties, threading.Barrier(parties, timeout=20))
        self.instance = next(self._made)

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        self.barrier.wait()
        observation, reward, done, _ = super().step(action)
        return observation, reward, done, {"instance": self.instance}


class KnobSim:
    """The stock test server's knobs (``tests.gym.openenv_app``) in-process: each step sleeps ``delay_ms`` (a
    simulator's work), episodes of 3 steps; for the rollout benchmark's in-process lane."""

    def __init__(self, delay_ms: float = 0.0) -> None:
        self.delay_s = delay_ms / 1000
        self.t = 0

    def action_space(self) -> dict[str, list[Any] | ContinuousSpace]:
        return {"batch": [1, 2, 4, 8], "use_cache": [False, True], "ratio": ContinuousSpace(0.0, 1.0),
                "threads": ContinuousSpace(1, 16, dtype="int")}  # fmt: skip

    def observation_space(self) -> list[str]:
        return ["throughput", "latency_ms"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[float], dict]:
        self.t = 0
        return [0.0, 0.0], {}

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        if self.delay_s:
            time.sleep(self.delay_s)
        self.t += 1
        throughput = action["batch"] * action["threads"] * action["ratio"] * (1.0 if action["use_cache"] else 0.5)
        return [throughput, 10.0 + action["batch"]], throughput, self.t >= 3, {}
