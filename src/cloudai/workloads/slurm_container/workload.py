"""``SlurmContainer``: CloudAI's ``SlurmContainerCmdArgs`` (``docker_image_url``, ``cmd``) and the command it renders.

``cmd`` is the user's shell text, run by ``bash -c`` inside the container on every task of the job (as CloudAI's
``srun ... bash -c "CMD"``), with ``extra_cmd_args`` appended (a table as ``key value``, CloudAI's
``extra_args_str``). It measures nothing cloudai knows how to read: no metrics. As CloudAI renders
``conf/common/test_scenario/slurm_container.toml``::

    srun --export=ALL --mpi=pmix -N2 --container-image=nvcr.io#nvidia/pytorch:25.12-py3 ... \\
        bash -c "alltoall_perf_mpi --nthreads 1 --ngpus 1 ..."
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cloudai.config.fields import ShellCode
from cloudai.workloads.base import JobContext, Workload


class SlurmContainerArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    docker_image_url: str = Field(min_length=1)  # required, as in CloudAI
    cmd: ShellCode = Field(min_length=1)


class SlurmContainer(Workload):
    name = "SlurmContainer"
    args_model = SlurmContainerArgs
    shell_code = frozenset({"extra_cmd_args"})  # appended to cmd in its bash -c, as CloudAI does
    metrics = ()  # a free-form command: nothing to parse

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = SlurmContainerArgs.model_validate(args)
        return ["bash", "-c", " ".join([model.cmd, *_extra(job.extra_cmd_args)])]

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return SlurmContainerArgs.model_validate(args).docker_image_url


def _extra(extra: Mapping[str, Any] | str) -> list[str]:
    """CloudAI's ``extra_args_str``: ``key value`` (or ``key`` for an empty value); a string as written."""
    if isinstance(extra, str):
        return [extra] if extra else []
    return [f"{key} {value}" if value not in ("", None) else str(key) for key, value in extra.items()]
