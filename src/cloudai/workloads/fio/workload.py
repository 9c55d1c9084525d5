"""``Fio``: CloudAI's fio test (``test_template_name = "Fio"``) as a system-agnostic workload.

``cmd_args`` are CloudAI's: ``fio_binary``, ``job_file``, ``args`` (fio options without the leading
``--``, passed verbatim in the order given), ``docker_image_url`` and ``num_tasks_per_node`` (for the
Slurm system's container and task layout; not part of the command), and the three ``metric_*`` fields
that decide the ``default`` metric (see ``cloudai.workloads.fio.results``).

The argv is CloudAI's, one option per entry: ``fio --name=value ... [job_file]``, where ``true`` is a bare
``--flag``, ``false``/unset options are left out, a list is comma-joined and a table repeats the flag for
each of its values. ``--output-format=json`` is added after the options unless the user chose an output
format (which must then include json: the metrics are read from fio's JSON).

Every ``args`` key can be swept (``args.bs = ["4k", "1m"]``, ``args.iodepth = {low = 1, high = 64, log =
true, dtype = "int"}``): the knob is the dotted name ``args.bs`` everywhere (trajectory.csv, reports,
best.toml's nested ``[cmd_args.args]``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cloudai.workloads.base import JobContext, Workload
from cloudai.workloads.fio import results

OUTPUT_FORMAT_KEYS = ("output-format", "output_format")


class FioArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    fio_binary: str = Field(default="fio", min_length=1, description="fio executable (or a custom build's path)")
    job_file: str | None = Field(default=None, description="fio job file, appended after the options")
    args: dict[str, Any] = Field(default_factory=dict, description="fio options without the leading --")
    docker_image_url: str | None = Field(default=None, description="container image for Slurm runs")
    num_tasks_per_node: int | None = Field(default=1, ge=1, description="Slurm tasks per node")
    metric_operation: Literal["read", "write", "trim", "all", "first"] = "all"
    metric_name: Literal["bw", "iops", "latency", "clat_mean", "clat_p99"] = "bw"
    metric_aggregate: Literal["sum", "mean", "min", "max", "first"] = "sum"

    @field_validator("args")
    @classmethod
    def _json_output(cls, args: dict[str, Any]) -> dict[str, Any]:
        for key in OUTPUT_FORMAT_KEYS:
            if key in args and "json" not in str(args[key]):
                raise ValueError(
                    f"{key} = {args[key]!r}: cloudai reads fio's JSON output; "
                    'use "json", "json+" or e.g. "normal,json", or leave it out (json is added)'
                )
        return args


class Fio(Workload):
    name = "Fio"
    hardware = "cpu"
    args_model = FioArgs
    produces_metrics = True
    metrics = results.METRIC_NAMES
    noisy = True  # the same job measured 2 543, 3 051 and 4 122 MiB/s in three runs here
    units = {f"{op}_{value}": unit for op in results.OPERATIONS for value, unit in results.UNITS.items()}
    mpi = False  # CloudAI's fio srun has no --mpi: fio processes are independent, not MPI ranks

    def default_means(self, cmd_args: Mapping[str, Any]) -> str | None:
        """``read_bw`` for ``metric_operation = "read"`` (CloudAI's default name: ``bw``); None for ``all``/``first``
        or a swept field (no one metric)."""
        operation, name = cmd_args.get("metric_operation", "all"), cmd_args.get("metric_name", "bw")
        return f"{operation}_{name}" if operation in results.OPERATIONS and name in results.UNITS else None

    def __init__(self) -> None:
        # The metric_* fields of each job this instance built, by job dir: read_metrics gets only the dir.
        self._choices: dict[Path, results.MetricChoice] = {}

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        values = FioArgs.model_validate(args)
        self._choices[job.job_dir] = results.MetricChoice(
            values.metric_operation, values.metric_name, values.metric_aggregate
        )
        argv = [values.fio_binary]
        for name, value in values.args.items():
            argv += option(name, value)
        if not any(key in values.args for key in OUTPUT_FORMAT_KEYS):
            argv.append("--output-format=json")
        argv += _extra(job.extra_cmd_args)
        if values.job_file:
            argv.append(values.job_file)
        return argv

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        """CloudAI's ``docker_image_url``: the Slurm system runs fio in it; the standalone system ignores it."""
        return FioArgs.model_validate(args).docker_image_url

    def ntasks_per_node(self, args: Mapping[str, Any]) -> int | None:
        """CloudAI's ``num_tasks_per_node`` (default 1): Slurm runs ``--ntasks-per-node=N --ntasks=nodes*N`` fio
        processes, not one per task of the allocation (8 per node on a GPU system's header)."""
        return FioArgs.model_validate(args).num_tasks_per_node

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        choice = self._choices.get(job_dir) or results.MetricChoice()  # unseen dir: CloudAI's defaults
        return results.read_metrics(job_dir, choice)

    def failure_reason(self, job_dir: Path) -> str | None:
        return results.error_line(job_dir)


def option(name: str, value: Any) -> list[str]:
    """One fio option as argv entries, as CloudAI renders it (without its shell quoting)."""
    if value is None or value is False:
        return []
    if isinstance(value, Mapping):
        return [part for nested in value.values() for part in option(name, nested)]
    flag = name.strip() if name.strip().startswith("-") else f"--{name.strip()}"
    if value is True:
        return [flag]
    if isinstance(value, list | tuple):
        return [f"{flag}={','.join(_text(v) for v in value)}"]
    return [f"{flag}={_text(value)}"]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # a float range's 16.0 is fio's 16
    return str(value)


def _extra(extra: Mapping[str, Any] | str) -> list[str]:
    """``extra_cmd_args``: a string is split like a shell would (never run by one); a table gives more options."""
    if isinstance(extra, str):
        return shlex.split(extra)
    return [part for name, value in extra.items() for part in option(name, value)]
