"""``NixlEP``: CloudAI's ``NixlEPCmdArgs`` and the launch CloudAI renders (``tests/ref_data/nixl-ep-launch.sh``).

Steps: the plan is written to ``nixl-ep-plan.json`` in the job dir; the primary launch (phase 0, node 0) starts in
the background; the batch shell waits until its TCP store (``store_port``) accepts connections; before each later
phase that adds ranks it waits for ``-> end phase N-1`` in the primary's log, then starts that phase's launches
(``plan``); at the end it waits for every launch, an exit 143 being the planned removal of a rank when the plan
has one. Each launch is one task on its node::

    python3 elastic.py --plan <job>/nixl-ep-plan.json --num-processes N [--tcp-server HEAD] [--other-key v ...]

(unknown ``cmd_args`` keys sorted, as CloudAI: ``True`` a bare flag). Differences from CloudAI: the TCP server is
the head node's host name (CloudAI asks ``srun hostname --ip-address``), a later launch logs to
``nixl-ep-node-<n>-phase-<p>.log`` (CloudAI appends to ``nixl-ep-node-<n>.log``), and a phase waits at most
``phase_timeout_s`` (CloudAI: the time limit over the phases). Metrics: CloudAI's ``default``, the mean
dispatch+combine bandwidth (GB/s) of every log's ``Dispatch + combine bandwidth`` lines.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cloudai.steps import Run, Shell, Step, Var
from cloudai.workloads.base import ONE_NODE, JobContext, Resources, Workload
from cloudai.workloads.heredoc import write_lines
from cloudai.workloads.nixl_ep import parse
from cloudai.workloads.nixl_ep.plan import Launch, has_removal, launches, parse_plan

PLAN_FILE = "nixl-ep-plan.json"
PRIMARY_LOG = "nixl-ep-node-0.log"


class NixlEPArgs(BaseModel):
    model_config = ConfigDict(extra="allow")  # CloudAI passes unknown keys to elastic.py

    docker_image_url: str = Field(min_length=1)
    elastic_script: str = "/workspace/nixl/examples/device/ep/tests/elastic/elastic.py"
    python_executable: str = "python3"
    plan: str
    num_processes_per_node: int = Field(ge=1)
    service_startup_timeout_seconds: int = Field(default=60, ge=1)
    store_port: int = Field(default=9999, ge=1, le=65535)
    phase_timeout_s: int = Field(default=600, ge=1)  # ours: how long one phase may take

    @field_validator("plan")
    @classmethod
    def _plan(cls, value: str) -> str:
        parse_plan(value.strip())
        return value.strip()


def _log(launch: Launch) -> str:
    return PRIMARY_LOG if launch.primary else f"nixl-ep-node-{launch.node}-phase-{launch.phase}.log"


def _wait_store(port: int, timeout_s: int) -> Shell:
    return Shell(
        f"end=$(( $(date +%s) + {timeout_s} ))\n"
        f'until timeout 1 bash -c ": > /dev/tcp/$CLOUDAI_HEAD_NODE/{port}" >/dev/null 2>&1; do\n'
        f'    [ "$(date +%s)" -lt "$end" ] || {{ echo "NIXL EP store on $CLOUDAI_HEAD_NODE:{port} did not open" >&2; '
        "exit 1; }\n    sleep 1\ndone"
    )


def _wait_phase(phase: int, log: str, timeout_s: int) -> Shell:
    return Shell(
        f"end=$(( $(date +%s) + {timeout_s} ))\n"
        f"until grep -Fq -- '-> end phase {phase}' {shlex.quote(log)} 2>/dev/null; do\n"
        f'    kill -0 "$EP0_PID" 2>/dev/null || {{ echo "the primary NIXL EP launch ended before phase {phase}" >&2; '
        "exit 1; }\n"
        f'    [ "$(date +%s)" -lt "$end" ] || {{ echo "phase {phase} did not end in {timeout_s} s" >&2; exit 1; }}\n'
        "    sleep 1\ndone"
    )


def _wait_all(names: list[str], removal: bool) -> Shell:
    pids = " ".join(f'"${name.upper()}_PID"' for name in names)
    tolerated = '[ "$code" -eq 143 ] && continue  # a planned rank removal\n    ' if removal else ""
    return Shell(
        f'rc=0\nfor pid in {pids}; do\n    wait "$pid"; code=$?\n    {tolerated}'
        '[ "$code" -ne 0 ] && [ "$rc" -eq 0 ] && rc=$code\ndone\nexit "$rc"'
    )


class NixlEP(Workload):
    name = "NixlEP"
    args_model = NixlEPArgs
    hard_rule = True  # steps() cannot place a plan the nodes cannot hold
    produces_metrics = True
    metrics = parse.METRICS
    units = parse.UNITS
    noisy = True

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        return self.launch_argv(NixlEPArgs.model_validate(args), job, None)

    def launch_argv(self, model: NixlEPArgs, job: JobContext, launch: Launch | None) -> list[str]:
        processes = launch.num_processes if launch else model.num_processes_per_node
        argv = [model.python_executable, model.elastic_script, "--plan", str(job.job_dir.absolute() / PLAN_FILE),
                "--num-processes", str(processes)]  # fmt: skip
        if launch is not None and not launch.primary:
            argv += ["--tcp-server", Var("$CLOUDAI_HEAD_NODE")]
        for key, value in sorted((model.model_extra or {}).items()):
            flag = f"--{key.replace('_', '-')}"
            if isinstance(value, bool):
                argv += [flag] if value else []
            elif value is not None:
                argv += [flag, str(value)]
        return argv

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        model = NixlEPArgs.model_validate(args)
        phases = parse_plan(model.plan)
        plan_file = job.job_dir.absolute() / PLAN_FILE
        steps: list[Step] = [Shell("\n".join(write_lines(plan_file, json.dumps(phases), "CLOUDAI_EOF")))]
        names: list[str] = []
        phases_started = {0}
        for launch in launches(phases, job.num_nodes, model.num_processes_per_node):
            if launch.phase not in phases_started:
                phases_started.add(launch.phase)
                steps.append(_wait_phase(launch.phase - 1, str(job.job_dir.absolute() / PRIMARY_LOG),
                                         model.phase_timeout_s))  # fmt: skip
            name = "ep0" if launch.primary else f"ep{launch.phase}_{launch.node}"
            names.append(name)
            argv = tuple(self.launch_argv(model, job, launch))
            steps.append(Run(argv, name=name, background=True, output=_log(launch), node=launch.node, ntasks=1,
                             ntasks_per_node=1))  # fmt: skip
            if launch.primary:
                steps.append(_wait_store(model.store_port, model.service_startup_timeout_seconds))
        return [*steps, _wait_all(names, has_removal(phases))]

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        model = NixlEPArgs.model_validate(args)
        try:
            launches(parse_plan(model.plan), resources.num_nodes, model.num_processes_per_node)
        except ValueError as exc:
            return str(exc)
        return None

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return NixlEPArgs.model_validate(args).docker_image_url

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        return parse.read_metrics(job_dir)
