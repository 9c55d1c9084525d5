"""A cloudai trial of each configuration ``aiconfigurator cli default`` picked reports the numbers it reports.

The rows are ``cli default``'s own ``best_config_topn.csv`` (top 3 agg and top 3 disagg of three questions,
recorded by ``benchmarks/aiconfigurator_cli_rows.py``); two questions have picks whose replica does not divide
``--total-gpus`` (8 GPUs a replica on 12 and on 10). Each trial is the workload's own argv (the runner asking the
warm worker), its cmd_args written from the row: the per-GPU throughput is ``tokens/s/gpu_cluster`` (over all
the question's GPUs), the replica's own ``tokens/s/gpu`` is kept beside it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloudai.workloads.aiconfigurator import worker
from cloudai.workloads.aiconfigurator.catalog import ENV
from cloudai.workloads.aiconfigurator.workload import Aiconfigurator
from cloudai.workloads.base import JobContext

HERE = Path(__file__).resolve().parent
CACHE = HERE.parents[2] / ".cache" / "install"
RECORDED = json.loads((HERE / "cli_default_rows.json").read_text())
QUANT = {"gemm_quant_mode": "gemm", "kvcache_quant_mode": "kvcache", "fmha_quant_mode": "fmha",
         "moe_quant_mode": "moe", "comm_quant_mode": "comm"}  # fmt: skip
CASES = [(name, mode, rank) for name, q in RECORDED["questions"].items() for mode in ("agg", "disagg")
         for rank in range(len(q[mode]))]  # fmt: skip


@pytest.fixture(scope="module")
def install() -> Iterator[Path]:
    if not ENV.installed(CACHE):
        pytest.skip(f"no aiconfigurator environment at {CACHE}: run .ci/run's `cloudai install` step first")
    proc = worker.start(CACHE)
    yield CACHE
    if proc is not None:
        worker.stop(proc)


def question(argv: list[str]) -> dict[str, Any]:
    flags = dict(zip(argv[::2], argv[1::2], strict=True))
    numbers = {name: int(flags[f"--{name.replace('_', '-')}"]) for name in ("isl", "osl", "total_gpus")}
    return {"model_name": flags["--model-path"], "system": flags["--system"], "backend": flags["--backend"], **numbers}


def cmd_args(argv: list[str], mode: str, row: dict[str, str]) -> dict[str, Any]:
    """The row's configuration in cloudai's field names (quant modes from the prefill side for disagg)."""
    n = lambda key: int(float(row[key]))  # noqa: E731
    if mode == "agg":
        fields = {"batch_size": n("bs"), "ctx_tokens": n("ctx_tokens"), "tp": n("tp"), "pp": n("pp"), "dp": n("dp"),
                  "moe_tp": n("moe_tp"), "moe_ep": n("moe_ep")}  # fmt: skip
        quant = {ours: row[theirs] for ours, theirs in QUANT.items()}
    else:
        fields = {f"{s}_{k}": n(f"({s}){c}") for s in "pd" for k, c in
                  (("tp", "tp"), ("pp", "pp"), ("dp", "dp"), ("bs", "bs"), ("workers", "workers"),
                   ("moe_tp", "moe_tp"), ("moe_ep", "moe_ep"))}  # fmt: skip
        quant = {ours: row[f"(p){theirs}"] for ours, theirs in QUANT.items()}
    return question(argv) | {mode: fields | quant}


@pytest.mark.parametrize(("name", "mode", "rank"), CASES, ids=[f"{n}-{m}-{r + 1}" for n, m, r in CASES])
def test_a_trial_of_cli_defaults_pick_reports_its_numbers(
    install: Path, tmp_path: Path, name: str, mode: str, rank: int
) -> None:
    q = RECORDED["questions"][name]
    row = q[mode][rank]
    job = JobContext(job_dir=tmp_path, install_path=install)
    done = subprocess.run(Aiconfigurator().argv(cmd_args(q["argv"], mode, row), job), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    ours = json.loads((tmp_path / "metrics.json").read_text())
    total = int(question(q["argv"])["total_gpus"])
    replica = int(row["num_total_gpus"])
    assert ours["tokens_per_s_per_gpu"] == pytest.approx(float(row["tokens/s/gpu_cluster"]), abs=1e-3)
    assert ours["default"] == ours["tokens_per_s_per_gpu"]
    assert ours["tokens_per_s_per_gpu_replica"] == pytest.approx(float(row["tokens/s/gpu"]), abs=1e-3)
    assert (ours["ttft_ms"], ours["tpot_ms"]) == pytest.approx((float(row["ttft"]), float(row["tpot"])), abs=1e-3)
    assert (ours["replicas"], ours["gpus_per_replica"], ours["total_gpus"]) == (total // replica, replica, total)
    assert ours["gpus_used"] == total // replica * replica


def test_the_recorded_questions_include_replicas_that_do_not_divide_the_gpus() -> None:
    """Without such a row the suite above could not tell a per-replica figure from the cluster's."""
    short = [(name, mode) for name, q in RECORDED["questions"].items() for mode in ("agg", "disagg") for row in q[mode]
             if float(row["tokens/s/gpu_cluster"]) < float(row["tokens/s/gpu"])]  # fmt: skip
    assert {name for name, _ in short} >= {"llama3.1-8b-h200-sglang-12", "qwen3-30b-a3b-h200-vllm-10"}, short
