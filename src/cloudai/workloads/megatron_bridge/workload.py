"""``MegatronBridge``: Megatron-Bridge's ``setup_experiment.py`` run in the batch shell, as CloudAI renders it.

The job is one batch-shell step (``Run(batch_shell=True)``: the launcher submits its own Slurm job and, with
``--detach false``, waits for it), its output in ``cloudai_megatron_bridge_launcher.log`` where CloudAI reads it::

    NEMORUN_HOME=<job dir> <install>/Run__main-venv/bin/python
        <install>/Megatron-Bridge__<commit>/scripts/performance/setup_experiment.py -p "$SLURM_JOB_PARTITION"
        -t <time_limit> -i <image> -hf <token> -ng <num_gpus> -gn <gpus_per_node> -cm <mounts>
        -cb 'export K=V' ... -m <family> -mr <recipe> ... --detach false ... logger.tensorboard_dir=... ...

(flag rules in ``flags``). The Megatron-Bridge clone is the test's ``[[git_repos]]`` entry (CloudAI requires it),
expected at ``install_path / <name>__<commit>`` and passed in ``-cm`` at its ``mount_as``; the launcher's Python
is NeMo-Run's environment ``Run__main-venv``, which ``cloudai install`` builds (CloudAI's wrapper also pip-installs
wandb and numpy 1.26.4 into it before each run; here they are part of that environment). Metrics: the launcher
log's ``Step Time : 11.59s GPU utilization: 640.3MODEL_TFLOP/s/GPU`` lines; CloudAI's ``default`` is the mean
step time of the last 10 of them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cloudai.config.test import GitRepoSpec
from cloudai.errors import WorkloadError
from cloudai.installables import Installable, PythonEnv
from cloudai.readfile import read_ends
from cloudai.steps import Run, Step
from cloudai.workloads import training_steps as training_log
from cloudai.workloads.base import ONE_NODE, JobContext, ResourceColumns, Resources, Workload, write_metrics
from cloudai.workloads.megatron_bridge import rules
from cloudai.workloads.megatron_bridge.args import MegatronBridgeArgs
from cloudai.workloads.megatron_bridge.flags import launcher_args

LOG = "cloudai_megatron_bridge_launcher.log"
LAUNCHER = Path("scripts") / "performance" / "setup_experiment.py"
NEMO_RUN_ENV = PythonEnv("Run__main-venv", ("nemo_run @ git+https://github.com/NVIDIA-NeMo/Run.git@main", "wandb",
                                            "numpy==1.26.4"))  # fmt: skip
_MAX_LOG = 64 << 20
# CloudAI refuses a test without the Megatron-Bridge [[git_repos]] entry; cloudai expects its main branch then
DEFAULT_REPO = GitRepoSpec(url="https://github.com/NVIDIA-NeMo/Megatron-Bridge.git", commit="main")


def bridge_repo(repos: Sequence[GitRepoSpec]) -> GitRepoSpec | None:
    """The Megatron-Bridge clone among ``[[git_repos]]`` (CloudAI's choice: by URL or by ``mount_as``)."""
    for repo in repos:
        if "Megatron-Bridge" in repo.url or (repo.mount_as or "").rstrip("/") == "/opt/Megatron-Bridge":
            return repo
    return None


class MegatronBridge(Workload):
    name = "MegatronBridge"
    args_model = MegatronBridgeArgs
    produces_metrics = True
    noisy = False  # a median over many steps is already the repetition; re-running a training job costs GPU hours
    metrics = ("default", "step-time", "tflops-per-gpu", "step_time_s", "tflops_per_gpu", "peak_memory_gb", "loss")
    units = {"default": "s", "step-time": "s", "step_time_s": "s", "tflops-per-gpu": "TFLOP/s",
             "tflops_per_gpu": "TFLOP/s", "peak_memory_gb": "GB"}  # fmt: skip

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = MegatronBridgeArgs.model_validate(args)
        install = (job.install_path or Path("install")).absolute()
        repo = bridge_repo(job.git_repos) or DEFAULT_REPO
        mounts = list(job.extra_container_mounts)
        if repo.mount_as:
            mounts.append(f"{install / repo.dir_name}:{repo.mount_as}")
        python = NEMO_RUN_ENV.python(install)
        return [str(python), str(install / repo.dir_name / LAUNCHER), *launcher_args(model, job, mounts)]

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        env = {"NEMORUN_HOME": str(job.job_dir.absolute())}
        return [Run(tuple(self.argv(args, job)), name="launcher", output=LOG, batch_shell=True, env=env)]

    def installables(self, args: Mapping[str, Any]) -> Sequence[Installable]:
        return [NEMO_RUN_ENV]

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return None  # the launcher's own job runs in ``container_image`` (its -i); the launcher runs on the host

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        return rules.violation(MegatronBridgeArgs.model_validate(args))

    def constraint_mask(
        self, columns: Mapping[str, npt.ArrayLike], resources: ResourceColumns
    ) -> npt.NDArray[np.bool_]:
        """``constraint(...) is None`` over points: ``columns`` holds every cmd_args knob under its flat name, a
        1-d array when swept, a scalar when fixed."""
        arrays = {k: np.asarray(v) for k, v in columns.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))  # a count's columns are axes, not rows
        swept = {k: np.broadcast_to(a, shape).reshape(-1) for k, a in arrays.items() if a.ndim > 0}
        fixed = {k: v for k, v in columns.items() if np.ndim(v) == 0}
        return rules.mask(swept, fixed).reshape(shape) if swept else rules.mask(swept, fixed)

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        text = _log(job_dir)
        if (why := training_log.fatal(text)) is not None:
            raise WorkloadError(why)
        steps = training_log.megatron_steps(text)
        cloudai = training_log.bridge_steps(text)[-10:]  # CloudAI's: the last 10 'Step Time' lines
        if not steps or not cloudai:
            raise WorkloadError(f"no 'Step Time' lines in {LOG}: the training job logged no step")
        default = statistics.fmean(s.time_s for s in cloudai)
        tflops = statistics.fmean(s.tflops_per_gpu or 0.0 for s in cloudai)
        metrics = {"default": default, "step-time": default, "tflops-per-gpu": tflops}
        return write_metrics(job_dir, {**metrics, **training_log.summary(steps)})

    def failure_reason(self, job_dir: Path) -> str | None:
        try:
            return training_log.problem(_log(job_dir))
        except WorkloadError as exc:
            return str(exc)


def _log(job_dir: Path) -> str:
    try:
        return read_ends(job_dir / LOG, 1 << 20, _MAX_LOG)[0].decode(errors="replace")
    except OSError:
        raise WorkloadError(f"no {LOG} was written: the Megatron-Bridge launcher did not run") from None
