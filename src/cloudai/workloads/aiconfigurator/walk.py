"""aiconfigurator's own walk, by bisection: each worker layout at the largest batch that meets the SLA.

Why: ``aiconfigurator cli default`` estimates every parallel layout (tp, pp, dp, moe_tp, moe_ep) of a worker at
every batch of its schedule and keeps, per layout, what meets the SLA. A search over whole trials instead sits
on a local optimum: a MoE layout is four knobs tied by a rule (``moe_tp x moe_ep = tp x dp``), so no single move
reaches another valid one, and single moves climb a 96-value batch list a position a step. The model says more
(``Aiconfigurator.monotone``): a worker's latency grows with its batch, and so does its rate, so each layout's
best batch is the largest that meets the SLA. ``walk`` proposes, per worker role (agg; the disagg prefill and
decode sides), the middle of the untried batches between the largest measured that met the SLA and the smallest
that broke it (then the middles of the lower halves: a middle that does not fit memory takes no step and
measures nothing, and the agent takes the next), for the layout of the best step first; then each layout not
measured yet, at the best's batch and halving; then the other measured layouts by their best reward. A disagg
side's new layouts come last, after every measured layout's middles (one worker each: ``compose`` pairs and
counts the sides measured). A layout's edge is found in ~log2(batches) steps.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cloudai.workloads.base import MeasuredStep

LAYOUT = ("tp", "pp", "dp", "moe_tp", "moe_ep")
# role: (its mode, knob prefix, batch knob, the SLA metrics its latency sets)
ROLES = (("agg", "agg.", "batch_size", ("ttft_ms", "tpot_ms")), ("disagg", "disagg.p_", "bs", ("ttft_ms",)),
         ("disagg", "disagg.d_", "bs", ("tpot_ms",)))  # fmt: skip


def walk(measured: Sequence[MeasuredStep], meets: Callable[[str, float], bool], choices: Mapping[str, Sequence[Any]]
         ) -> list[dict[str, Any]]:  # fmt: skip
    """The walk's next points (see the module docstring), best first; [] before a step met the SLA."""
    ok = [m for m in measured if all(meets(k, v) for k, v in m[1].items())]
    if not ok:
        return []
    best = max(ok, key=lambda m: m[2])[0]
    found: list[dict[str, Any]] = []
    for mode, prefix, batch, metrics in ROLES:
        if best.get("mode", mode) == mode and len(choices.get(f"{prefix}{batch}", ())) > 1:
            found += _role(measured, meets, choices, best, (prefix, batch, metrics))
    return found


def _role(measured: Sequence[MeasuredStep], meets: Callable[[str, float], bool], choices: Mapping[str, Sequence[Any]],
          best: Mapping[str, Any], role: tuple[str, str, tuple[str, ...]]) -> list[dict[str, Any]]:  # fmt: skip
    prefix, batch, metrics = role
    knob = f"{prefix}{batch}"
    batches = sorted(choices[knob])
    layout = [f"{prefix}{k}" for k in LAYOUT if f"{prefix}{k}" in choices]
    edges: dict[tuple[Any, ...], tuple[int, int, float, Mapping[str, Any]]] = {}  # layout: lo, hi, reward, point
    for values, got, reward in measured:
        if values.get("mode", best.get("mode")) != best.get("mode") or values.get(knob) not in batches:
            continue
        key, at = tuple(values[k] for k in layout), batches.index(values[knob])
        lo, hi, top, point = edges.get(key, (-1, len(batches), float("-inf"), values))
        if all(meets(m, got[m]) for m in metrics if m in got):
            lo = max(lo, at)
            if reward > top:
                top, point = reward, values
        else:
            hi = min(hi, at)
        edges[key] = (lo, hi, top, point)
    ranked = sorted(edges.values(), key=lambda edge: edge[2], reverse=True)
    found = [p for lo, hi, _, point in ranked[:1] for p in _middle(point, knob, batches, lo, hi)]
    total, new = int(best.get("total_gpus") or 0), []
    at = batches.index(best[knob]) if best.get(knob) in batches else len(batches) // 2
    down = list(dict.fromkeys(at >> i for i in range(at.bit_length() + 1)))  # the best's batch, then halving
    for key in itertools.product(*(choices[k] for k in layout)):
        if key not in edges and _fits(dict(zip(layout, key, strict=True)), prefix, total):
            point = {**best, **dict(zip(layout, key, strict=True)), **_one_worker(prefix)}
            new += [{**point, knob: batches[i]} for i in down]  # the first the rule allows: the rest, after a step
    rest = [p for lo, hi, _, point in ranked[1:] for p in _middle(point, knob, batches, lo, hi)]
    return found + new + rest if prefix == "agg." else found + rest + new


def _middle(point: Mapping[str, Any], knob: str, batches: list[Any], lo: int, hi: int) -> list[dict[str, Any]]:
    """``point`` at the middle batch between ``lo`` (met the SLA; -1: none did) and ``hi`` (broke it; past the
    end: none did), then at the middle of each lower half in turn: where the rule refuses a middle (it does not
    fit memory: no step, no SLA measured), the agent takes the next. [] once ``lo`` and ``hi`` are neighbours."""
    found = []
    while lo < (mid := (lo + hi) // 2) < hi:
        found.append({**point, knob: batches[mid]})
        hi = mid
    return found


def _fits(layout: Mapping[str, Any], prefix: str, total: int) -> bool:
    """A worker of ``layout`` fits the GPUs and keeps ``moe_tp x moe_ep = tp x dp`` where both are knobs."""
    get = lambda k: int(layout.get(f"{prefix}{k}", 1))  # noqa: E731
    width = get("tp") * get("dp")
    moe = f"{prefix}moe_tp" in layout and f"{prefix}moe_ep" in layout
    return width * get("pp") <= (total or width * get("pp")) and (not moe or get("moe_tp") * get("moe_ep") == width)


def _one_worker(prefix: str) -> dict[str, Any]:
    """A disagg side's new layout goes with one worker of each role (the smallest replica that fits); the pairs
    and counts are ``compose``'s."""
    return {"disagg.p_workers": 1, "disagg.d_workers": 1} if prefix.startswith("disagg.") else {}
