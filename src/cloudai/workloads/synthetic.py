"""``Synthetic``: an all-reduce benchmark's analytic model as a real subprocess, for DSE without a GPU.

The model, its knobs and its optimum are documented in ``cloudai.workloads.synthetic_model``; this
module only validates ``cmd_args``, builds the argv (one entry per value, no shell) and reports the
model's infeasible region as a constraint, so the DSE env skips such points without running them.
A trial runs the model's file (``python .../synthetic_model.py``), which imports the standard
library only: about half the start-up of ``python -m cloudai.workloads.synthetic_model``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cloudai.workloads import synthetic_model
from cloudai.workloads.base import ONE_NODE, JobContext, Resources, Workload
from cloudai.workloads.synthetic_model import PROGRESS_FILE, infeasible, read_progress_lines

MODEL_SCRIPT = synthetic_model.__file__


class SyntheticArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    algo: Literal["ring", "tree", "nvls", "collnet"] = "ring"
    message_size: int = Field(default=1 << 26, ge=1, le=1 << 36, description="bytes")
    chunk_kb: int = Field(default=512, ge=64, le=8192, description="KiB; meaningful on a log scale")
    num_channels: int = Field(default=8, ge=1, le=32)
    background_load: float = Field(default=0.0, ge=0, le=1, description="network load from other jobs")
    jitter: float = Field(default=0.0, ge=0, le=1, description="noise amplitude; 0 = deterministic")
    seed: int = 0
    duration_s: float = Field(default=0, ge=0, description="how long the trial sleeps")
    progress_chunks: int = Field(default=0, ge=0, le=1000, description="progress lines over duration_s (pruning)")
    fail_rate: float = Field(default=0.0, ge=0, le=1, description="chance the trial fails (exit 1)")


class Synthetic(Workload):
    name = "Synthetic"
    hardware = "cpu"
    args_model = SyntheticArgs
    produces_metrics = True
    metrics = ("bus_bw", "alg_bw", "latency_us", "default")  # what the model writes: agent_metrics are checked
    units = {"bus_bw": "GB/s", "alg_bw": "GB/s", "latency_us": "us", "default": "GB/s"}  # for reports

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        values = SyntheticArgs.model_validate(args).model_dump()
        argv = [sys.executable, MODEL_SCRIPT]  # the file, not -m: a stdlib-only start, no cloudai imports
        for name, value in {**values, "num_nodes": job.num_nodes}.items():
            argv += [f"--{name.replace('_', '-')}", str(value)]
        return argv + _extra(job.extra_cmd_args)

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        """The model's infeasible region; without ``args["num_nodes"]`` only the node-independent part.

        (A node-dependent violation then still fails the trial: the model exits 3.)
        """
        rest = {k: v for k, v in args.items() if k != "num_nodes"}
        values = SyntheticArgs.model_validate(rest).model_dump(exclude={"duration_s", "fail_rate", "progress_chunks"})
        nodes = args.get("num_nodes")
        return infeasible(values, None if nodes is None else int(nodes))

    def progress(self, job_dir: Path) -> list[tuple[int, float]]:
        """``progress.txt``: one ``<chunk> <bus_bw so far>`` line per finished chunk (``progress_chunks``)."""
        return read_progress_lines(job_dir / PROGRESS_FILE)


def _extra(extra: Mapping[str, Any] | str) -> list[str]:
    """``extra_cmd_args`` as more ``--name value`` pairs (a string is split like a shell would, not run by one)."""
    if isinstance(extra, str):
        return shlex.split(extra)
    return [item for name, value in extra.items() for item in (f"--{name}", str(value))]
