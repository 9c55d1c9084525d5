"""Named reward functions: a metric value in, a reward to maximise out.

``inverse`` (1/x, CloudAI's default: for times and latencies), ``negative`` (-x),
``identity`` (x: for bandwidths and throughputs), ``log`` (log x). Plugins: group
``cloudai.envs.rewards``, each a ``Callable[[float], float]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

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


REWARDS: Registry[RewardFn] = Registry("reward function", "cloudai.rewards")
for _fn in (inverse, negative, identity, log):
    REWARDS.register(_fn.__name__, _fn)

# Whether a reward grows with its metric (maximising it maximises the metric); a plugin's is unknown.
GROWS_WITH_METRIC: dict[str, bool] = {"identity": True, "log": True, "inverse": False, "negative": False}
