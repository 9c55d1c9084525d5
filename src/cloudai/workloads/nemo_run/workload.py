"""``NeMoRun``: the command CloudAI renders, its environment, its validity rule and its metrics.

As CloudAI renders it (``NeMoRunSlurmCommandGenStrategy``), in the job's container::

    python /cloudai_install/cloudai_nemorun.py --factory <recipe_name> -y trainer.max_steps=100 ...
        trainer.num_nodes=<nodes> trainer.strategy.tensor_model_parallel_size=1 ... trainer.devices=<gpus/node>
        data.seq_length=8192 data.micro_batch_size=1 data.global_batch_size=1 data.num_train_samples=<gbs*steps>

every ``cmd_args`` field but ``docker_image_url``/``task``/``recipe_name``/``num_layers``, flattened in field
order, None left out; ``trainer.num_nodes`` is the job's node count, ``trainer.devices`` the system's
``gpus_per_node`` (when it says) and ``data.num_train_samples`` global batch x max steps: derived, never asked
for. ``extra_cmd_args`` follow as ``key=value``. With ``ENABLE_NUMA_CONTROL=1`` the command runs under
``numactl`` bound to the task's NUMA node (``SLURM_LOCALID / 4``; ``/ 2`` on ``CLOUDAI_GPU_TYPE=gb200``),
expanded per task by a ``bash -c`` (CloudAI's batch shell expands it once, for every task alike).

``cloudai_nemorun.py`` is CloudAI's recipe file; cloudai does not ship it: put it in the system's
``install_path`` (mounted at ``/cloudai_install``; also at ``/cloudai_workspace``, as CloudAI mounts it).

Validity (``cloudai.workloads.parallelism``): the GPUs are ``num_nodes x gpus_per_node`` of the system; a
system that does not say (standalone, a Slurm system without ``gpus_per_node``) counts 8 per node, CloudAI's
own constant for this rule.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cloudai.errors import WorkloadError
from cloudai.readfile import read_ends
from cloudai.workloads import parallelism
from cloudai.workloads import training_steps as training_log
from cloudai.workloads.base import (
    ONE_NODE,
    STDOUT_FILE,
    JobContext,
    ResourceColumns,
    Resources,
    Workload,
    override_args,
    read_stdout,
    write_metrics,
)
from cloudai.workloads.nemo_run.args import NeMoRunArgs

SCRIPT = "cloudai_nemorun.py"
WORKSPACE_MOUNT = "/cloudai_workspace"
GPUS_PER_NODE_FALLBACK = 8  # CloudAI's NeMoRun constraint_check: num_gpus = nnodes * 8
_NOT_OVERRIDES = ("docker_image_url", "num_layers", "task", "recipe_name")
_STRATEGY = "trainer.strategy."
KNOBS = {  # the rule's knobs: flat name -> (Parallelism field, CloudAI's default)
    f"{_STRATEGY}tensor_model_parallel_size": ("tp", 1),
    f"{_STRATEGY}pipeline_model_parallel_size": ("pp", 1),
    f"{_STRATEGY}context_parallel_size": ("cp", 2),
    f"{_STRATEGY}virtual_pipeline_model_parallel_size": ("vp", None),
    "data.micro_batch_size": ("mbs", 1),
    "data.global_batch_size": ("gbs", 1),
    "num_layers": ("num_layers", None),
}
_SEQ_LENGTH = re.compile(rb"\bdata\.seq_length=(\d+)")
_DONE = re.compile(r"max_steps=\s*(\d+)`? reached")


def flat_overrides(tree: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``a.b=value`` for every non-None leaf of ``tree``, in its order (CloudAI's ``append_flattened_dict``)."""
    words: list[str] = []
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            words += flat_overrides(value, f"{name}.")
        elif value is not None:
            words.append(f"{name}={value}")
    return words


def num_gpus(resources: Resources) -> int:
    return resources.num_gpus if resources.num_gpus is not None else resources.num_nodes * GPUS_PER_NODE_FALLBACK


