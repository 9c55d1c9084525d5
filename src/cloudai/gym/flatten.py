"""Action wrappers for algorithms that take one ``Box`` or one ``Discrete`` (what ``gymnasium.wrappers`` lacks).

Observations need nothing of ours: ``gymnasium.wrappers.FlattenObservation`` turns the
adapter's ``Dict`` observation into a ``Box``. Actions do: ``spaces.flatten_space`` makes a
``Dict`` of ``Discrete``/``Box`` a one-hot ``Box`` whose ``unflatten`` reads the first
non-zero entry, so a continuous policy's output would always pick choice 0. Hence:

* ``UnitBoxActions``: one ``Box(-1, 1)`` slot per knob, the scale SB3 & co. expect. A range
  maps linearly (log-linearly for ``log`` ranges) onto [low, high]; a categorical knob's
  slot is cut into ``len(choices)`` equal bins.
* ``GridActions``: ``Discrete(grid_size)``, one action per grid point (``Space.grid_point``),
  for tabular methods and bandits over a finite space.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from cloudai.errors import ConfigError
from cloudai.gym.adapter import GymnasiumAdapter
from cloudai.space import Categorical


class UnitBoxActions(gymnasium.ActionWrapper[Any, np.ndarray, dict[str, Any]]):
    """``Box(-1, 1, (n_knobs,))`` actions for a ``GymnasiumAdapter`` (see the module docstring)."""

    def __init__(self, env: gymnasium.Env[Any, dict[str, Any]]) -> None:
        super().__init__(env)
        adapter = env.unwrapped
        if not isinstance(adapter, GymnasiumAdapter):
            raise ConfigError("UnitBoxActions wraps a cloudai GymnasiumAdapter")
        self._adapter = adapter
        self.action_space = spaces.Box(-1.0, 1.0, shape=(len(adapter.knob_space.dims),), dtype=np.float32)

    def action(self, action: np.ndarray) -> dict[str, Any]:
        unit = np.clip(np.asarray(action, dtype=np.float64).reshape(-1), -1.0, 1.0)
        out: dict[str, Any] = {}
        for u, dim in zip((float(x) for x in unit), self._adapter.knob_space.dims, strict=True):
            t = (u + 1.0) / 2.0
            if isinstance(dim, Categorical):
                out[dim.name] = np.int64(min(int(t * len(dim.choices)), len(dim.choices) - 1))
            elif dim.log:
                value = math.exp(math.log(dim.low) + t * (math.log(dim.high) - math.log(dim.low)))
                out[dim.name] = np.array([min(max(value, dim.low), dim.high)])
            else:
                out[dim.name] = np.array([dim.low + t * (dim.high - dim.low)])
        return out


class GridActions(gymnasium.ActionWrapper[Any, np.int64, dict[str, Any]]):
    """``Discrete(grid_size)`` actions: action ``i`` is grid point ``i`` (ranges need ``grid_points``)."""

    def __init__(self, env: gymnasium.Env[Any, dict[str, Any]]) -> None:
        super().__init__(env)
        adapter = env.unwrapped
        if not isinstance(adapter, GymnasiumAdapter):
            raise ConfigError("GridActions wraps a cloudai GymnasiumAdapter")
        if not adapter.knob_space.has_grid:
            raise ConfigError(
                "GridActions needs a finite grid", hint="give every range grid_points, or use UnitBoxActions"
            )
        self._adapter = adapter
        self.action_space = spaces.Discrete(adapter.knob_space.grid_size)

    def action(self, action: np.int64) -> dict[str, Any]:
        return self._adapter.encode_action(self._adapter.knob_space.grid_point(int(action)))
