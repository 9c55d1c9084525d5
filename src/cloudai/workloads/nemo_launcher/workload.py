"""``NeMoLauncher``: the Hydra command CloudAI renders for NeMo-Framework-Launcher, run in the batch shell.

As CloudAI builds it (``NeMoLauncherSlurmCommandGenStrategy``)::

    <install>/NeMo-Framework-Launcher__<commit>-venv/bin/python <install>/NeMo-Framework-Launcher__<commit>/
        launcher_scripts/main.py <every cmd_args leaf, flattened, sorted by key> cluster.partition=...
        training.trainer.num_nodes=<nodes> container=<image> cluster.job_name_prefix=<prefix>:
        base_results_dir=<job dir> launcher_scripts_path=<repo>/launcher_scripts +env_vars.K=V ...

``training.values`` becomes ``training=<values>`` after the sorted leaves; double quotes are dropped
from values (``stages=[training]``), as CloudAI's unquoted script line delivers them to the launcher;
``cluster.gpus_per_node`` is the system's (``null`` where it does not say); ``launcher_script`` and
``docker_image_url`` are not overrides (the image is ``container=``). The test's variables follow as
``+env_vars.K=V`` (a value with a comma in single quotes, one string for Hydra); ``extra_cmd_args`` as
``key=value`` close the line; a ``training.model.tokenizer.model`` file is mounted into the training
container (``container_mounts=[...]``).

Where CloudAI reads its system, the command reads the allocation it runs in: ``cluster.partition`` is
``$SLURM_JOB_PARTITION`` and the job-name prefix ``cloudai.nemo_$SLURM_JOB_ID:`` (CloudAI: ``<account>-cloudai.nemo_
<timestamp>:``), unique per job as CloudAI's timestamp is.

Installing is CloudAI's (its ``cloudai install``): the launcher clone at
``<install>/NeMo-Framework-Launcher__<commit>`` and its environment ``<clone>-venv`` (the clone's
``requirements.txt``); cloudai's ``install`` builds neither.

The launcher returns once its job is submitted: its results land in ``<job dir>/run/log-*.out`` (NeMo 1.x
``train_step_timing in s: [...]``), read by ``read_metrics``; following the submitted job to its end is the
system's part (not built: a NeMoLauncher trial reads what its job wrote by the time the launcher returned).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cloudai.config.test import GitRepoSpec
from cloudai.errors import WorkloadError
from cloudai.installables import PythonEnv
from cloudai.readfile import read_ends
from cloudai.steps import Run, Step, Var
from cloudai.workloads import training_steps as training_log
from cloudai.workloads.base import JobContext, Workload, override_args, write_metrics
from cloudai.workloads.nemo_launcher.args import NeMoLauncherArgs
from cloudai.workloads.nemo_run.workload import flat_overrides

REPO = GitRepoSpec(url="https://github.com/NVIDIA/NeMo-Framework-Launcher.git",
               commit="599ecfcbbd64fd2de02f2cc093b1610d73854022")  # fmt: skip
VENV = PythonEnv(f"{REPO.dir_name}-venv", ())  # CloudAI's layout; cloudai builds neither the clone nor this env
_TOKENIZER = "training.model.tokenizer.model"


def overrides(model: NeMoLauncherArgs, job: JobContext) -> list[str]:
    """The Hydra overrides in CloudAI's order (module docstring)."""
    tree = model.model_dump()
    tree.pop("launcher_script")
    image = tree.pop("docker_image_url")
    leaves = dict(sorted(_leaves(tree).items()))
    leaves["cluster.gpus_per_node"] = job.gpus_per_node or "null"
    if "training.model.data.data_prefix" in leaves:
        leaves["training.model.data.data_prefix"] = str(leaves["training.model.data.data_prefix"]).replace("\\", "")
    values = leaves.pop("training.values", None)
    words = [f"{key}={_unquoted(value)}" for key, value in leaves.items()]
    words += [f"training={values}"] if values is not None else []
    repo = (job.install_path or Path("install")).absolute() / REPO.dir_name
    words += [
        Var("cluster.partition=${SLURM_JOB_PARTITION}"),
        f"training.trainer.num_nodes={job.num_nodes}",
        f"container={image}",
        Var("cluster.job_name_prefix=cloudai.nemo_${SLURM_JOB_ID}:"),
        f"base_results_dir={job.job_dir.absolute()}",
        f"launcher_scripts_path={(repo / model.launcher_script).parent}",
    ]
    words += [f"+env_vars.{k}='{v}'" if "," in v else f"+env_vars.{k}={v}" for k, v in job.env.items()]
    words += override_args(job.extra_cmd_args)
    if (tokenizer := leaves.get(_TOKENIZER)) is not None:
        words.append(f'container_mounts=["{tokenizer}:{tokenizer}"]')
    return words


def _unquoted(value: Any) -> str:
    """A value as CloudAI's unquoted script line delivers it: the shell drops its double quotes."""
    return str(value).replace('"', "")


def _leaves(tree: Mapping[str, Any]) -> dict[str, Any]:
    return dict(word.split("=", 1) for word in flat_overrides(tree))


class NeMoLauncher(Workload):
    name = "NeMoLauncher"
    args_model = NeMoLauncherArgs
    produces_metrics = True
    noisy = False  # a median over many steps is already the repetition; re-running a training job costs GPU hours
    metrics = ("default", "step_time_s")
    units = {"default": "s", "step_time_s": "s"}

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = NeMoLauncherArgs.model_validate(args)
        install = (job.install_path or Path("install")).absolute()
        launcher = install / REPO.dir_name / model.launcher_script
        return [str(VENV.python(install)), str(launcher), *overrides(model, job)]

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        return [Run(tuple(self.argv(args, job)), name="launcher", batch_shell=True)]

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        text = _training_log(job_dir)
        if (why := training_log.fatal(text)) is not None:
            raise WorkloadError(why)
        steps = training_log.nemo_steps(text)
        if not steps:
            raise WorkloadError("no 'train_step_timing in s' in run/log-*.out: the training job logged no step")
        cloudai = steps[-20:] if len(steps) > 100 else steps  # CloudAI's report: the last 20 of a long run
        default = statistics.fmean(s.time_s for s in cloudai)
        return write_metrics(job_dir, {"default": default, **training_log.summary(steps)})

    def failure_reason(self, job_dir: Path) -> str | None:
        try:
            return training_log.problem(_training_log(job_dir))
        except WorkloadError as exc:
            return str(exc)


def _training_log(job_dir: Path) -> str:
    """The training job's ``run/log-*.out`` (``training.run.name`` is ``run`` by default), as CloudAI reads it."""
    logs = sorted((job_dir / "run").glob("log-*.out")) if (job_dir / "run").is_dir() else []
    if not logs:
        raise WorkloadError("no run/log-*.out: the launcher's training job wrote no log (yet)")
    try:
        return read_ends(logs[0], 1 << 20, 64 << 20)[0].decode(errors="replace")
    except OSError as exc:  # not a regular file (a job may make it a FIFO or /dev/zero), or unreadable
        raise WorkloadError(f"{logs[0].name} refused: {exc}") from None
