"""Disagg deployments composed from measured sides (``aiconfigurator.compose``): aiconfigurator's pairing rule over
what a search measured, without the package (its agreement with the package is in ``test_aiconfigurator_env``)."""

from __future__ import annotations

from typing import Any

from cloudai.workloads.aiconfigurator.compose import DECODE_RATE, PREFILL_RATE, compose

WORKERS = {"disagg.p_workers": list(range(1, 9)), "disagg.d_workers": list(range(1, 9))}
SLA = {"ttft_ms": 1000.0, "tpot_ms": 20.0}


def meets(metric: str, value: float) -> bool:
    return value <= SLA.get(metric, float("inf"))


def trial(p_tp: int, d_tp: int, d_bs: int, p_rate: float, d_rate: float, ttft: float, tpot: float) -> tuple:
    values: dict[str, Any] = {"total_gpus": 8, "disagg.p_tp": p_tp, "disagg.p_bs": 1, "disagg.p_workers": 1,
                              "disagg.d_tp": d_tp, "disagg.d_bs": d_bs, "disagg.d_workers": 1}  # fmt: skip
    return values, {PREFILL_RATE: p_rate, DECODE_RATE: d_rate, "ttft_ms": ttft, "tpot_ms": tpot}, 0.0


def test_the_best_sides_of_different_trials_are_paired_with_the_counts_that_fill_the_gpus() -> None:
    measured = [
        trial(p_tp=1, d_tp=4, d_bs=8, p_rate=10.0, d_rate=5.0, ttft=300, tpot=10),  # a fast prefill worker
        trial(p_tp=4, d_tp=1, d_bs=64, p_rate=12.0, d_rate=6.0, ttft=200, tpot=15),  # a fast decode worker
    ]
    best = compose(measured, meets, WORKERS)[0]
    # 1-GPU prefill at 10 seq/s and 1-GPU decode at 6: 3 prefill + 5 decode on 8 GPUs gives
    # min(0.9 * 30, 0.92 * 30) = 27 seq/s, better than any other split or replica count
    assert {k: best[k] for k in ("disagg.p_tp", "disagg.d_tp", "disagg.d_bs")} == {
        "disagg.p_tp": 1, "disagg.d_tp": 1, "disagg.d_bs": 64}  # fmt: skip
    assert (best["disagg.p_workers"], best["disagg.d_workers"]) == (3, 5)
    assert best["total_gpus"] == 8  # the rest of the point is a measured trial's


def test_a_side_past_its_sla_is_never_paired() -> None:
    measured = [
        trial(p_tp=1, d_tp=1, d_bs=256, p_rate=10.0, d_rate=50.0, ttft=300, tpot=25),  # decode breaks TPOT
        trial(p_tp=1, d_tp=1, d_bs=16, p_rate=10.0, d_rate=2.0, ttft=300, tpot=12),
    ]
    assert {p["disagg.d_bs"] for p in compose(measured, meets, WORKERS)} == {16}


def test_nothing_is_proposed_without_a_side_that_meets_the_sla_or_a_disagg_trial() -> None:
    assert compose([trial(1, 1, 16, 10.0, 2.0, ttft=1500, tpot=12)], meets, WORKERS) == []
    agg = ({"total_gpus": 8, "agg.tp": 1, "agg.batch_size": 8}, {"tokens_per_s_per_gpu": 100.0}, 100.0)
    assert compose([agg], meets, WORKERS) == []


def test_a_replica_larger_than_the_cluster_is_never_proposed() -> None:
    measured = [trial(p_tp=4, d_tp=8, d_bs=64, p_rate=10.0, d_rate=6.0, ttft=200, tpot=15)]
    assert compose(measured, meets, WORKERS) == []  # 4 + 8 GPUs do not fit 8
