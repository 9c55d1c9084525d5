"""Environments agents step through: the offline DSE env, live ``GymServer``s, the Gymnasium adapter.

Importing this package imports nothing heavy (no httpx, websockets, fastapi, gymnasium): the
names below load their module on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudai.gym.examples import ServingSim
    from cloudai.gym.remote import RemoteGymServer
    from cloudai.gym.server import GymServer, create_gym_server, validate_live_rl_args
    from cloudai.gym.spaces import ContinuousSpace, ObsLeafDescriptor

_EXPORTS = {
    "ContinuousSpace": "cloudai.gym.spaces",
    "ObsLeafDescriptor": "cloudai.gym.spaces",
    "GymServer": "cloudai.gym.server",
    "create_gym_server": "cloudai.gym.server",
    "validate_live_rl_args": "cloudai.gym.server",
    "RemoteGymServer": "cloudai.gym.remote",
    "ServingSim": "cloudai.gym.examples",
}

__all__ = [
    "ContinuousSpace",
    "GymServer",
    "ObsLeafDescriptor",
    "RemoteGymServer",
    "ServingSim",
    "create_gym_server",
    "validate_live_rl_args",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cloudai.gym' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
