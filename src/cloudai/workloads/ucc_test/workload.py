"""``UCCTest``: CloudAI's ``UCCCmdArgs`` and the command line CloudAI renders::

    /opt/hpcx/ucc/bin/ucc_perftest -c alltoall -b 1 -e 8M [--gen GEN] -m cuda -F [extra_cmd_args]

``ucc_perftest_path`` is ours (CloudAI hard-codes the HPC-X path above, which stays the default):
set it where UCC lives elsewhere, e.g. outside a container. Metrics: see ``parse``; the per-size
table is kept as ``ucc.csv``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from cloudai.errors import WorkloadError
from cloudai.workloads.base import JobContext, SizeText, Workload, cloudai_extra_args, read_stdout, write_metrics
from cloudai.workloads.table import write_csv
from cloudai.workloads.ucc_test import parse

Collective = Literal[
    "allgather",
    "allgatherv",
    "allreduce",
    "alltoall",
    "alltoallv",
    "barrier",
    "bcast",
    "gather",
    "gatherv",
    "reduce",
    "reduce_scatter",
    "reduce_scatterv",
    "scatter",
    "scatterv",
    "memcpy",
    "reducedt",
    "reducedt_strided",
]
CSV_FILE = "ucc.csv"
DEEPEP_MATRIX = "/opt/hpcx/ucc/tools/perf/generator/input_matrices.txt"  # where CloudAI mounts DeepEP's matrix


class UCCTestArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    docker_image_url: str  # required, as in CloudAI
    collective: Collective = "alltoall"
    b: int = 1
    e: SizeText = "8M"
    gen: str | None = None
    ucc_perftest_path: str = "/opt/hpcx/ucc/bin/ucc_perftest"
    # CloudAI's: read a DeepEP traffic matrix (``--gen file:name=MATRIX``, unless ``gen`` is given). CloudAI mounts
    # the matrix a start_post_comp MoE benchmark wrote; cloudai does not look into other jobs' output: mount it
    # at MATRIX with ``extra_container_mounts``.
    use_deepep_matrix: bool = False


class UCCTest(Workload):
    name = "UCCTest"
    args_model = UCCTestArgs
    produces_metrics = True
    metrics = ("default", "time-avg", "time-min", "time-max", "bw-avg", "bw-max", "bw-min")
    noisy = True  # real hardware: confirm the best by default
    units = {
        "default": "us",
        **{f"time-{s}": "us" for s in ("avg", "min", "max")},
        **{f"bw-{s}": "GB/s" for s in ("avg", "min", "max")},
    }

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = UCCTestArgs.model_validate(args)
        argv = [model.ucc_perftest_path, "-c", model.collective, "-b", str(model.b), "-e", model.e]
        if model.gen is not None:
            argv += ["--gen", model.gen]
        elif model.use_deepep_matrix:
            argv += ["--gen", f"file:name={DEEPEP_MATRIX}"]
        return [*argv, "-m", "cuda", "-F", *cloudai_extra_args(job.extra_cmd_args)]

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return UCCTestArgs.model_validate(args).docker_image_url or None

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        result = parse.parse(read_stdout(job_dir, "ucc_perftest"))
        write_csv(job_dir / CSV_FILE, parse.COLUMNS, ([int(r[0]), int(r[1]), *r[2:]] for r in result.rows))
        problem = parse.verdict(result)
        if problem:
            raise WorkloadError(problem)
        return write_metrics(job_dir, parse.metrics(result))
