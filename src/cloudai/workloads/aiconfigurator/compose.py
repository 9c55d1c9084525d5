"""Disaggregated deployments composed from the sides a search has measured, as ``aiconfigurator cli default`` picks.

Why: a disagg trial is a prefill worker and a decode worker and their counts, and its tokens/s/GPU is fixed by each
side alone: aiconfigurator 0.12 (``sdk/picking.py``) rates a replica at ``min(0.9 P x, 0.92 D y)`` sequences/s on
``x gp + y gd`` GPUs (``P``, ``D``: one prefill and one decode worker's sequences/s, ``gp``, ``gd``: their GPUs,
``x``, ``y``: the worker counts), with the prefill worker's TTFT and the decode worker's TPOT. Its own search
measures each side once and tries every pair and count. A search over whole trials instead sits on a local
optimum: the best pair needs four knobs moved at once (two prefill tp-2 workers for one decode tp-8 worker, not
one tp-4 each). So every measured trial's two sides are kept, and the pairs and counts of the best sides that meet
the SLA are ranked by that formula: the top few are worth a step (``compose``), and the step's own estimate
says what they are worth.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudai.workloads.base import MeasuredStep

PREFILL_RATE, DECODE_RATE = "prefill_seq_per_s_per_worker", "decode_seq_per_s_per_worker"
DEGRADE = {"p_": 0.9, "d_": 0.92}  # aiconfigurator 0.12's rate-matching factors (prefill, decode)
LATENCY = {"p_": "ttft_ms", "d_": "tpot_ms"}  # what each side alone sets
RATE = {"p_": PREFILL_RATE, "d_": DECODE_RATE}
SIDES_KEPT = 6  # best sides per role (by sequences/s per GPU) whose pairs are ranked
PROPOSED = 3  # compositions returned, best first
_WORKER_GPUS = ("tp", "pp", "dp")


def compose(
    measured: Sequence[MeasuredStep],
    meets: Callable[[str, float], bool],
    choices: Mapping[str, Sequence[Any]],
) -> list[dict[str, Any]]:
    """The ``PROPOSED`` best disagg points (a measured trial's flat values, its ``disagg.*`` sides replaced)
    composed from ``measured`` (each trial's flat values, metrics and reward): the best ``SIDES_KEPT`` sides per
    role that meet the SLA (``meets(metric, value)``), every pair, every worker count the test allows (``choices``:
    each flat knob's values) whose replica fits ``total_gpus``, ranked by tokens/s over all ``total_gpus``. []
    without a measured disagg trial."""
    sides: dict[str, dict[tuple[tuple[str, Any], ...], tuple[float, int]]] = {"p_": {}, "d_": {}}
    base: Mapping[str, Any] = {}
    for values, metrics, _ in measured:
        if values.get("mode", "disagg") != "disagg" or "disagg.p_tp" not in values:
            continue
        base = values
        for role, found in sides.items():
            rate, latency = metrics.get(RATE[role]), metrics.get(LATENCY[role])
            if rate is None or latency is None or not meets(LATENCY[role], latency):
                continue
            knobs = tuple(sorted((k, v) for k, v in values.items()
                                 if k.startswith(f"disagg.{role}") and k != f"disagg.{role}workers"))  # fmt: skip
            found[knobs] = (rate, worker_gpus(values, f"disagg.{role}"))
    total = int(base.get("total_gpus") or 0)
    if not total or not all(sides.values()):
        return []
    best = {role: heapq.nlargest(SIDES_KEPT, found.items(), key=lambda kv: kv[1][0] / kv[1][1])
            for role, found in sides.items()}  # fmt: skip
    ranked: list[tuple[float, dict[str, Any]]] = []
    for p_knobs, (p_rate, p_gpus) in best["p_"]:
        for d_knobs, (d_rate, d_gpus) in best["d_"]:
            for x in choices.get("disagg.p_workers", (1,)):
                for y in choices.get("disagg.d_workers", (1,)):
                    replica = x * p_gpus + y * d_gpus
                    if replica > total:
                        continue
                    rate = (total // replica) * min(DEGRADE["p_"] * p_rate * x, DEGRADE["d_"] * d_rate * y)
                    point = {**base, **dict(p_knobs), **dict(d_knobs), "disagg.p_workers": x, "disagg.d_workers": y}
                    ranked.append((rate, point))
    return [point for _, point in heapq.nlargest(PROPOSED, ranked, key=lambda rp: rp[0])]


def worker_gpus(values: Mapping[str, Any], prefix: str) -> int:
    """The GPUs of one worker whose knobs start with ``prefix`` (``disagg.p_``): tp x pp x dp, as aiconfigurator
    counts them (the experts span the attention's GPUs)."""
    gpus = 1
    for name in _WORKER_GPUS:
        gpus *= int(values.get(f"{prefix}{name}", 1))
    return gpus
