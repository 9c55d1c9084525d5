"""The model-parallel validity rule of LLM training (CloudAI's NeMoRun and MegatronBridge ``constraint_check``).

A training point splits ``num_gpus`` into tensor (tp) x pipeline (pp) x context (cp) parallel groups; what is
left is data parallel, ``dp = num_gpus / (tp * pp * cp)``, a derived value (never a knob). The point is valid when

1. ``num_gpus % (tp * pp * cp) == 0``;
2. ``(num_layers // pp) % vp == 0`` when virtual pipelining (vp) is set (CloudAI's integer division);
3. ``dp != 0``;
4. ``gbs % (mbs * dp * extra) == 0`` (``extra``: MegatronBridge's distributed-optimizer instances under FSDP, else 1).

``violation`` names the first broken rule with the values, as a one-line reason a trajectory row carries;
``valid_mask`` is the same rule over numpy columns (one row per point), for counting a grid of ~10^6 points in
milliseconds. Both must agree point for point (``tests/workloads/test_training_rules.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Column = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Parallelism:
    """One point's knobs the rule reads. ``vp``/``mbs``/``gbs``/``num_layers`` None: not set (that part holds)."""

    num_gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    vp: int | None = None
    mbs: int | None = None
    gbs: int | None = None
    num_layers: int | None = None
    extra: int = 1  # a further divisor of gbs (MegatronBridge: num_distributed_optimizer_instances under FSDP)

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp * self.cp

    @property
    def dp(self) -> int:
        """Data parallel size, as CloudAI computes it (floor division; 0 when the model groups outnumber GPUs)."""
        return self.num_gpus // self.model_parallel if self.model_parallel > 0 else 0


def violation(p: Parallelism) -> str | None:
    """Why ``p`` cannot run (the first broken rule, with its values), or None."""
    denom = p.model_parallel
    if denom <= 0 or p.num_gpus % denom:
        return f"num_gpus % (tp*pp*cp) != 0: {p.num_gpus} GPUs, tp={p.tp} pp={p.pp} cp={p.cp} (tp*pp*cp={denom})"
    if p.vp is not None:
        if p.num_layers is None:
            return f"vp={p.vp} needs num_layers to check (num_layers // pp) % vp == 0"
        if p.vp <= 0 or (p.num_layers // p.pp) % p.vp:
            return f"(num_layers // pp) % vp != 0: num_layers={p.num_layers} pp={p.pp} vp={p.vp}"
    dp = p.dp
    if dp == 0:
        return f"dp = num_gpus // (tp*pp*cp) is 0: {p.num_gpus} GPUs, tp*pp*cp={denom}"
    if p.mbs is not None and p.gbs is not None:
        divisor = p.mbs * dp * p.extra
        if divisor <= 0 or p.gbs % divisor:
            extra = f" * ndo({p.extra})" if p.extra != 1 else ""
            return f"gbs % (mbs * dp{extra}) != 0: gbs={p.gbs} mbs={p.mbs} dp={dp} (dp = {p.num_gpus} GPUs / {denom})"
    return None


def valid_mask(
    num_gpus: Column | int,
    tp: Column | int | None,
    pp: Column | int | None,
    cp: Column | int | None,
    *,
    vp: Column | int | None = None,
    mbs: Column | int | None = None,
    gbs: Column | int | None = None,
    num_layers: Column | int | None = None,
    extra: Column | int = 1,
) -> npt.NDArray[np.bool_]:
    """``violation(...) is None`` for every row of the columns (broadcast together); ``vp`` 0 means not set, a
    None tp/pp/cp is 1."""
    gpus, tp_, pp_, cp_ = (np.asarray(1 if c is None else c, dtype=np.int64) for c in (num_gpus, tp, pp, cp))
    denom = tp_ * pp_ * cp_
    safe = np.where(denom > 0, denom, 1)
    ok = (denom > 0) & (gpus % safe == 0)
    dp = np.where(denom > 0, gpus // safe, 0)
    ok = ok & (dp != 0)
    if vp is not None:
        vp_ = np.asarray(vp, dtype=np.int64)
        if num_layers is None:
            ok = ok & (vp_ == 0)
        else:
            layers = np.asarray(num_layers, dtype=np.int64) // np.where(pp_ > 0, pp_, 1)
            ok = ok & ((vp_ == 0) | ((vp_ > 0) & (layers % np.where(vp_ > 0, vp_, 1) == 0)))
    if mbs is not None and gbs is not None:
        divisor = np.asarray(mbs, dtype=np.int64) * dp * np.asarray(extra, dtype=np.int64)
        ok = ok & (divisor > 0) & (np.asarray(gbs, dtype=np.int64) % np.where(divisor > 0, divisor, 1) == 0)
    return np.asarray(ok)  # broadcast over every column it read (the caller broadcasts it to the grid)


def column(columns: Mapping[str, npt.ArrayLike], name: str, default: int | None) -> Column | int | None:
    """A knob's column (flat name), or its fixed default; a None (unset) value in a column reads as 0. A numeric
    column is used as it is (no copy per knob: counting 10^6 points stays a few array passes)."""
    if name not in columns:
        return default
    values = np.asarray(columns[name])
    if values.dtype.kind in "iub":
        return values.astype(np.int64, copy=False)
    objects = values.astype(object)
    return np.where(objects == None, 0, objects).astype(np.int64)  # noqa: E711 (elementwise None test)
