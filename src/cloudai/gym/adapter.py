"""``GymnasiumAdapter``: a cloudai ``BaseGym`` as a ``gymnasium.Env``, so any Gymnasium trainer can drive trials.

Spaces (from ``env.define_action_space()``; fixed knobs are not part of the action):

* a ``Categorical`` knob is ``Discrete(len(choices))``: the action is the index of a choice;
* a ``Range`` knob is a float64 ``Box(low, high, shape=(1,))`` in the knob's own units; an
  ``int`` range is quantized in ``decode_action`` (rounded, then clamped into [low, high]).

``decode_action`` turns a space sample into the knob values a native agent would send;
``encode_action`` is its exact inverse for every value of the space (a candidate of a
categorical knob, a number in [low, high], integral for an int range) and raises
``ConfigError`` for anything else (``cloudai.envs.knobs.validate_point``, the check ``cloudai
serve`` also applies to values that arrive over the wire).

The observation is a flat float32 ``Box`` (one unbounded slot per ``agent_metrics`` name,
NaN reported as 0.0 with ``status`` in ``info``), or a ``spaces.Dict`` when the env offers
``observation_descriptors()`` (leaves ``kind="box"`` -> ``Box(low, high, (n or 1,))``,
``kind="categorical"`` -> ``Discrete(n)``), filled from the flat list in descriptor order. CloudAI's
spelling of the same (PR #934: ``structured_observation_descriptors()``, kinds ``"box"`` of width
``dim`` and ``"discrete"``) is read through ``as_leaf``, and an env's ``encode_observation(values)``
fills the leaves itself.
With env_params the observation is ``Dict(observation=<the above>, env_params=Dict(...))``:
the environment the NEXT step will run under (a list param's candidate index, a range
param's value), so a contextual policy acts knowing it; ``info["cloudai"]["env_params"]`` keeps the
values the step just measured under.

Episodes: ``terminated`` is the env's ``done`` in live-RL mode (offline DSE never
terminates); ``truncated`` after ``max_steps`` steps since ``reset`` (default: the env's
``agent_steps``), or when the env's info says ``truncated`` (a leased sandbox died mid-episode).
The adapter counts its own steps and never touches the env's monotonic step counter.
``info`` holds one key of cloudai's, ``info["cloudai"]``: the env's info (``step``, ``status``,
``episode``, ``metrics``, ``env_params``...) plus ``knobs``, every knob's value in that trial
(fixed ones included). The rest of ``info`` is the trainer's: Gymnasium's
``RecordEpisodeStatistics`` writes ``info["episode"]`` (a dict of return, length, time), and a vector
env adds its ``_``-prefixed masks; a cloudai key there would break them.
A trial is a real job, so the registered spec is ``nondeterministic`` (see ``make``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from cloudai.envs.base import BaseGym
from cloudai.envs.knobs import candidate_index, observation_leaves, validate_point
from cloudai.errors import ConfigError
from cloudai.gymserver.layout import nest
from cloudai.gymserver.spaces import ObsLeafDescriptor as ObsLeaf
from cloudai.space import Categorical, Space

INFO_KEY = "cloudai"  # the one key of ``info`` that is cloudai's


def action_space_of(space: Space) -> spaces.Dict:
    """``Discrete`` per categorical knob, float64 ``Box((1,))`` per range, keyed by knob name."""
    leaves: dict[str, spaces.Space[Any]] = {}
    for dim in space.dims:
        if isinstance(dim, Categorical):
            leaves[dim.name] = spaces.Discrete(len(dim.choices))
        else:
            leaves[dim.name] = spaces.Box(dim.low, dim.high, shape=(1,), dtype=np.float64)
    return spaces.Dict(leaves)


def _dict_space(tree: Mapping[str, Any]) -> spaces.Dict:
    """Nested leaf spaces (``layout.nest``) as nested ``Dict`` spaces."""
    return spaces.Dict({k: _dict_space(v) if isinstance(v, Mapping) else v for k, v in tree.items()})


def _leaf_space(name: str, leaf: ObsLeaf) -> spaces.Space[Any]:
    if leaf.kind == "categorical":
        if not leaf.n or leaf.n < 1:
            raise ConfigError(f"categorical observation '{name}' needs n >= 1")
        return spaces.Discrete(int(leaf.n))
    if leaf.kind == "box":
        low = -np.inf if leaf.low is None else leaf.low
        high = np.inf if leaf.high is None else leaf.high
        return spaces.Box(low, high, shape=(leaf.width,), dtype=np.float32)
    raise ConfigError(f"observation '{name}' has unknown kind {leaf.kind!r} (box or categorical)")


class GymnasiumAdapter(gymnasium.Env[Any, dict[str, Any]]):
    """A ``BaseGym`` as a ``gymnasium.Env`` with a ``Dict`` action space (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": []}
    render_mode = None

    def __init__(self, env: BaseGym, *, max_steps: int | None = None) -> None:
        self._env = env
        self._space = env.define_action_space()
        self._names = list(env.define_observation_space())
        self.max_steps = max_steps
        self._episode_steps = 0
        self.action_space = action_space_of(self._space)
        self._leaves = observation_leaves(env)
        measured: spaces.Space[Any]
        if self._leaves is not None:
            measured = _dict_space(nest({n: _leaf_space(n, leaf) for n, leaf in self._leaves.items()}))
        else:
            measured = spaces.Box(-np.inf, np.inf, shape=(len(self._names),), dtype=np.float32)
        self._sampler = env.env_param_sampler()
        self.observation_space = measured
        if self._sampler is not None:
            context = {n: _leaf_space(n, leaf) for n, leaf in self._sampler.descriptors().items()}
            self.observation_space = spaces.Dict({"observation": measured, "env_params": spaces.Dict(context)})

    @property
    def cloudai_env(self) -> BaseGym:
        """The wrapped cloudai environment (native dict actions, ``Feedback``, ``history``)."""
        return self._env

    @property
    def knob_space(self) -> Space:
        return self._space

    def decode_action(self, action: Mapping[str, Any]) -> dict[str, Any]:
        """A sample of ``action_space`` -> knob values (int ranges rounded and clamped)."""
        point: dict[str, Any] = {}
        for dim in self._space.dims:
            if dim.name not in action:
                raise ConfigError(f"action has no '{dim.name}'; it takes {list(self._space.names)}")
            raw = np.asarray(action[dim.name]).reshape(-1)
            if isinstance(dim, Categorical):
                index = int(raw[0])
                if not 0 <= index < len(dim.choices):
                    raise ConfigError(f"'{dim.name}' index {index} outside [0, {len(dim.choices)})")
                point[dim.name] = dim.choices[index]
            else:
                point[dim.name] = dim.clip(float(raw[0]))
        return point

    def encode_action(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Knob values -> the ``action_space`` sample that decodes to exactly them."""
        point = validate_point(self._space, values)
        action: dict[str, Any] = {}
        for dim in self._space.dims:
            if isinstance(dim, Categorical):
                action[dim.name] = np.int64(candidate_index(dim, point[dim.name]))
            else:
                action[dim.name] = np.array([point[dim.name]], dtype=np.float64)
        return action

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._episode_steps = 0
        observation, info = self._env.reset(seed=seed, options=options)
        return self._observe(observation), {INFO_KEY: dict(info)}

    def step(self, action: dict[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        point = self.decode_action(action)
        observation, reward, done, info = self._env.step(point)
        self._episode_steps += 1
        cut = bool(info.get("truncated"))  # the env cut the episode short (a leased sandbox died): not its end
        terminated = bool(done) and self._env.live and not cut
        truncated = cut or (self.max_steps is not None and self._episode_steps >= self.max_steps and not terminated)
        info = {INFO_KEY: {**info, "knobs": self._space.full(point)}}
        return self._observe(observation), float(reward), terminated, truncated, info

    def close(self) -> None:
        self._env.close()

    def _observe(self, values: list[float]) -> Any:
        if self._sampler is None:
            return self._measured(values)
        upcoming = self._sampler.encode(self._sampler.sample(self._env.next_step))
        context = {
            name: np.int64(value) if isinstance(value, int) else np.array([value], dtype=np.float32)
            for name, value in upcoming.items()
        }
        return {"observation": self._measured(values), "env_params": context}

    def _measured(self, values: list[float]) -> Any:
        flat = np.nan_to_num(np.asarray(values, dtype=np.float32), nan=0.0, posinf=np.inf, neginf=-np.inf)
        if self._leaves is None:
            if flat.shape != (len(self._names),):
                raise ConfigError(f"the env observed {flat.size} value(s) for {len(self._names)} name(s)")
            return flat
        encode = getattr(self._env, "encode_observation", None)  # CloudAI's hook (PR #934): the env's own leaves
        if callable(encode):
            encoded = encode(list(values))
            if not isinstance(encoded, Mapping):
                raise ConfigError(f"encode_observation must return a mapping of leaf names, not {type(encoded)}")
            return self._leafwise(encoded)
        observation: dict[str, Any] = {}
        offset = 0
        for name, leaf in self._leaves.items():
            size = leaf.width
            chunk = flat[offset : offset + size]
            offset += size
            observation[name] = np.int64(chunk[0]) if leaf.kind == "categorical" else chunk.copy()
        if offset != flat.size:
            raise ConfigError(f"the env observed {flat.size} value(s); its descriptors take {offset}")
        return nest(observation)

    def _leafwise(self, encoded: Mapping[str, Any]) -> dict[str, Any]:
        """``encode_observation``'s leaves as the observation space's types; a missing leaf is a ``ConfigError``."""
        assert self._leaves is not None
        missing = [name for name in self._leaves if name not in encoded]
        if missing:
            raise ConfigError(
                f"encode_observation gave no leaf {missing}; the descriptors declare {list(self._leaves)}"
            )
        return nest({
            name: np.int64(np.asarray(encoded[name]).reshape(-1)[0])
            if leaf.kind == "categorical"
            else np.asarray(encoded[name], dtype=np.float32).reshape(leaf.width)
            for name, leaf in self._leaves.items()
        })  # fmt: skip
