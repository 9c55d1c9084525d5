"""TPE that proposes only points the workload's rule allows: its candidates are judged at once, vectorised.

Why: Optuna's TPE draws ``n_ei_candidates`` (24) candidates from its density of good points and asks the best
of them by ``l(x) / g(x)``. Where most of the grid breaks the rule (a MoE disagg space: under 1 % valid), most of
its picks were refused, each refusal one ask/tell round trip (~10-20 ms, slower as the study grows) before the
agent could ask again. Here the candidates are drawn in batches and judged by the rule's vectorised mask
(``ValidPoints.mask_at``, microseconds for thousands), and TPE picks among the valid ones: a refused draw costs
a row of a numpy mask. When no valid candidate turns up (``ROUNDS`` batches), TPE's own pick stands and the
agent's refusal path handles it, as before.

``valid`` maps the candidates (Optuna param name -> internal representation, one array each) to a mask, or None
when it cannot judge them (independent sampling: one param at a time; no vectorised rule).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution

Validity = Callable[[dict[str, np.ndarray]], "np.ndarray | None"]
ROUNDS = 16  # batches of candidates drawn before TPE's unjudged pick stands
BATCH = 8  # a batch is this many times n_ei_candidates


class ValidTPESampler(optuna.samplers.TPESampler):
    """``TPESampler`` whose candidates are valid points (``valid``; the module docstring)."""

    def __init__(self, valid: Validity, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._valid = valid

    def _build_parzen_estimator(
        self,
        study: optuna.Study,
        search_space: dict[str, BaseDistribution],
        trials: list[optuna.trial.FrozenTrial],
        handle_below: bool,
    ) -> Any:
        estimator = super()._build_parzen_estimator(study, search_space, trials, handle_below)
        if handle_below:  # the density candidates are drawn from
            draw = estimator.sample
            estimator.sample = lambda rng, size: valid_samples(draw, rng, size, self._valid)
        return estimator


def valid_samples(
    draw: Callable[[np.random.RandomState, int], dict[str, np.ndarray]],
    rng: np.random.RandomState,
    size: int,
    valid: Validity,
) -> dict[str, np.ndarray]:
    """``size`` candidates from ``draw``, valid ones only where the rule can tell and finds any; else ``draw``'s
    own first ``size``."""
    first = draw(rng, size)
    mask = valid(first) if first else None
    if mask is None or mask.all():
        return first
    kept = [{k: v[mask] for k, v in first.items()}]
    found = int(mask.sum())
    for _ in range(ROUNDS):
        if found >= size:
            break
        more = draw(rng, size * BATCH)
        more_mask = valid(more)
        if more_mask is None:
            break
        kept.append({k: v[more_mask] for k, v in more.items()})
        found += int(more_mask.sum())
    if found == 0:
        return first
    return {k: np.concatenate([part[k] for part in kept])[:size] for k in first}
