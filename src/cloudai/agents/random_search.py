"""``random_search``: seeded uniform sampling, without replacement where the space is finite.

* All dimensions categorical (a finite grid): the agent walks a seeded pseudo-random
  permutation of the grid indices (a Feistel network, cycle-walked into ``[0, size)``), so
  every point comes exactly once, in O(1) memory even for a 10^9-point grid, and
  ``select_action`` returns None once all are asked. With env_params (or a live env, whose
  state moves on) the same point is a new trial, so a finished pass starts another (a fresh
  permutation) until ``agent_steps``: every point is tried once per pass.
* Any range present: each dimension is drawn independently (categorical uniformly, a range
  uniformly, log-uniformly when ``log``, rounded for ``int``). Offline without env_params,
  exact repeats are redrawn (up to ``_MAX_REDRAWS`` times, then the space is taken as
  exhausted and ``stop_reason`` says so); with env_params or a live env a repeat is a new
  trial, so draws are kept as they come and the run goes on to ``agent_steps``.
  ``grid_points`` is ignored here: it discretizes a range for ``grid_search`` only.

Warm-start trials (earlier runs) are ignored: a sweep measures its points in this run.

The workload's rule (``env.violation``): on a finite grid the permutation walks past the points that break it
(they take no step, as in ``grid_search``); a draw from ranges that breaks it is refused inside the sampler
(``refused``: recorded once as ``infeasible``, no job, no share of ``agent_steps``) and drawn again.

The same ``config.seed`` gives the same sequence. Steps replayed on resume (and any other
feedback) count as seen, so a resumed run never asks a completed point again.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import numpy as np

from cloudai.agents.base import MAX_REJECTS, AgentConfig, BaseAgent
from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.space import Categorical, Range

_MAX_REDRAWS = 100
_M64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64's finalizer: a cheap, well-spread 64-bit hash (the Feistel round function)."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


class FeistelPermutation:
    """A keyed bijection of ``range(n)`` in O(1) memory: ``perm(i)`` for i in 0..n-1 visits each index once."""

    def __init__(self, n: int, keys: list[int]) -> None:
        bits = max(2, (n - 1).bit_length())
        self.n, self.half, self.keys = n, (bits + 1) // 2, keys
        self.mask = (1 << self.half) - 1

    def __call__(self, i: int) -> int:
        x = i
        while True:  # cycle-walk: the 2^(2*half) domain is < 4n, so a few rounds on average
            left, right = x >> self.half, x & self.mask
            for key in self.keys:
                left, right = right, left ^ (_mix(right ^ key) & self.mask)
            x = (left << self.half) | right
            if x < self.n:
                return x


class RandomSearchAgent(BaseAgent):
    name = "random_search"
    samples_env_params = True
    asks_depend_on_feedback = False

    def __init__(self, env: BaseGym, config: AgentConfig, max_steps: int) -> None:
        super().__init__(env, config, max_steps)
        self.space = env.define_action_space()
        self.rng = np.random.default_rng(config.seed)
        self.finite = all(isinstance(d, Categorical) for d in self.space.dims)
        self._seen: set[str] = set()  # canonical JSON of the points drawn (ranges)
        self._counts: Counter[int] = Counter()  # grid index -> times asked or recorded (finite)
        self._asked: set[int] = set()  # steps this agent asked, so their feedback is not counted twice
        self._repeat = env.live or env.env_param_sampler() is not None  # a point can measure differently again
        self._pass, self._pos = 0, 0
        if self.finite:
            self._perm = self._permutation()

    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None:
        point = self._next_grid_point() if self.finite else self._draw_unseen()
        if point is None:
            return None
        self._asked.add(self.env.next_step)
        return self.env.next_step, point

    def update_policy(self, feedback: Feedback) -> None:
        if feedback.info.get("warm_start"):
            return
        if feedback.step in self._asked:
            self._asked.discard(feedback.step)
            return
        key = self._key(feedback.action)
        if isinstance(key, int):
            self._counts[key] += 1
        elif key is not None:
            self._seen.add(key)

    def _permutation(self) -> FeistelPermutation:
        keys = [int(k) for k in self.rng.integers(0, 2**63, size=6)]
        return FeistelPermutation(self.space.grid_size, keys)

    def _next_grid_point(self) -> dict[str, Any] | None:
        """The next point of this pass not yet tried in it (a point counted k times was tried in passes < k)."""
        while True:
            while self._pos < self.space.grid_size:
                index = self._perm(self._pos)
                self._pos += 1
                if self._counts[index] <= self._pass:
                    point = self.space.grid_point(index)
                    if self.env.violation(point) is not None:
                        continue  # the workload's rule refuses it: skipped, like grid_search
                    self._counts[index] += 1
                    return point
            if not self._repeat:
                rule = self.env.valid_points()
                if rule is not None:
                    self.stop_reason = f"every valid point of the grid was tried ({rule.summary()})"
                else:
                    self.stop_reason = f"every one of the {self.space.grid_size} grid point(s) was tried"
                return None
            self._pass, self._pos, self._perm = self._pass + 1, 0, self._permutation()

    def _draw_unseen(self) -> dict[str, Any] | None:
        repeats = 0
        for _ in range(MAX_REJECTS):
            point = {d.name: self._draw(d) for d in self.space.dims}
            key = json.dumps(point, sort_keys=True, default=str)
            if not self._repeat:  # the same point measures differently again (env_params, live): no reason to refuse
                if key in self._seen:
                    repeats += 1
                    if repeats >= _MAX_REDRAWS:
                        break
                    continue
                self._seen.add(key)
            if not self.refused(point):
                return point
        else:
            self.gave_up(MAX_REJECTS)
            return None
        self.stop_reason = (
            f"{_MAX_REDRAWS} draws in a row repeated a point already tried: the space looks exhausted "
            f"after {len(self._seen)} distinct point(s)"
        )
        return None

    def _draw(self, dim: Categorical | Range) -> Any:
        if isinstance(dim, Categorical):
            return dim.choices[int(self.rng.integers(len(dim.choices)))]
        if dim.log:
            return dim.clip(math.exp(self.rng.uniform(math.log(dim.low), math.log(dim.high))))
        if dim.dtype == "int":
            low = math.ceil(dim.low)
            return dim.clip(int(self.rng.integers(low, max(low, math.floor(dim.high)) + 1)))
        return dim.clip(self.rng.uniform(dim.low, dim.high))

    def _key(self, point: dict[str, Any]) -> int | str | None:
        if not self.finite:
            return json.dumps(point, sort_keys=True, default=str)
        try:
            return self.space.grid_index(point)
        except (KeyError, ValueError):
            return None  # not a point of this space (e.g. the space changed since the recorded run)