class NeMoRun(Workload):
    name = "NeMoRun"
    args_model = NeMoRunArgs
    produces_metrics = True
    noisy = False  # a median over many steps is already the repetition; re-running a training job costs GPU hours
    metrics = ("default", "step-time", "step_time_s", "tflops_per_gpu", "tokens_per_s", "peak_memory_gb", "loss")
    units = {
        "default": "s",
        "step-time": "s",
        "step_time_s": "s",
        "tflops_per_gpu": "TFLOP/s",
        "tokens_per_s": "tokens/s",
        "peak_memory_gb": "GB",
    }

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = NeMoRunArgs.model_validate(args)
        tree = model.model_dump()
        for name in _NOT_OVERRIDES:
            tree.pop(name)
        tree["data"]["num_train_samples"] = model.data.global_batch_size * model.trainer.max_steps
        tree["trainer"]["num_nodes"] = job.num_nodes
        if job.gpus_per_node:
            tree["trainer"]["devices"] = job.gpus_per_node
        command = ["python", f"/cloudai_install/{SCRIPT}", "--factory", model.recipe_name, "-y"]
        command += flat_overrides(tree) + override_args(job.extra_cmd_args)
        if job.env.get("ENABLE_NUMA_CONTROL") == "1":
            divisor = 2 if job.env.get("CLOUDAI_GPU_TYPE") == "gb200" else 4
            node = f"$((SLURM_LOCALID/{divisor}))"
            numactl = f'exec numactl --cpunodebind={node} --membind={node} "$@"'
            command = ["bash", "-c", numactl, "numactl", *command]
        return command

    def job_env(self, args: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
        """CloudAI's additions, after the test's own variables: the task and recipe, memory logging (unless set),
        a larger NCCL P2P chunk under pipeline parallelism, no TP overlap under FSDP."""
        model = NeMoRunArgs.model_validate(args)
        out = {**env, "CLOUDAI_NEMO_TASK": model.task, "CLOUDAI_NEMO_RECIPE": model.recipe_name}
        out.setdefault("NEMO_LOG_MEMORY_USAGE", "1")
        if model.trainer.strategy.pipeline_model_parallel_size > 1:
            out["NCCL_P2P_NET_CHUNKSIZE"] = "2097152"
        if out.get("CLOUDAI_ENABLE_FSDP") == "1":
            out["CLOUDAI_DISABLE_TP_COMM_OVERLAP"] = "1"
        return out

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return NeMoRunArgs.model_validate(args).docker_image_url or None

    def container_mounts(self, args: Mapping[str, Any], job: JobContext) -> Sequence[str]:
        return [f"{job.install_path}:{WORKSPACE_MOUNT}"] if job.install_path else []

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        model = NeMoRunArgs.model_validate(args)
        strategy = model.trainer.strategy
        point = parallelism.Parallelism(
            num_gpus(resources),
            strategy.tensor_model_parallel_size,
            strategy.pipeline_model_parallel_size,
            strategy.context_parallel_size,
            strategy.virtual_pipeline_model_parallel_size,
            model.data.micro_batch_size,
            model.data.global_batch_size,
            model.num_layers,
        )
        return parallelism.violation(point)

    def constraint_mask(
        self, columns: Mapping[str, npt.ArrayLike], resources: ResourceColumns
    ) -> npt.NDArray[np.bool_]:
        """``constraint(...) is None`` over columns of points (flat knob names, ``num_nodes`` included; a knob
        without a column takes CloudAI's default), for counting a grid without building each point."""
        got = {field: parallelism.column(columns, name, default) for name, (field, default) in KNOBS.items()}
        nodes = columns.get("num_nodes", resources.num_nodes)
        per_node = resources.gpus_per_node or GPUS_PER_NODE_FALLBACK
        gpus = np.asarray(nodes, dtype=np.int64) * per_node
        return parallelism.valid_mask(gpus, got["tp"], got["pp"], got["cp"], **_optional(got))

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        text = read_stdout(job_dir, "NeMo")
        stderr = _tail(job_dir / "stderr.txt")
        steps = training_log.nemo_steps(text)
        if (why := training_log.fatal(stderr + text)) is not None:
            raise WorkloadError(why)
        if not steps:
            raise WorkloadError("no 'train_step_timing in s' line in stdout.txt: training never logged a step")
        if not _DONE.search(stderr + text[-4096:]):
            last = steps[-1].step
            raise WorkloadError(f"training log stops after {len(steps)} steps (last global_step {last}) without "
                                "'max_steps=N reached': the job was cut off")  # fmt: skip
        metrics = training_log.summary(steps, _seq_length(job_dir))
        default = cloudai_step_time(steps)
        return write_metrics(job_dir, {"default": default, "step-time": default, **metrics})

    def failure_reason(self, job_dir: Path) -> str | None:
        return training_log.problem(_tail(job_dir / "stderr.txt") + _tail(job_dir / "stdout.txt"))

    def progress(self, job_dir: Path) -> list[tuple[int, float]]:
        """The step times logged so far (``(global_step, seconds)``; the last, possibly torn, line left out), so a
        pruner can stop a configuration that is already slow; the first step (warm-up) is not one of them."""
        text = _tail(job_dir / STDOUT_FILE)
        complete = text[: text.rfind("\n") + 1]
        steps = training_log.nemo_steps(complete)[1:]
        return [(s.step, s.time_s) for s in steps if s.step is not None]


def cloudai_step_time(steps: list[training_log.Step]) -> float:
    """CloudAI's ``default``: the mean step time of global steps 80-100 when 20 or more were logged, else of every
    step but the first."""
    window = [s.time_s for s in steps if s.step is not None and 80 <= s.step <= 100]
    if len(window) < 20:
        window = [s.time_s for s in steps[1:]]
    return statistics.fmean(window) if window else float("nan")


def _optional(got: Mapping[str, Any]) -> dict[str, Any]:
    return {k: got[k] for k in ("vp", "mbs", "gbs", "num_layers")}


def _tail(path: Path) -> str:
    try:
        return read_ends(path, 0, 64 * 1024)[0].decode(errors="replace")
    except OSError:
        return ""


def _seq_length(job_dir: Path) -> int | None:
    """``data.seq_length`` of the command this job ran (its script in the job dir), for tokens per second."""
    for script in sorted(job_dir.glob("*.sh")):
        try:
            head = read_ends(script, 0, 1 << 16)[0]
        except OSError:  # a job may replace it with something that is not a regular file: no tokens per second
            continue
        if found := _SEQ_LENGTH.search(head):
            return int(found.group(1))
    return None
