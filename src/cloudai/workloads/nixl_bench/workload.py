"""``NIXLBench``: CloudAI's ``NIXLBenchCmdArgs`` and the job CloudAI renders (``tests/ref_data/nixl_bench.sbatch``).

Steps (``etcd``): etcd on the head node, its health wait, then ``path_to_benchmark --name=value ...`` (every
field that is not CloudAI's own, in order, then the keys CloudAI passes through, e.g. ``backend``;
``etcd_endpoints`` as ``--etcd-endpoints``) once per node, as CloudAI::

    ./nixlbench --etcd-endpoints=http://$NIXL_ETCD_ENDPOINTS --backend=UCX

Metrics (``parse``): CloudAI's ``default``/``latency`` (mean average latency, us) and the bandwidth; the table is
kept as ``nixlbench.csv``. CloudAI's ``filepath``/``device_list`` mounts (files it creates for storage backends) are
not made: mount your storage with ``extra_container_mounts``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cloudai.errors import WorkloadError
from cloudai.steps import Step
from cloudai.workloads.base import JobContext, Workload, read_stdout, write_metrics
from cloudai.workloads.nixl_bench import parse
from cloudai.workloads.nixl_bench.etcd import benchmark_steps, etcd_steps, shell_word
from cloudai.workloads.table import write_csv

CSV_FILE = "nixlbench.csv"
_SIZE = re.compile(r"(?P<num>\d+)(?P<unit>b|kb|mb|gb)?", re.IGNORECASE)
_NOT_FLAGS = ("docker_image_url", "path_to_benchmark", "etcd_path", "wait_etcd_for", "etcd_image_url")


class NIXLArgs(BaseModel):
    """CloudAI's ``NIXLBaseCmdArgs`` and ``NIXLExtendedCmdArgs`` (shared with ``NixlKVBench``)."""

    model_config = ConfigDict(extra="allow")  # CloudAI passes unknown keys (backend, ...) to the benchmark

    docker_image_url: str = Field(min_length=1)
    etcd_path: str = "etcd"
    wait_etcd_for: int = Field(default=60, ge=1)
    etcd_image_url: str | None = None  # CloudAI may run etcd from its own image; here etcd runs in the job's
    filepath: str | None = None
    total_buffer_size: str | None = None
    device_list: str | None = None

    @field_validator("filepath")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        return None if value is None else "/" + value.lstrip("/")

    @field_validator("total_buffer_size", mode="before")
    @classmethod
    def _bytes(cls, value: Any) -> Any:
        """``1kb``/``1mb``/``1gb`` as bytes, as CloudAI passes it to NIXL."""
        if value is None:
            return None
        match = _SIZE.fullmatch(str(value))
        if match is None:
            raise ValueError(f"total_buffer_size {value!r} is not a size such as 1024, 1kb, 1mb or 1gb")
        scale = {"": 1, "b": 1, "kb": 2**10, "mb": 2**20, "gb": 2**30}[(match["unit"] or "").lower()]
        return str(int(match["num"]) * scale)


class NIXLBenchArgs(NIXLArgs):
    path_to_benchmark: str = Field(min_length=1)
    etcd_endpoints: str = "http://$NIXL_ETCD_ENDPOINTS"


class NIXLBench(Workload):
    name = "NIXLBench"
    args_model = NIXLBenchArgs
    produces_metrics = True
    metrics = ("default", "latency", "bw_gb_sec", "bw_gb_sec_max")
    units = {"default": "us", "latency": "us", "bw_gb_sec": "GB/s", "bw_gb_sec_max": "GB/s"}
    noisy = True

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = NIXLBenchArgs.model_validate(args)
        argv = [model.path_to_benchmark]
        for name, value in model.model_dump(exclude=set(_NOT_FLAGS), exclude_none=True).items():
            flag = "etcd-endpoints" if name == "etcd_endpoints" else name
            argv.append(shell_word(f"--{flag}={value}"))
        return argv

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        model = NIXLBenchArgs.model_validate(args)
        backend = str(model.model_dump().get("backend", "unset"))
        steps = etcd_steps(model.etcd_path, model.wait_etcd_for)
        return steps + benchmark_steps(self.argv(args, job), backend, job.num_nodes)

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return NIXLArgs.model_validate(args).docker_image_url

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        return read_table(job_dir, "nixlbench")


def read_table(job_dir: Path, tool: str) -> dict[str, float]:
    """The results table of ``stdout.txt`` as metrics (and ``nixlbench.csv``); ``WorkloadError`` when none."""
    rows = parse.parse(read_stdout(job_dir, tool))
    write_csv(job_dir / CSV_FILE, parse.COLUMNS, rows)
    if not rows:
        raise WorkloadError(f"no {tool} results table (Block Size (B) ... Avg Lat. (us) ...) in stdout.txt")
    return write_metrics(job_dir, parse.metrics(rows))
