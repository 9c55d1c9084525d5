"""``Aiconfigurator``: NVIDIA's CPU-only LLM-serving performance model as a workload, CloudAI's files unchanged.

A trial is one estimate of TTFT, TPOT and throughput for one serving configuration (aggregated or disaggregated)
of a model on a GPU system and backend, from the kernel databases the ``aiconfigurator`` package ships. The
package (~850 MB with pandas, scipy, pyarrow...) is never cloudai's dependency: ``cloudai install`` puts the
pinned release into its own uv environment under the system's ``install_path`` (``installables``), and the
trial's argv runs ``runner.py`` (this package's stdlib-only script) with that environment's Python. The runner
asks a warm worker process (see ``runner``'s docstring), so a trial after the first costs milliseconds, not the
~3 s of importing the package and loading a database. While a run holds that worker (standalone), a trial is
not even a process: ``evaluate`` asks the worker from cloudai's process and writes the same files the runner
would (``runner.record``, one function for both), so a trial costs about its estimate.

Metrics are CloudAI's names (``default`` = tokens/s/gpu, CloudAI's rule) plus ``request_latency_ms``,
``tokens_per_s``, ``memory_gb`` and the replica count. The per-GPU figure is aiconfigurator's own quantity: with
``total_gpus``, whole replicas fill the GPUs and the throughput is divided by all of them, idle ones included
(``runner.on_cluster``); the replica's own figure is ``tokens_per_s_per_gpu_replica``. The release and database
version each trial used are in its ``stdout.txt`` and ``report.json``.

What the model rules out. A configuration that does not fit GPU memory, or that the model refuses to estimate (a
MoE width other than the attention width, no database data for that MoE shape), is ``infeasible`` (no job, no
step), its reason the model's own line, when a warm worker is there to ask (``worker.oom``: a run on this
machine); a sampler's redraw of it costs a dict look-up. The vectorised rule (``constraint_mask``) refuses the
MoE width mismatch for every grid point, and, from what the run's worker said does not fit, the same
configuration at larger batches, so TPE does not propose them at all. Without a worker (a Slurm run) the trial
runs and fails with the model's reason, as it always did.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from cloudai.errors import WorkloadError
from cloudai.installables import Installable
from cloudai.readfile import read_ends
from cloudai.space.knobs import NUM_NODES, flatten
from cloudai.steps import Evaluation
from cloudai.workloads.aiconfigurator import catalog
from cloudai.workloads.aiconfigurator.args import MODES, AiconfiguratorArgs, moe_problem, request
from cloudai.workloads.aiconfigurator.compose import compose
from cloudai.workloads.aiconfigurator.runner import OOM
from cloudai.workloads.aiconfigurator.walk import walk
from cloudai.workloads.aiconfigurator.worker import (
    WIDTH_MISMATCH,
    evaluation,
    moe_models,
    oom,
    out_of_memory,
    remember_moe,
    remember_oom,
    warm_worker,
)
from cloudai.workloads.base import (
    ONE_NODE,
    STDOUT_FILE,
    JobContext,
    LatencyCharts,
    MeasuredStep,
    Monotone,
    ResourceColumns,
    Resources,
    Workload,
)
from cloudai.workloads.validity import one_value, past_points

METRICS = (
    "default",
    "ttft_ms",
    "tpot_ms",
    "tokens_per_s_per_gpu",
    "tokens_per_s_per_user",
    "request_latency_ms",
    "tokens_per_s",
    "memory_gb",
    "tokens_per_s_per_gpu_replica",
    "replicas",
    "gpus_per_replica",
    "gpus_used",
    "total_gpus",
)
UNITS = {
    "ttft_ms": "ms",
    "tpot_ms": "ms",
    "request_latency_ms": "ms",
    "tokens_per_s_per_gpu": "tokens/s/GPU",
    "tokens_per_s_per_user": "tokens/s/user",
    "tokens_per_s": "tokens/s",
    "memory_gb": "GB",
    "tokens_per_s_per_gpu_replica": "tokens/s/GPU",
    "gpus_per_replica": "GPUs",
    "gpus_used": "GPUs",
    "total_gpus": "GPUs",
}


class Aiconfigurator(Workload):
    name = "Aiconfigurator"
    hardware = "cpu"  # a performance model: it runs here for real
    args_model = AiconfiguratorArgs
    branches = {"mode": MODES}  # mode = ["agg", "disagg"]: one search over both (args.py)
    produces_metrics = True
    metrics = METRICS
    units = UNITS
    latency_charts = LatencyCharts("tokens_per_s_per_gpu", (("ttft_ms",), ("tpot_ms",)))  # TTFT, TPOT per GPU tokens/s

    def default_means(self, cmd_args: Mapping[str, Any]) -> str | None:
        return "tokens_per_s_per_gpu"

    def installables(self, args: Mapping[str, Any]) -> Sequence[Installable]:
        return (catalog.ENV,)

    def installed_problem(self, args: Mapping[str, Any], install_path: Path) -> tuple[str, str] | None:
        """The model, system, backend or database version the installed release does not ship."""
        return catalog.problem(AiconfiguratorArgs.model_validate(args), catalog.catalog(install_path))

    def session(self, install_path: Path | None) -> AbstractContextManager[None]:
        """One warm worker for the run's trials (``worker``)."""
        return warm_worker(install_path) if install_path is not None else nullcontext()

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        values = AiconfiguratorArgs.model_validate(args)
        python = catalog.ENV.python(job.install_path) if job.install_path else Path("python3")
        argv = [str(python), str(catalog.RUNNER), "trial", str(job.job_dir.absolute()), json.dumps(request(values))]
        return argv if values.total_gpus is None else [*argv, str(values.total_gpus)]

    def evaluate(self, args: Mapping[str, Any], job: JobContext) -> Evaluation | None:
        """The trial in cloudai's process while the run's warm worker listens (``worker.evaluation``): the argv's
        files, stdout and exit code, without its process. None (the argv runs) without a worker, or when the
        test's ``extra_env_vars`` say ``CLOUDAI_AICONFIGURATOR_WORKER = "0"`` (the trial estimates itself)."""
        if job.env.get("CLOUDAI_AICONFIGURATOR_WORKER", "1") == "0":
            return None
        values = AiconfiguratorArgs.model_validate(args)
        return evaluation(request(values), values.total_gpus, job.job_dir.absolute())

    def ntasks(self, args: Mapping[str, Any]) -> int | None:
        return 1  # one estimate, not an MPI program

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        """A configuration (one replica: its prefill and decode workers together) must fit in ``total_gpus``, a
        worker's MoE width must match its attention width (``args.moe_problem``), and it must fit in GPU memory by the
        model's own estimate when a warm worker can tell (``worker.oom``)."""
        values = AiconfiguratorArgs.model_validate(args)
        total = values.total_gpus
        if total is not None and values.gpus > total:
            budget = "" if values.budget is None else f" (what budget {values.budget:g} buys of {values.system})"
            return f"uses {values.gpus} GPUs, more than total_gpus = {total}{budget}"
        if problem := moe_problem(values, values.model_name in moe_models()):
            return problem
        reason = oom(request(values))
        if reason is not None and reason.startswith(OOM):
            remember_oom(flatten(args))
        if reason is not None and reason.startswith(WIDTH_MISMATCH):
            remember_moe(values.model_name)
        return reason

    def monotone(self, metric: str, values: Mapping[str, Any]) -> Monotone | None:
        """The model's latencies grow with the batch: agg TTFT and TPOT with ``batch_size``; disagg TTFT is the
        prefill worker's (it grows with ``p_bs``, the decode side and the worker counts have no bearing on it), TPOT
        the decode worker's (``d_bs``; the prefill side and the counts have none). Checked on aiconfigurator 0.12:
        random disagg pairs differing in the other side (Llama-3.1-70B h100 trtllm, Qwen3-8B b200 vllm) gave equal
        TTFT and TPOT, and no batch doubling lowered either; agg batch sizes 1-512 at tp 1-8 likewise."""
        if metric not in ("ttft_ms", "tpot_ms"):
            return None
        if values.get("mode", "agg" if any(name.startswith("agg.") for name in values) else "disagg") == "agg":
            return Monotone(frozenset({"agg.batch_size"}))
        kept, other = ("p_", "d_") if metric == "ttft_ms" else ("d_", "p_")
        free = {name for name in values if name.startswith(f"disagg.{other}")} | {f"disagg.{kept}workers"}
        return Monotone(frozenset({f"disagg.{kept}bs"}), frozenset(free))

    def proposals(
        self,
        measured: Sequence[MeasuredStep],
        meets: Callable[[str, float], bool],
        choices: Mapping[str, Sequence[Any]],
    ) -> list[dict[str, Any]]:
        """Disagg deployments composed from the measured trials' sides, as ``cli default`` pairs them
        (``aiconfigurator.compose``), then its walk over every worker layout, each at the largest batch that meets
        the SLA, by bisection (``aiconfigurator.walk``)."""
        return compose(measured, meets, choices) + walk(measured, meets, choices)

    def derived(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> dict[str, Any]:
        """``total_gpus`` when ``budget`` and ``gpu_price`` set it."""
        values = AiconfiguratorArgs.model_validate(args)
        return {} if values.budget is None else {"total_gpus": values.total_gpus}

    def constraint_mask(self, columns: Mapping[str, np.ndarray], resources: ResourceColumns) -> np.ndarray | None:
        """``constraint`` over columns of points (flat names: ``agg.tp``, ``disagg.p_tp``, ``mode``, ``total_gpus``
        or ``budget``, ``gpu_price.<system>`` and ``system``), so a grid is counted and walked, and a sampler's
        candidates judged, without building each point: the GPU count, the MoE rule, and memory as far as this
        run's answers tell (``_beyond_memory``). The rest of memory needs the model, point by point: a grid's count
        is an upper bound, and each step's own check refuses what it rules out. None (decline) for columns of
        another shape."""
        try:
            total = _cluster_gpus(columns)
            agg = _product(columns, "agg.", ("tp", "pp", "dp"))
            prefill = _product(columns, "disagg.", ("p_workers", "p_tp", "p_pp", "p_dp"))
            disagg = prefill + _product(columns, "disagg.", ("d_workers", "d_tp", "d_pp", "d_dp"))
            moe_agg = _moe_mask(columns, "agg.", "")
            moe_disagg = _moe_mask(columns, "disagg.", "p_") & _moe_mask(columns, "disagg.", "d_")
            mode = columns.get("mode")
            if mode is not None:
                is_agg = np.asarray(mode) == "agg"
                gpus, moe = np.where(is_agg, agg, disagg), np.where(is_agg, moe_agg, moe_disagg)
            elif any(name.startswith("agg.") for name in columns):
                gpus, moe = agg, moe_agg
            else:
                gpus, moe = disagg, moe_disagg
            fits = moe & ~_beyond_memory(columns)
            return fits if total is None else fits & (gpus <= total)
        except (TypeError, ValueError, KeyError):
            return None

    def failure_reason(self, job_dir: Path) -> str | None:
        """The runner's ``error: ...`` line (the model's own reason: out of memory, no database...)."""
        try:
            data, _ = read_ends(job_dir / STDOUT_FILE, 1 << 16, 1 << 16)
        except OSError:
            return None
        lines = data.decode(errors="replace").splitlines()
        return next((line[len("error: ") :] for line in reversed(lines) if line.startswith("error: ")), None)

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        metrics = super().read_metrics(job_dir)
        if "tokens_per_s_per_gpu" not in metrics:
            raise WorkloadError("metrics.json has no tokens_per_s_per_gpu: the estimate did not finish")
        return metrics


def _beyond_memory(columns: Mapping[str, np.ndarray]) -> np.ndarray:
    """Where a point needs at least the memory of one the model said does not fit (``worker.out_of_memory``):
    the same configuration in every field but the batch sizes, which are no smaller, and the worker counts
    (memory is per worker). Memory grows with the batch (its KV cache and activations), so such a point does
    not fit either: the mask refuses it without an estimate. Only what this run's worker answered; a grid's
    count is unchanged: columns broadcast along axes of their own (``ValidPoints.count``, an upper bound in any
    case) are left to the rest of the rule."""
    if any(np.ndim(column) > 1 for column in columns.values()):
        return np.asarray(False)
    return past_points(columns, out_of_memory(), _BATCHES, frozenset({NUM_NODES, *_PER_REPLICA}))


_BATCHES = frozenset({"agg.batch_size", "disagg.p_bs", "disagg.d_bs"})
_PER_REPLICA = frozenset({"disagg.p_workers", "disagg.d_workers", "total_gpus"})  # no bearing on a worker's memory


def _cluster_gpus(columns: Mapping[str, np.ndarray]) -> np.ndarray | None:
    """``AiconfiguratorArgs.total_gpus`` as validated, over columns: ``total_gpus``, or ``budget`` over the price of
    each point's ``system`` (``gpu_price.<system>`` columns); None when neither is given."""
    budget = columns.get("budget")
    if budget is not None and not _absent(budget):
        system = np.asarray(columns["system"])
        price = np.full(np.broadcast(system, budget).shape, np.nan)
        for name, col in columns.items():
            if name.startswith("gpu_price."):
                price = np.where(system == name.removeprefix("gpu_price."), np.asarray(col, dtype=np.float64), price)
        return np.floor(np.asarray(budget, dtype=np.float64) / price + 1e-9)
    total = columns.get("total_gpus")
    return None if _absent(total) else np.asarray(total, dtype=np.int64)


def _moe_mask(columns: Mapping[str, np.ndarray], prefix: str, role: str) -> np.ndarray:
    """``args.moe_problem`` for one worker over columns (True: no problem)."""
    names = [f"{prefix}{role}{knob}" for knob in ("moe_tp", "moe_ep")]
    if any(_absent(columns.get(name)) for name in names):
        return np.asarray(True)
    moe_tp, moe_ep = (np.asarray(columns[name], dtype=np.int64) for name in names)
    tp, dp = (_product(columns, prefix, (f"{role}{knob}",)) for knob in ("tp", "dp"))
    moe = np.isin(one_value(columns.get("model_name", np.asarray(None, dtype=object))), list(moe_models()))
    ok = (moe_tp * moe_ep == tp * dp) | ((moe_tp == 1) & (moe_ep == 1) & ~moe)
    backend = np.asarray(columns.get("backend", np.asarray("trtllm", dtype=object)))
    ok = ok & ~((backend == "trtllm") & (dp > 1) & (tp > 1) & ~((moe_tp == 1) & (moe_ep == 1)))
    return ok & ~((backend == "vllm") & (moe_tp > 1) & (moe_ep > 1))


def _absent(column: np.ndarray | None) -> bool:
    """No column, or a fixed None (a field left out)."""
    return column is None or (np.ndim(column) == 0 and np.asarray(column).item() is None)


def _product(columns: Mapping[str, np.ndarray], prefix: str, names: Sequence[str]) -> np.ndarray:
    """The product of the knobs ``prefix + name`` (1 where a knob has no column: the field's default)."""
    out = np.asarray(1, dtype=np.int64)
    for name in names:
        if (column := columns.get(prefix + name)) is not None:
            out = out * np.asarray(column, dtype=np.int64)
    return out
