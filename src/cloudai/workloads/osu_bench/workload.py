"""``OSUBench``: CloudAI's ``OSUBenchCmdArgs`` and the command line CloudAI renders::

    <benchmarks_dir>/<benchmark> --message-size 1024 --iterations 10 --full [extra_cmd_args]

Each set option becomes ``--<name-with-dashes> <value>`` in field order; ``full`` (default true)
is the bare ``--full`` flag, left out for the benchmarks that do not take it (CloudAI's list) and
when false (CloudAI would render ``--full False``). Metrics: see ``parse``; the per-size table is
kept as ``osu_bench.csv`` (CloudAI's file name).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from cloudai.config.fields import AbsolutePath, RelativeName
from cloudai.errors import WorkloadError
from cloudai.workloads.base import JobContext, SizeText, Workload, cloudai_extra_args, read_stdout, write_metrics
from cloudai.workloads.osu_bench import parse
from cloudai.workloads.table import write_csv

CSV_FILE = "osu_bench.csv"
FULL_FLAG_UNSUPPORTED = frozenset(
    {
        "osu_latency",
        "osu_latency_mt",
        "osu_latency_mp",
        "osu_bw",
        "osu_bibw",
        "osu_latency_persistent",
        "osu_bw_persistent",
        "osu_bibw_persistent",
        "osu_multi_lat",
        "osu_mbw_mr",
        "osu_put_latency",
        "osu_get_latency",
        "osu_acc_latency",
        "osu_get_acc_latency",
        "osu_cas_latency",
        "osu_fop_latency",
        "osu_put_bw",
        "osu_get_bw",
        "osu_put_bibw",
        "osu_init",
        "osu_hello",
    }
)
_OPTIONS = ("message_size", "iterations", "warmup", "mem_limit", "full")


class OSUBenchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    docker_image_url: str
    benchmarks_dir: AbsolutePath
    benchmark: RelativeName  # run as <benchmarks_dir>/<benchmark>: '../../bin/x' would run another program
    message_size: SizeText | None = None  # "128" (max), "2:128" (min:max), "2:" (min)
    iterations: int | None = None
    warmup: int | None = None
    mem_limit: int | None = None
    full: bool = True


class OSUBench(Workload):
    name = "OSUBench"
    args_model = OSUBenchArgs
    produces_metrics = True
    metrics = ("default", "avg_lat", "min_lat", "max_lat", "mb_sec", "messages_sec")
    noisy = True  # real hardware: confirm the best by default
    units = {"avg_lat": "us", "min_lat": "us", "max_lat": "us", "mb_sec": "MB/s", "messages_sec": "messages/s"}

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = OSUBenchArgs.model_validate(args)
        argv = [f"{model.benchmarks_dir}/{model.benchmark}"]
        for name in _OPTIONS:
            value = getattr(model, name)
            flag = f"--{name.replace('_', '-')}"
            if isinstance(value, bool):
                if value and not (name == "full" and model.benchmark in FULL_FLAG_UNSUPPORTED):
                    argv.append(flag)
            elif value is not None:
                argv += [flag, str(value)]
        return argv + cloudai_extra_args(job.extra_cmd_args)

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return OSUBenchArgs.model_validate(args).docker_image_url or None

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        result = parse.parse(read_stdout(job_dir, "the OSU benchmark"))
        write_csv(job_dir / CSV_FILE, result.columns, ([int(r[0]), *r[1:]] for r in result.rows))
        problem = parse.verdict(result)
        if problem:
            raise WorkloadError(problem)
        return write_metrics(job_dir, parse.metrics(result))
