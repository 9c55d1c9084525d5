"""``BashCmd``: run ``cmd`` with bash; every other cmd_arg is appended as ``--name=value``.

``cmd`` is the user's own shell code and runs as written. The other arguments are data: each
is shell-quoted, so a value such as ``x; touch /tmp/pwned`` reaches the command literally.
``extra_cmd_args`` are appended the same way.

As CloudAI runs it, the command runs once, in the job's batch shell (a ``batch_shell`` step), not as one
``srun`` task per allocated task: a BashCmd that wants tasks on the nodes calls ``srun`` itself.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cloudai.config.fields import ShellCode
from cloudai.space import flatten
from cloudai.steps import Run, Step
from cloudai.workloads.base import JobContext, Workload


class BashCmdArgs(BaseModel):
    model_config = ConfigDict(extra="allow")

    cmd: ShellCode = Field(min_length=1)


class BashCmd(Workload):
    name = "BashCmd"
    hardware = "cpu"
    args_model = BashCmdArgs
    shell_code = frozenset({"extra_cmd_args"})  # a string of extra args is appended to cmd, as CloudAI does

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        flat = flatten(args)
        script = str(flat.pop("cmd"))
        extra = job.extra_cmd_args if isinstance(job.extra_cmd_args, Mapping) else {}
        quoted = [shlex.quote(f"--{key}={_text(value)}") for key, value in {**flat, **extra}.items()]
        if isinstance(job.extra_cmd_args, str) and job.extra_cmd_args:
            quoted.append(job.extra_cmd_args)  # a string of extra args is the user's own shell text
        return ["bash", "-c", " ".join([script, *quoted])]

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        return (Run(tuple(self.argv(args, job)), batch_shell=True),)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
