"""``JaxToolboxGPT`` and ``JaxToolboxGrok``: Paxml training in JAX-Toolbox's container, as CloudAI runs it.

The job is two steps: write CloudAI's ``run.sh`` into the job dir (``script.render``; its reference
``tests/ref_data/{gpt,grok}.run``), then run ``/opt/paxml/workspace/run.sh`` in the image, with the job dir
mounted at ``setup_flags.docker_workspace_dir`` (after the system's mounts and ``extra_container_mounts``,
CloudAI's order). ``extra_env_vars.COMBINE_THRESHOLD`` (bytes) is required, as in CloudAI.

Where we differ from CloudAI's sbatch, on purpose: no pyxis named-container pre-load step (``load_container``
is accepted; the Slurm system pulls the image on the step itself), and the step runs with the system's ``--mpi``
and the job's own output files rather than ``--mpi=none`` and ``output-%j-%n-%t.txt`` per task.

Validity: Paxml's device mesh (``ici_mesh_shape`` times ``dcn_mesh_shape``) must hold exactly the job's GPUs.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from cloudai.errors import Problem, WorkloadError
from cloudai.space import Space
from cloudai.steps import Run, Shell, Step
from cloudai.workloads.base import ONE_NODE, STDOUT_FILE, JobContext, Resources, Workload, write_metrics
from cloudai.workloads.heredoc import write_lines
from cloudai.workloads.jax_toolbox import parse, script
from cloudai.workloads.jax_toolbox.args import GPTArgs, GrokArgs, fdl_words
from cloudai.workloads.training_log import read_logs

RUN_SCRIPT = "run.sh"
THRESHOLD_VAR = "COMBINE_THRESHOLD"
_HEREDOC = "CLOUDAI_RUN_SH"
_DERIVED = frozenset({"PER_GPU_COMBINE_THRESHOLD", "XLA_FLAGS"})  # run.sh computes them, as CloudAI does


class JaxToolbox(Workload):
    """What GPT and Grok share; a subclass says how its args give the stages' XLA flags."""

    model_type: ClassVar[type[GPTArgs] | type[GrokArgs]]
    produces_metrics = True
    metrics = ("default", "step_time_s", "loss")
    noisy = False  # a median over many steps is already the repetition; re-running a training job costs GPU hours
    units = {"default": "s", "step_time_s": "s"}

    def model(self, args: Mapping[str, Any]) -> GPTArgs | GrokArgs:
        return self.model_type.model_validate(args)

    def stages(self, model: Any) -> list[script.Stage]:
        raise NotImplementedError

    def run_script(self, args: Mapping[str, Any], job: JobContext) -> str:
        """CloudAI's ``run.sh`` for these args on ``job`` (its nodes, its ``extra_env_vars``)."""
        model = self.model(args)
        threshold = _combine_threshold(job.env)
        per_gpu = script.per_gpu_threshold(threshold, model.setup_flags.gpus_per_node, job.num_nodes)
        env = [(name, shlex.quote(value)) for name, value in job.env.items() if name not in _DERIVED]
        env.append(("PER_GPU_COMBINE_THRESHOLD", str(per_gpu)))
        paxml = script.Paxml(
            model.fdl_config, fdl_words(model.fdl), model.setup_flags, script.extra_words(job.extra_cmd_args), env
        )
        return script.render(paxml, self.stages(model))

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = self.model(args)
        return [f"{model.setup_flags.docker_workspace_dir.rstrip('/')}/{RUN_SCRIPT}"]

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        write = write_lines(job.job_dir.absolute() / RUN_SCRIPT, self.run_script(args, job), _HEREDOC, executable=True)
        return (Shell("\n".join(write)), Run(tuple(self.argv(args, job)), name="paxml"))

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return self.model(args).docker_image_url or None

    def container_mounts(self, args: Mapping[str, Any], job: JobContext) -> Sequence[str]:
        workspace = self.model(args).setup_flags.docker_workspace_dir
        return (f"{job.job_dir.absolute()}:{workspace}",)

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        gpus = resources.num_gpus
        fdl = self.model(args).fdl
        ici, dcn = _mesh(fdl.ici_mesh_shape), _mesh(fdl.dcn_mesh_shape)
        if gpus is None or ici is None or dcn is None:
            return None
        devices = math.prod(ici) * math.prod(dcn)
        if devices != gpus:
            return f"the device mesh ici {list(ici)} x dcn {list(dcn)} holds {devices} devices, the job has {gpus} GPUs"
        return None

    def validate(self, space: Space, *, file: Path | None, prefix: str) -> list[Problem]:
        """The args, and ``extra_env_vars.COMBINE_THRESHOLD`` (CloudAI's KeyError, here a load-time problem)."""
        problems = super().validate(space, file=file, prefix=prefix)
        name = f"extra_env_vars.{THRESHOLD_VAR}"
        dim = space.dim(name) if name in space.names else None
        values = [space.fixed.get(name)] if dim is None else list(getattr(dim, "choices", ()))
        if not all(isinstance(v, int | str) and str(v).strip().isdigit() for v in values):
            field = f"{prefix.removesuffix('.cmd_args')}.{name}".lstrip(".")
            what = "is missing" if values == [None] else f"must be a whole number of bytes, not {values}"
            hint = f'add {THRESHOLD_VAR} = "1073741824" (bytes) under [extra_env_vars], as CloudAI requires'
            problems.append(Problem(str(file) if file else None, field, what, hint))
        return problems

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        log = parse.parse([read_logs([path]) for path in _perf_logs(job_dir)])
        problem = parse.verdict(log)
        if problem:
            raise WorkloadError(problem)
        return write_metrics(job_dir, parse.metrics(log))

    def failure_reason(self, job_dir: Path) -> str | None:
        """The fatal error any stage's log shows (out of memory, an NCCL failure, ...), or None."""
        profiles = sorted(job_dir.glob("profile_stderr_*.txt"))
        return parse.parse([read_logs([*profiles, *_perf_logs(job_dir)])]).fatal


