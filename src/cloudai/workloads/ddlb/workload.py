"""``DDLBTest``: CloudAI's ``DDLBCmdArgs`` and the command CloudAI renders (``tests/ref_data/ddlb.sbatch``)::

    python ddlb/cli/benchmark.py --primitive tp_columnwise -m 1024 -n 128 -k 1024 --dtype float16
        --num-iterations 50 --num-warmups 5 --impl pytorch;backend=nccl;order=AG_before

Every field in declaration order: ``-m``/``-n``/``-k``, ``--num-iterations``/``--num-warmups``, the others
``--name``; then ``extra_cmd_args``. CloudAI reads no numbers from DDLB (its success check is the
``Benchmark Results`` header and no ``Error``); cloudai reads DDLB's results table (``parse``): ``default`` is the
throughput in TFLOPS (higher is better), so CloudAI's DSE file (``m`` and ``impl`` lists) has a metric to
optimise. The table is kept as ``ddlb.csv``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cloudai.config.fields import PositiveCount
from cloudai.errors import WorkloadError
from cloudai.workloads.base import JobContext, Workload, cloudai_extra_args, read_stdout, write_metrics
from cloudai.workloads.ddlb import parse
from cloudai.workloads.table import write_csv

CSV_FILE = "ddlb.csv"


class DDLBArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    docker_image_url: str = Field(min_length=1)
    primitive: str = Field(min_length=1)
    m: PositiveCount = 1024  # the GEMM's sizes: names too short for a rule by name
    n: PositiveCount = 128
    k: PositiveCount = 1024
    dtype: str = Field(min_length=1)
    num_iterations: int = 50
    num_warmups: int = 5
    impl: str = "pytorch;backend=nccl;order=AG_before"


def _flag(name: str) -> str:
    if len(name) == 1:
        return f"-{name}"
    return f"--{name.replace('_', '-')}" if name in ("num_iterations", "num_warmups") else f"--{name}"


class DDLBTest(Workload):
    name = "DDLBTest"
    args_model = DDLBArgs
    produces_metrics = True
    metrics = ("default", "throughput_tflops", "mean_time_ms", "min_time_ms", "max_time_ms")
    units = {"default": "TFLOPS", "throughput_tflops": "TFLOPS", **{m: "ms" for m in metrics[2:]}}
    noisy = True

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        values = DDLBArgs.model_validate(args).model_dump(exclude={"docker_image_url"})
        argv = ["python", "ddlb/cli/benchmark.py"]
        for name, value in values.items():
            argv += [_flag(name), str(value)]
        return argv + cloudai_extra_args(job.extra_cmd_args)

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return DDLBArgs.model_validate(args).docker_image_url

    def default_means(self, cmd_args: Mapping[str, Any]) -> str | None:
        return "throughput_tflops"

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        text = read_stdout(job_dir, "ddlb")
        rows = parse.parse(text)
        write_csv(job_dir / CSV_FILE, parse.COLUMNS, rows)
        problem = parse.verdict(rows, text)
        if problem:
            raise WorkloadError(problem)
        return write_metrics(job_dir, parse.metrics(rows))

    def failure_reason(self, job_dir: Path) -> str | None:
        try:
            text = read_stdout(job_dir, "ddlb")
        except WorkloadError as exc:
            return str(exc)
        return parse.verdict(parse.parse(text), text)
