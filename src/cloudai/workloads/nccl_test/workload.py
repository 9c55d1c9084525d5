"""``NcclTest``: CloudAI's ``NCCLCmdArgs`` fields and defaults, and the command line CloudAI renders.

The command is ``<subtest_name>`` then ``--<field> <value>`` for every other field in declaration
order (``-x`` for a one-letter field), then any extra ``[cmd_args]`` keys CloudAI passes through
(e.g. ``stepfactor = 2`` -> ``--stepfactor 2``), then ``extra_cmd_args``. A binary without ``_mpi``
(``all_reduce_perf``) is one process: ``-g N`` for ``ngpus``, and one task on Slurm
(``srun --ntasks=1`` in place of ``--mpi``). As CloudAI renders it::

    all_reduce_perf_mpi --nthreads 1 --ngpus 1 --minbytes 128 --maxbytes 4G --stepbytes 1M --op sum
        --datatype float --root 0 --iters 100 --warmup_iters 50 --agg_iters 1 --average 1
        --parallel_init 0 --check 1 --blocking 0 --cudagraph 0 --stepfactor 2

Metrics come from ``stdout.txt`` (see ``parse``); the per-size table is kept as ``nccl.csv``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from cloudai.config.fields import Count
from cloudai.errors import WorkloadError
from cloudai.workloads.base import JobContext, SizeText, Workload, cloudai_extra_args, read_stdout, write_metrics
from cloudai.workloads.nccl_test import parse
from cloudai.workloads.table import write_csv

Subtest = Literal[
    "all_reduce_perf_mpi",
    "all_gather_perf_mpi",
    "alltoall_perf_mpi",
    "alltoallv_perf_mpi",
    "broadcast_perf_mpi",
    "gather_perf_mpi",
    "hypercube_perf_mpi",
    "reduce_perf_mpi",
    "reduce_scatter_perf_mpi",
    "scatter_perf_mpi",
    "sendrecv_perf_mpi",
    "bisection_perf_mpi",
    "all_reduce_perf",
    "all_gather_perf",
    "alltoall_perf",
    "alltoallv_perf",
    "broadcast_perf",
    "gather_perf",
    "hypercube_perf",
    "reduce_perf",
    "reduce_scatter_perf",
    "scatter_perf",
    "sendrecv_perf",
    "bisection_perf",
]
CSV_FILE = "nccl.csv"
_NOT_FLAGS = ("docker_image_url", "subtest_name", "use_deepep_matrix", "alltoallv_matrix_container_path", "min_busbw")
ALLTOALLV_PERF = "/opt/nccl-tests/build/alltoallv_perf"  # CloudAI's binary for alltoallv_perf_mpi
_ALLTOALLV_SHORT = {"minbytes": "-b", "maxbytes": "-e", "ngpus": "-g", "warmup_iters": "-w", "iters": "-n"}


def _single_process(subtest: str) -> bool:
    """A binary without ``_mpi`` is one process driving ``-g`` GPUs (CloudAI: ``--ntasks=1``, ``-g N``)."""
    return not subtest.endswith("_mpi")


class NcclTestArgs(BaseModel):
    """CloudAI's fields, defaults and order (the order is the command line's). Unknown keys are
    passed to the binary as flags, as CloudAI does (``stepfactor``, ``minbytes``-style options it lacks)."""

    model_config = ConfigDict(extra="allow")

    docker_image_url: str = "nvcr.io/nvidia/pytorch:24.02-py3"
    subtest_name: Subtest = "all_reduce_perf_mpi"
    nthreads: int = 1
    ngpus: int = 1
    minbytes: SizeText = "32M"
    maxbytes: SizeText = "32M"
    stepbytes: SizeText = "1M"
    op: Literal["sum", "prod", "min", "max", "avg", "all"] = "sum"
    datatype: Literal["uint8", "float"] = "float"
    root: int = 0
    iters: Count = 20
    warmup_iters: Count = 5
    agg_iters: int = 1
    average: int = 1
    parallel_init: int = 0
    check: int = 1
    blocking: int = 0
    cudagraph: int = 0
    # CloudAI's fields that are not flags: a DeepEP traffic matrix for alltoallv (CloudAI finds it in a
    # start_post_comp MoE benchmark's output; cloudai does not: mount it at the container path yourself),
    # and a bus-bandwidth floor CloudAI's report grades against.
    use_deepep_matrix: bool = False
    alltoallv_matrix_container_path: str = "/tmp/traffic_matrix.txt"
    min_busbw: float | None = None


def _alltoallv_argv(model: NcclTestArgs) -> list[str]:
    """CloudAI's alltoallv command: its short flags for sizes, GPUs and iterations first, then every other field's
    ``--name value`` (``True`` as a bare flag, ``False`` left out) in declaration order."""
    values = model.model_dump()
    argv = [ALLTOALLV_PERF]
    for name, flag in _ALLTOALLV_SHORT.items():
        argv += [flag, str(values[name])]
    for name, value in values.items():
        if name in _NOT_FLAGS or name in _ALLTOALLV_SHORT or value is None or value is False:
            continue
        argv += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    return argv


class NcclTest(Workload):
    name = "NcclTest"
    args_model = NcclTestArgs
    produces_metrics = True
    metrics = ("default", "latency-in-place", "latency-out-of-place", "busbw", "algbw")
    noisy = True  # real hardware: confirm the best by default
    units = {"default": "us", "latency-in-place": "us", "latency-out-of-place": "us", "busbw": "GB/s", "algbw": "GB/s"}

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = NcclTestArgs.model_validate(args)
        if model.subtest_name == "alltoallv_perf_mpi":
            return _alltoallv_argv(model) + cloudai_extra_args(job.extra_cmd_args)
        single = _single_process(model.subtest_name)
        argv: list[str] = [model.subtest_name]
        for name, value in model.model_dump().items():
            if name in _NOT_FLAGS or value is None:
                continue
            if name == "ngpus" and single:
                argv += ["-g", str(value)]
            else:
                argv += [f"--{name}" if len(name) > 1 else f"-{name}", str(value)]
        return argv + cloudai_extra_args(job.extra_cmd_args)

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return NcclTestArgs.model_validate(args).docker_image_url or None

    def ntasks(self, args: Mapping[str, Any]) -> int | None:
        return 1 if _single_process(NcclTestArgs.model_validate(args).subtest_name) else None

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        result = parse.parse(read_stdout(job_dir, "nccl-tests"))
        write_csv(job_dir / CSV_FILE, parse.COLUMNS, result.rows)
        problem = parse.verdict(result)
        if problem:
            raise WorkloadError(problem)
        return write_metrics(job_dir, parse.metrics(result))
