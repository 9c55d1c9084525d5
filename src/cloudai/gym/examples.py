"""``ServingSim``: a small, fast, seeded simulation of an LLM inference server, as a ``GymServer``.

What is modelled, one step = one control interval of ``interval_s`` seconds:

* Offered load (requests/s) drifts within an episode: a slow sine (``period`` steps) times a
  multiplicative random walk, scaled by ``load_scale`` (an env_param, see ``reset``).
* The knobs set capacity. A decode iteration over ``b`` sequences takes ``t0 + t1 * b`` ms, so
  bigger batches amortise the fixed cost; ``b`` is ``max_batch_size`` capped by the sequences
  the KV cache can hold (``kv_cache_fraction`` of memory) and by ``max_num_seqs``. What the KV
  cache takes is gone for activations: when a batch's activations do not fit in the rest,
  iterations slow down (recompute/preemption). Service rate = sequences per iteration /
  (iteration time * decode steps per request).
* Queueing: arrivals join a queue, up to ``rate * interval_s`` leave it. p99 latency is the
  service time inflated by utilisation (an M/M/1-like ``rho / (1 - rho)`` term) plus the time
  to drain the queue ahead.
* Reward: the throughput (requests/s) when p99 meets ``slo_ms``; otherwise a penalty that grows
  with the violation. ``done`` at ``horizon`` steps, or when the queue exceeds
  ``collapse_queue`` requests (an SLO collapse: the server cannot catch up).

Same seed and same actions give the same trajectory. No I/O, no numpy: ~30k steps/s.
"""

from __future__ import annotations

import math
import random
from typing import Any, ClassVar

from cloudai.errors import GymServerError
from cloudai.gymserver.spaces import ContinuousSpace

BATCH_SIZES = [1, 2, 4, 8, 16, 32, 64, 128]
NUM_SEQS = [16, 32, 64, 128, 256, 512]
KV_FRACTION = ContinuousSpace(0.5, 0.95)
METRICS = ["throughput", "p99_latency_ms", "queue_depth"]
ENV_PARAMS = ("load_scale", "slo_ms")

_WHERE = "cloudai.gym.examples.ServingSim"
_KV_SEQS_PER_FRACTION = 160.0  # sequences the whole memory could cache
_ACT_SEQS_PER_FRACTION = 500.0  # sequences whose activations the whole memory could hold
_T0_MS, _T1_MS, _T_SEQ_MS = 12.0, 0.35, 0.02  # decode iteration: fixed, per batched sequence, per admitted sequence
_DECODE_STEPS = 16  # decode iterations per request


