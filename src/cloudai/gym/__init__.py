"""Environments agents step through: the offline DSE env, live ``GymServer``s, the Gymnasium adapter.

Importing this package imports nothing heavy (no httpx, websockets, fastapi, gymnasium): the
names below load their module on first access. Importing it registers ``cloudai/Test-v0``
with Gymnasium (at once, or right after Gymnasium's first import: ``cloudai.gym.registration``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from cloudai.gym.registration import register_on_import

if TYPE_CHECKING:
    from cloudai.gym.adapter import GymnasiumAdapter
    from cloudai.gym.examples import ServingSim
    from cloudai.gym.flatten import GridActions, UnitBoxActions
    from cloudai.gym.from_toml import load_env, make
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
    "GymnasiumAdapter": "cloudai.gym.adapter",
    "GridActions": "cloudai.gym.flatten",
    "UnitBoxActions": "cloudai.gym.flatten",
    "load_env": "cloudai.gym.from_toml",
    "make": "cloudai.gym.from_toml",
}

__all__ = [
    "ContinuousSpace",
    "GridActions",
    "GymServer",
    "GymnasiumAdapter",
    "ObsLeafDescriptor",
    "RemoteGymServer",
    "ServingSim",
    "UnitBoxActions",
    "create_gym_server",
    "load_env",
    "make",
    "validate_live_rl_args",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cloudai.gym' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


register_on_import()
