"""Each configuration's mean reward in each regime of one env param (``regimes``), worked out over columns.

A long run has ~10^5 scored steps, nearly every configuration measured once: rather than a dict of means per
regime, the (regime, configuration) pairs are found by ``np.unique`` and summed by ``np.bincount``. A pair measured
once has its reward as its mean, plus 0.0 (``bincount`` starts each sum from 0.0, as ``fmean`` of one -0.0 is
0.0); a pair measured more often gets ``fmean`` of its rewards, so every mean is the per-step definition's, bit for
bit (tests/reports/test_report_column_paths.py). Imported by ``regimes`` when a page has regimes to show: a plain
run's report imports no numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.intp]


@dataclass(frozen=True)
class PairMeans:
    """The (regime, configuration) pairs measured, sorted by regime then configuration code."""

    config: Ints  # each pair's configuration code
    mean: npt.NDArray[np.float64]  # each pair's mean reward
    bounds: list[int]  # the pairs of regime i are [bounds[i], bounds[i + 1])

    def regime(self, i: int) -> tuple[Ints, npt.NDArray[np.float64]]:
        """Regime ``i``'s configuration codes (ascending) and their means."""
        lo, hi = self.bounds[i], self.bounds[i + 1]
        return self.config[lo:hi], self.mean[lo:hi]

    def mean_of(self, i: int, code: int) -> float | None:
        """The mean of configuration ``code`` in regime ``i``; None when it was not measured there."""
        codes, means = self.regime(i)
        at = int(np.searchsorted(codes, code))
        return float(means[at]) if at < len(codes) and codes[at] == code else None

    def worst(self, regimes: int, configs: int) -> dict[int, float]:
        """Configuration code -> its lowest regime mean, for those measured in every one of the ``regimes``."""
        if not regimes:
            return {}
        everywhere = np.flatnonzero(np.bincount(self.config, minlength=configs) == regimes)
        if not len(everywhere):  # a long run's usual case: no configuration was measured in every regime
            return {}
        kept = np.isin(self.config, everywhere)
        lowest = np.full(configs, np.inf)
        np.minimum.at(lowest, self.config[kept], self.mean[kept])
        return dict(zip(everywhere.tolist(), lowest[everywhere].tolist(), strict=True))


def pair_means(regime: Ints, config: Ints, rewards: npt.NDArray[np.float64], regimes: int, configs: int) -> PairMeans:
    """``regime``: each scored step's regime (its position in the regime order; -1: none), ``config``: its
    configuration's code (< ``configs``), ``rewards``: its reward."""
    kept = regime >= 0
    values = rewards[kept]
    pairs, inverse, counts = np.unique(regime[kept] * configs + config[kept], return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=values, minlength=len(pairs)).astype(np.float64, copy=False)  # it is
    again = np.flatnonzero(counts > 1)
    if len(again):
        order, ends = np.argsort(inverse, kind="stable"), np.cumsum(counts)
        for g in again.tolist():
            means[g] = fmean(values[order[ends[g] - counts[g] : ends[g]]].tolist())
    bounds = np.searchsorted(pairs, np.arange(regimes + 1) * configs).tolist()
    return PairMeans(pairs % configs, means, bounds)
