"""How env param values fall into regimes: the one binning best.toml, the terminal and the report use."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from typing import Any, TypeGuard

REGIME_BINS = 3  # regimes per range env param in best.toml, the terminal and the report


def env_cell(value: Any) -> str:
    """How a sampled value is written to env.csv: TOML spelling for booleans, ``str`` otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class RegimeBins:
    """How one env param's values fall into *regimes*: the one binning best.toml, the terminal and the report use.

    A list param: one regime per candidate (labelled as env.csv writes it). A range: ``count`` equal-width bins
    of ``[low, high]`` in the scale it is sampled in (log for ``loguniform``), labelled ``[a, b)`` (the last
    ``[a, b]``). The run records each param's bins in ``run.json`` (``to_json``) so a report of the run bins
    exactly as the run did, without the TOML.
    """

    candidates: tuple[str, ...] | None = None
    weights: tuple[float, ...] | None = None  # a list param's draw weights, one per candidate (None: equal)
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    count: int = REGIME_BINS

    def label(self, value: Any) -> str:
        """The regime of ``value`` (a sampled value, or its env.csv cell read back as a number or word)."""
        if self.candidates is not None or not _is_number(value):
            return env_cell(value)
        lo, width = self._extent
        value = float(value)
        inside = width > 0 and (value > 0 or not self.log)
        index = int(((math.log(value) if self.log else value) - lo) / width * self.count) if inside else 0
        return self._texts[min(max(index, 0), self.count - 1)]

    def label_floats(self, values: list[float]) -> list[str] | None:
        """``label`` of each of ``values`` (finite floats) by numpy columns: the same sums, quotients and
        products as ``label`` (IEEE, one rounding each), the bin index clipped then truncated (as ``int`` then
        ``min``/``max``). None where that would not be ``label``'s own arithmetic (a list param, a log scale:
        numpy's ``log`` may round otherwise than ``math.log``; zero width)."""
        lo, width = self._extent
        if self.candidates is not None or self.log or not width > 0:
            return None
        import numpy as np

        scaled = (np.array(values, dtype=np.float64) - lo) / width * self.count
        index = np.clip(scaled, 0, self.count - 1).astype(np.intp)
        return list(map(self._texts.__getitem__, index.tolist()))

    def labels(self) -> list[str]:
        """Every regime, in order: the candidates, or the bins from low to high."""
        return list(dict.fromkeys(self.candidates)) if self.candidates is not None else list(self._texts)

    def shares(self) -> dict[str, float]:
        """Each regime's probability under the draw (a list's weights, normalised; a range's bins: not a
        distribution over regimes here, equal shares)."""
        labels = self.candidates if self.candidates is not None else self._texts
        weights = self.weights if self.weights is not None else (1.0,) * len(labels)
        shares: dict[str, float] = {}
        for label, weight in zip(labels, weights, strict=True):
            shares[label] = shares.get(label, 0.0) + weight / sum(weights)
        return shares

    def to_json(self) -> dict[str, Any]:
        if self.candidates is not None:
            weights = {"weights": list(self.weights)} if self.weights is not None else {}
            return {"candidates": list(self.candidates), **weights}
        return {"low": self.low, "high": self.high, "log": self.log, "bins": self.count}

    @classmethod
    def from_json(cls, raw: object) -> RegimeBins | None:
        """The bins ``to_json`` wrote; None for anything else (a hand-edited or older run.json)."""
        if not isinstance(raw, dict):
            return None
        if isinstance(raw.get("candidates"), list):
            candidates = tuple(str(c) for c in raw["candidates"])
            return cls(candidates=candidates, weights=_weights(raw.get("weights"), len(candidates)))
        low, high, bins = raw.get("low"), raw.get("high"), raw.get("bins")
        if not (_is_number(low) and _is_number(high) and isinstance(bins, int) and bins >= 1 and high > low):
            return None
        if raw.get("log") and low <= 0:
            return None
        return cls(low=float(low), high=float(high), log=bool(raw.get("log")), count=bins)

    @cached_property
    def _extent(self) -> tuple[float, float]:
        """(low, high - low) in the sampling scale."""
        lo, hi = (math.log(self.low), math.log(self.high)) if self.log else (self.low, self.high)
        return lo, hi - lo

    @cached_property
    def _texts(self) -> tuple[str, ...]:
        """Each bin's label: ``[a, b)``, the last one closed."""
        lo, width = self._extent
        edges = [lo + width * i / self.count for i in range(self.count + 1)]
        edges = [math.exp(e) for e in edges] if self.log else edges
        last = self.count - 1
        return tuple(f"[{a:.4g}, {b:.4g}{']' if i == last else ')'}" for i, (a, b) in enumerate(pairwise(edges)))


def _weights(raw: object, count: int) -> tuple[float, ...] | None:
    """Recorded draw weights, when they are ``count`` non-negative numbers with a positive sum (else None)."""
    if not isinstance(raw, list) or len(raw) != count or not all(_is_number(w) and w >= 0 for w in raw):
        return None
    weights = tuple(float(w) for w in raw)
    return weights if sum(weights) > 0 else None


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
