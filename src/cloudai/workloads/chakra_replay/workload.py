"""``ChakraReplay``: CloudAI's ``ChakraReplayCmdArgs`` and the command CloudAI renders::

    comm_replay --trace-type et --trace-path PATH --num-replays 1 [--extra-key value ...] [extra_cmd_args]

Unknown ``cmd_args`` keys are passed as ``--key-with-dashes value``, as CloudAI does; ``trace_path`` is mounted
at the same path in the container (CloudAI's mount) and left out of the command when not given (CloudAI would
pass ``None``). ``mpi`` is CloudAI's field, kept for its files (the system's ``mpi`` decides the launch). Metrics
(``parse``): the per-collective latency summary; the table is kept as ``chakra_replay.csv``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cloudai.config.fields import AbsolutePath
from cloudai.errors import WorkloadError
from cloudai.workloads.base import JobContext, Workload, cloudai_extra_args, read_stdout, write_metrics
from cloudai.workloads.chakra_replay import parse
from cloudai.workloads.table import write_csv

CSV_FILE = "chakra_replay.csv"


class ChakraReplayArgs(BaseModel):
    model_config = ConfigDict(extra="allow")  # CloudAI passes unknown keys to comm_replay

    docker_image_url: str = Field(min_length=1)
    mpi: str = "pmix"
    trace_type: str = "et"
    trace_path: AbsolutePath | None = None  # mounted at itself
    num_replays: int = Field(default=1, ge=1)


class ChakraReplay(Workload):
    name = "ChakraReplay"
    args_model = ChakraReplayArgs
    produces_metrics = True
    metrics = ("default", "latency_avg_us", "latency_p95_us", "latency_max_us")
    units = dict.fromkeys(metrics, "us")
    noisy = True

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = ChakraReplayArgs.model_validate(args)
        argv = ["comm_replay", "--trace-type", model.trace_type]
        if model.trace_path is not None:
            argv += ["--trace-path", model.trace_path]
        argv += ["--num-replays", str(model.num_replays)]
        for key, value in (model.model_extra or {}).items():
            argv += [f"--{key.replace('_', '-')}", str(value)]
        return argv + cloudai_extra_args(job.extra_cmd_args)

    def container_mounts(self, args: Mapping[str, Any], job: JobContext) -> Sequence[str]:
        path = ChakraReplayArgs.model_validate(args).trace_path
        return (f"{path}:{path}",) if path else ()

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return ChakraReplayArgs.model_validate(args).docker_image_url

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        rows = parse.parse(read_stdout(job_dir, "comm_replay"))
        write_csv(job_dir / CSV_FILE, parse.COLUMNS, rows)
        if not rows:
            raise WorkloadError("no 'Replayed N op' latency summary from comm_replay in stdout.txt (cut short?)")
        return write_metrics(job_dir, parse.metrics(rows))
