"""Named reward functions: a metric value in, a reward to maximise out.

``inverse`` (1/x, CloudAI's default: for times and latencies), ``negative`` (-x),
``identity`` (x: for bandwidths and throughputs), ``log`` (log x). Plugins: group
``cloudai.envs.rewards``, each a ``Callable[[float], float]``.

A reward of the whole observation (``agent_metrics`` in order), not of its first metric, is an
``ObservationReward``; callers reward an observation with ``reward_of``. CloudAI's
``ai_dynamo_log_scale`` is one: for ``agent_metrics = [ttft, itl or tpot, throughput, ...]`` it is
``log(throughput + 1) - 0.7 log(ttft + 1) - 0.1 log(itl + 1)`` (-0.001 when one is not positive, 0 when
fewer than three metrics are observed), as CloudAI computes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from cloudai.registry import Registry

RewardFn = Callable[[float], float]


def inverse(value: float) -> float:
    return 1.0 / value if value != 0 else 0.0


def negative(value: float) -> float:
    return -value


def identity(value: float) -> float:
    return value


def log(value: float) -> float:
    return math.log(value) if value > 0 else -math.inf


class ObservationReward:
    """A reward of the whole observation; called with one value, it rewards the observation ``[value]``."""

    def __init__(self, fn: Callable[[Sequence[float]], float]) -> None:
        self.of = fn
        self.__name__ = fn.__name__

    def __call__(self, value: float) -> float:
        return self.of([value])


def reward_of(fn: RewardFn, observation: Sequence[float]) -> float:
    """``fn``'s reward for one observation: of all of it for an ``ObservationReward``, else of its first metric."""
    return fn.of(observation) if isinstance(fn, ObservationReward) else fn(observation[0])


def ai_dynamo_log_scale(observation: Sequence[float]) -> float:
    if len(observation) < 3:
        return 0.0
    ttft, itl, throughput = observation[:3]
    if ttft <= 0 or itl <= 0 or throughput <= 0:
        return -1e-3
    return math.log(throughput + 1) - 0.7 * math.log(ttft + 1) - 0.1 * math.log(itl + 1)


REWARDS: Registry[RewardFn] = Registry("reward function", "cloudai.rewards")
for _fn in (inverse, negative, identity, log):
    REWARDS.register(_fn.__name__, _fn)
REWARDS.register("ai_dynamo_log_scale", ObservationReward(ai_dynamo_log_scale))

# Whether a reward grows with its metric (maximising it maximises the metric); a plugin's is unknown.
GROWS_WITH_METRIC: dict[str, bool] = {"identity": True, "log": True, "inverse": False, "negative": False}
