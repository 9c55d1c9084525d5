"""Which configuration to use, said once, and why the search's best single measurement is not it.

After a confirmation two numbers stand side by side: the recommendation's estimate (re-runs, or its value over
the env regimes) and the search's best single step, often a different configuration with a higher number
(``ring`` at 55.14 beside ``collnet`` at 37.69). A reader must not have to guess which one to run: ``use_line``
names the recommendation (it is best.toml) and gives the reason the single step loses: its number was one
draw, and what that configuration is worth when measured like the recommendation. The terminal
(``run.best.outcome_lines``) and the report (``render``) print the same sentence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from cloudai.display import show_action
from cloudai.reports.confirm import Estimate, action_key, winner


def use_line(
    confirmed: Sequence[Estimate],
    single: tuple[int, float, Mapping[str, Any], Mapping[str, Any]],
    measured: str,
    unit: str = "",
) -> str | None:
    """``Use candidate 1 (best.toml) ...`` or None without a confirmed winner.

    ``single``: the search's best step as (step, reward, action, env_params); ``measured``: its reward as the user
    reads it (``bus_bw 55.14 GB/s``)."""
    top = winner(confirmed)
    if top is None:
        return None
    step, _, action, env = single
    estimate = "value over the env regimes" if top.regime_aware else "mean of its re-runs"
    use = f"Use candidate {top.candidate} (best.toml), action {show_action(top.action, sort_keys=True)}"
    if action_key(action) == action_key(top.action):
        return (
            f"{use}: it is also the search's best step (step {step}, {measured}); its {estimate}, not that single "
            "measurement, is what to expect."
        )
    where = f" under env_params {show_action(env, sort_keys=True)}" if env else ""
    same = next((e for e in confirmed if action_key(e.action) == action_key(action)), None)
    if same is None:
        why = "it was never re-run, so nothing shows it was not luck"
    elif not same.rewards:
        why = f"as candidate {same.candidate} it did not score when re-run ({same.failed} failed)"
    else:
        spread = "" if math.isnan(same.ci95) else f" ± {same.ci95:.4g}"
        over = " over the env regimes" if top.regime_aware else ""
        why = f"re-run as candidate {same.candidate}, that configuration is worth {same.mean:.4g}{spread}"
        why += f"{' ' + unit if unit else ''}{over}"
        if same.mean < top.mean:
            why += f", below candidate {top.candidate}'s {top.mean:.4g}"
        elif same.failure_rate > top.failure_rate:
            why += f" but fails in {same.failure_rate:.0%} of its runs ({top.failure_rate:.0%} for the recommendation)"
        else:
            why += f"; the verdict above ranks candidate {top.candidate} first"
    return (
        f"{use}. The search's best single measurement (step {step}, {measured}, action "
        f"{show_action(action, sort_keys=True)}) is not it: that was one draw{where}; {why}."
    )