class ServingSim:
    """A simulated inference server to retune online (see the module docstring for the model)."""

    units: ClassVar[dict[str, str]] = {"throughput": "requests/s", "p99_latency_ms": "ms", "queue_depth": "requests"}

    def __init__(
        self,
        horizon: int = 50,
        seed: int = 0,
        slo_ms: float = 2500.0,
        base_load: float = 40.0,
        drift: float = 0.05,
        period: int = 40,
        interval_s: float = 1.0,
        collapse_queue: float = 20000.0,
    ) -> None:
        if horizon < 1 or slo_ms <= 0 or base_load <= 0 or interval_s <= 0 or period < 1:
            raise ValueError("horizon, slo_ms, base_load, interval_s and period must be positive")
        self.horizon, self.seed, self.slo_ms, self.base_load = horizon, seed, slo_ms, base_load
        self.drift, self.period, self.interval_s, self.collapse_queue = drift, period, interval_s, collapse_queue
        self._rng: random.Random | None = None
        self._t = 0
        self._walk = 1.0
        self._phase = 0.0
        self._queue = 0.0
        self._load_scale = 1.0
        self._slo = slo_ms

    def action_space(self) -> dict[str, list[Any] | ContinuousSpace]:
        return {"max_batch_size": list(BATCH_SIZES), "max_num_seqs": list(NUM_SEQS), "kv_cache_fraction": KV_FRACTION}

    def observation_space(self) -> list[str]:
        return list(METRICS)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[float], dict]:
        """Start an episode. ``seed`` reseeds (the first reset uses the constructor's ``seed``);
        ``options={"env_params": {"load_scale": .., "slo_ms": ..}}`` sets this episode's conditions."""
        if seed is not None or self._rng is None:
            self._rng = random.Random(self.seed if seed is None else seed)
        params = dict((options or {}).get("env_params") or {})
        unknown = sorted(set(params) - set(ENV_PARAMS))
        if unknown:
            raise GymServerError(
                f"unknown env_params {unknown}; ServingSim takes {list(ENV_PARAMS)}", where=_WHERE, call="reset"
            )
        self._load_scale = float(params.get("load_scale", 1.0))
        self._slo = float(params.get("slo_ms", self.slo_ms))
        self._t, self._walk, self._queue = 0, 1.0, 0.0
        self._phase = self._rng.uniform(0.0, 2 * math.pi)
        return [0.0, 0.0, 0.0], {"offered_load": self._offered(), "env_params": params}

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        rng = self._rng
        if rng is None:
            raise GymServerError("step before reset(); reset() starts an episode", where=_WHERE, call="step")
        batch, seqs, kv = self._check(action)
        self._t += 1
        self._walk = min(max(self._walk * math.exp(rng.gauss(0.0, self.drift)), 0.3), 3.0)
        offered = self._offered()

        width = max(1.0, min(batch, seqs, kv * _KV_SEQS_PER_FRACTION))
        iteration_ms = _T0_MS + _T1_MS * width + _T_SEQ_MS * seqs  # admitted sequences cost scheduling time
        room = (1.0 - kv) * _ACT_SEQS_PER_FRACTION
        if width > room:
            iteration_ms *= 1.0 + 2.0 * (width - room) / room  # activations spill: recompute, preemption
        rate = width * 1000.0 / (iteration_ms * _DECODE_STEPS)  # requests/s

        arrivals = max(0.0, offered * self.interval_s * (1.0 + rng.gauss(0.0, 0.05)))
        backlog = self._queue + arrivals
        served = min(backlog, rate * self.interval_s)
        self._queue = backlog - served
        throughput = served / self.interval_s
        rho = min(offered / rate, 0.99)
        p99 = iteration_ms * _DECODE_STEPS * (1.5 + 2.0 * rho / (1.0 - rho)) + 1000.0 * self._queue / rate

        met = p99 <= self._slo
        reward = throughput if met else -min(p99 / self._slo - 1.0, 10.0) * self.base_load * 0.1
        collapsed = self._queue > self.collapse_queue
        done = collapsed or self._t >= self.horizon
        info = {"offered_load": offered, "service_rate": rate, "slo_met": met, "collapsed": collapsed}
        return [throughput, p99, self._queue], reward, done, info

    def close(self) -> None:
        """Nothing to release; here for the protocol's optional ``close``."""

    def _offered(self) -> float:
        wave = 1.0 + 0.5 * math.sin(self._phase + 2 * math.pi * self._t / self.period)
        return self.base_load * self._load_scale * wave * self._walk

    def _check(self, action: dict[str, Any]) -> tuple[int, int, float]:
        try:
            batch, seqs, kv = action["max_batch_size"], action["max_num_seqs"], action["kv_cache_fraction"]
        except KeyError as exc:
            raise GymServerError(f"action lacks {exc.args[0]!r}", where=_WHERE, call="step") from None
        valid = batch in BATCH_SIZES and seqs in NUM_SEQS and len(action) == 3
        if not valid or not isinstance(kv, int | float) or not KV_FRACTION.contains(float(kv)):
            raise GymServerError(f"invalid action {action!r}; see action_space()", where=_WHERE, call="step")
        return int(batch), int(seqs), float(kv)