class JaxToolboxGPT(JaxToolbox):
    name = "JaxToolboxGPT"
    args_model = model_type = GPTArgs

    def stages(self, model: Any) -> list[script.Stage]:
        flags = script.xla_flags(None)  # CloudAI's lookup never finds GPT's own XLA flags (see script)
        return [script.Stage("profile", flags), script.Stage("perf", flags)]


class JaxToolboxGrok(JaxToolbox):
    name = "JaxToolboxGrok"
    args_model = model_type = GrokArgs

    def stages(self, model: Any) -> list[script.Stage]:
        assert isinstance(model, GrokArgs)
        if not model.enable_pgle:
            no_profile = {"xla_gpu_pgle_profile_file_or_directory_path": '""'}
            return [script.Stage("perf", script.xla_flags(model.perf, no_profile))]
        return [
            script.Stage("profile", script.xla_flags(model.profile)),
            script.Stage("perf", script.xla_flags(model.perf)),
        ]


def _combine_threshold(env: Mapping[str, str]) -> int:
    value = env.get(THRESHOLD_VAR)
    try:
        return int(str(value))
    except ValueError:
        raise WorkloadError(
            f"JaxToolbox needs extra_env_vars.COMBINE_THRESHOLD, an integer number of bytes (got {value!r}), "
            'as CloudAI does: add COMBINE_THRESHOLD = "1073741824" under [extra_env_vars]'
        ) from None


def _mesh(text: str) -> tuple[int, ...] | None:
    """``'[1, 8, 1]'`` as (1, 8, 1); None when it is not a list of integers."""
    inner = re.fullmatch(r"""['"\\]*\[([\d,\s]*)\]['"\\]*""", text.strip())
    if not inner:
        return None
    parts = [p.strip() for p in inner.group(1).split(",") if p.strip()]
    return tuple(int(p) for p in parts) or None


def _perf_logs(job_dir: Path) -> list[Path]:
    """The perf stage's streams: CloudAI's per-task ``error-*.txt`` when there are any, else the job's own."""
    return sorted(job_dir.glob("error-*.txt")) or [job_dir / "stderr.txt", job_dir / STDOUT_FILE]
