"""The result against a baseline: a number alone ("55.7 GB/s") says little; "1.6x the first trial" says what the
search bought. The baseline is the first scored search step's configuration (the point a user would have run
without a search: the test's first value of every list, the grid's corner, the sampler's first draw), at its
confirmed mean when it was re-run, else its single measurement (said so). Rewards are maximised, so a ratio
above 1 is better; a ratio needs both values positive, otherwise the difference is given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from cloudai.reports.confirm import Estimate, action_key


def versus_first(
    value: float,
    action: Mapping[str, Any],
    first: tuple[int, Mapping[str, Any], float],
    confirmed: Sequence[Estimate],
    unit: str = "",
    regime_value: float | None = None,
) -> str:
    """``1.62x the first trial's configuration (step 1: 34.2 GB/s, a single measurement)`` for the result ``value``
    of configuration ``action``; "" when ``action`` is the baseline itself (the baseline is the answer) or a value
    is not finite. ``first``: the first scored search step's (step, action, reward). ``regime_value`` (env_params):
    the baseline's value over the env regimes, as the recommendation's is estimated; NaN when it was not measured
    in every regime: then "" (one measurement in one regime is no baseline for a value over all of them)."""
    step, first_action, reward = first
    if action_key(action) == action_key(first_action):
        return ""
    same = next((e for e in confirmed if e.rewards and action_key(e.action) == action_key(first_action)), None)
    base, how = (same.mean, "its confirmed mean") if same else (reward, "a single measurement")
    if regime_value is not None and not same:
        base, how = regime_value, "its value over the env regimes"
    if not (math.isfinite(value) and math.isfinite(base)):
        return ""
    shown = f"step {step}: {base:.4g}{' ' + unit if unit else ''}, {how}"
    if value > 0 and base > 0:
        return f"{value / base:.3g}x the first trial's configuration ({shown})"
    return f"{value - base:+.4g} over the first trial's configuration ({shown})"
