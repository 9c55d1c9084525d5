"""aiconfigurator's walk by bisection (``aiconfigurator.walk``): each worker layout's largest batch that meets the
SLA, found by halving, best layout first, then the layouts not yet measured."""

from __future__ import annotations

from typing import Any

from cloudai.workloads.aiconfigurator.walk import walk

BATCHES = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128]
CHOICES: dict[str, list[Any]] = {"total_gpus": [8], "agg.tp": [1, 2, 4, 8], "agg.batch_size": BATCHES}


def meets(metric: str, value: float) -> bool:
    return value <= {"tpot_ms": 20.0}.get(metric, float("inf"))


def agg(tp: int, batch: int, tpot: float, reward: float) -> tuple[dict[str, Any], dict[str, float], float]:
    return {"total_gpus": 8, "agg.tp": tp, "agg.batch_size": batch}, {"tpot_ms": tpot}, reward


def test_the_best_layout_is_halved_between_its_largest_batch_in_the_sla_and_its_smallest_out() -> None:
    measured = [agg(2, 8, tpot=10, reward=100.0), agg(2, 128, tpot=40, reward=-1.0), agg(4, 8, tpot=8, reward=50.0)]
    first, *rest = walk(measured, meets, CHOICES)
    assert first == {"total_gpus": 8, "agg.tp": 2, "agg.batch_size": 32}  # between 8 (index 3) and 128 (index 10)
    # then the middle of the lower half (should 32 not fit memory), the layouts never measured at the best's batch
    # and halving (the first that fits), then tp 4 halved upwards from its 8
    assert [(p["agg.tp"], p["agg.batch_size"]) for p in rest] == [
        (2, 16), (1, 8), (1, 2), (1, 1), (8, 8), (8, 2), (8, 1), (4, 48), (4, 24), (4, 16)]  # fmt: skip


def test_a_layout_whose_edge_is_found_is_proposed_no_more() -> None:
    measured = [agg(t, b, tpot=10 if b <= 32 else 30, reward=float(b)) for t in (1, 2, 4, 8) for b in (32, 48)]
    assert walk(measured, meets, CHOICES) == []  # every layout: 32 met the SLA, the next batch (48) broke it


def test_nothing_before_a_step_met_the_sla() -> None:
    assert walk([agg(1, 128, tpot=50, reward=-1.0)], meets, CHOICES) == []


def test_a_new_moe_layout_keeps_the_experts_on_the_attentions_gpus_and_fits_the_cluster() -> None:
    choices = {**CHOICES, "agg.dp": [1, 2, 4, 8], "agg.moe_tp": [1, 2, 4, 8], "agg.moe_ep": [1, 2, 4, 8]}
    start = {"total_gpus": 8, "agg.tp": 1, "agg.dp": 2, "agg.moe_tp": 1, "agg.moe_ep": 2, "agg.batch_size": 8}
    proposed = walk([(start, {"tpot_ms": 10.0}, 1.0)], meets, choices)
    layouts = {(p["agg.tp"], p["agg.dp"], p["agg.moe_tp"], p["agg.moe_ep"]) for p in proposed}
    assert all(tp * dp <= 8 and moe_tp * moe_ep == tp * dp for tp, dp, moe_tp, moe_ep in layouts)
    assert (2, 4, 8, 1) in layouts and (1, 1, 1, 1) in layouts and len(layouts) == 30  # every valid one, once
