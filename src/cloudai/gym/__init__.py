"""The Gymnasium front door: a cloudai test as a ``gymnasium.Env`` for outside trainers.

``make``/``load_env`` build a test's env from TOML (through ``plan`` and ``run``, like ``cloudai run``),
``GymnasiumAdapter`` and the action wrappers (``GridActions``, ``UnitBoxActions``) give it Gymnasium's
spaces, and ``examples.ServingSim`` is the shipped in-process ``GymServer``. The names of the
``GymServer`` protocol (``gymserver``), the env helpers (``envs``), the OpenEnv client
(``gymserver.remote``) and the lease client (``gymserver.lease``, ``gymserver.leased``) are re-exported here
for convenience.

May import every stage below it (``run``, ``plan``, ``envs``, ``gymserver``, ...); nothing
but ``cli`` imports it.

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
    from cloudai.gym.rollouts import AsyncEnv, Transition, make_vec, rollout
    from cloudai.gymserver.aio import AsyncRemoteEnv, collect, lease_env
    from cloudai.gymserver.factory import create_gym_server, validate_live_rl_args
    from cloudai.gymserver.lease import Lease, LeaseClient
    from cloudai.gymserver.leased import LeasedGymServer
    from cloudai.gymserver.protocol import GymServer
    from cloudai.gymserver.remote import RemoteGymServer
    from cloudai.gymserver.spaces import ContinuousSpace, ObsLeafDescriptor

_EXPORTS = {
    "ContinuousSpace": "cloudai.gymserver.spaces",
    "ObsLeafDescriptor": "cloudai.gymserver.spaces",
    "GymServer": "cloudai.gymserver.protocol",
    "create_gym_server": "cloudai.gymserver.factory",
    "validate_live_rl_args": "cloudai.gymserver.factory",
    "RemoteGymServer": "cloudai.gymserver.remote",
    "AsyncRemoteEnv": "cloudai.gymserver.aio",
    "collect": "cloudai.gymserver.aio",
    "lease_env": "cloudai.gymserver.aio",
    "Lease": "cloudai.gymserver.lease",
    "LeaseClient": "cloudai.gymserver.lease",
    "LeasedGymServer": "cloudai.gymserver.leased",
    "ServingSim": "cloudai.gym.examples",
    "GymnasiumAdapter": "cloudai.gym.adapter",
    "GridActions": "cloudai.gym.flatten",
    "UnitBoxActions": "cloudai.gym.flatten",
    "load_env": "cloudai.gym.from_toml",
    "make": "cloudai.gym.from_toml",
    "AsyncEnv": "cloudai.gym.rollouts",
    "Transition": "cloudai.gym.rollouts",
    "make_vec": "cloudai.gym.rollouts",
    "rollout": "cloudai.gym.rollouts",
}

__all__ = [
    "AsyncEnv",
    "AsyncRemoteEnv",
    "ContinuousSpace",
    "GridActions",
    "GymServer",
    "GymnasiumAdapter",
    "Lease",
    "LeaseClient",
    "LeasedGymServer",
    "ObsLeafDescriptor",
    "RemoteGymServer",
    "ServingSim",
    "Transition",
    "UnitBoxActions",
    "collect",
    "create_gym_server",
    "lease_env",
    "load_env",
    "make",
    "make_vec",
    "rollout",
    "validate_live_rl_args",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cloudai.gym' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


register_on_import()
