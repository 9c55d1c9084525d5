"""``MegatronRun``: a Megatron-LM training script run with CloudAI's ``MegatronRunCmdArgs`` as its flags.

The command is ``python <run_script, absolute>`` then ``--<field-with-dashes> <value>`` for every field that is
set, in declaration order, then any extra ``[cmd_args]`` key, then ``extra_cmd_args``. As CloudAI renders
its reference (``tests/ref_data/megatron-run.sbatch``)::

    python /abs/run.py --global-batch-size 16 --hidden-size 4096 --max-position-embeddings 4096
        --num-attention-heads 32 --num-layers 32 --pipeline-model-parallel-size 1 --seq-length 4096
        --tensor-model-parallel-size 2 --save DIR --load DIR --tokenizer-model FILE
        --tensorboard-dir /cloudai_run_results/tensorboard --log-timers-to-tensorboard --log-throughput
        --log-memory-to-tensorboard --log-interval 1

Switches (the fields whose default is ``""``, ``recompute_activations``, and every extra key, as CloudAI treats
them): ``""`` or ``"true"`` gives the bare flag, ``"false"`` leaves it out, anything else is its value. A TOML
boolean means the same as its text (CloudAI would print ``--flag True``, which Megatron's argparse refuses).
Dashed keys are refused, as CloudAI does (``seq_length``, not ``seq-length``).

Validity (Megatron's own start-up assertions, checked before a trial is spent): ``tp*pp*cp`` divides the GPUs,
``num_layers`` splits into ``pp`` stages, ``num_attention_heads`` into ``tp`` groups, and ``global_batch_size``
into ``micro_batch_size * dp`` (``cp`` and ``micro_batch_size`` are extra keys, default 1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from cloudai.errors import WorkloadError
from cloudai.readfile import read_ends
from cloudai.workloads.base import (
    ONE_NODE,
    STDOUT_FILE,
    JobContext,
    Resources,
    Workload,
    cloudai_extra_args,
    read_stdout,
    write_metrics,
)
from cloudai.workloads.megatron_run import parse
from cloudai.workloads.training_log import fatal_error, read_logs

PROGRESS_TAIL = 1 << 20  # bytes of stdout a progress poll reads: recent iterations, in bounded time
_NOT_FLAGS = frozenset({"docker_image_url", "run_script"})
_SWITCHES = frozenset(
    {"log_timers_to_tensorboard", "log_throughput", "log_memory_to_tensorboard", "recompute_activations"}
)


class MegatronRunArgs(BaseModel):
    """CloudAI's fields, defaults and order (the order is the command line's); extra keys become flags."""

    model_config = ConfigDict(extra="allow")

    docker_image_url: str
    run_script: Path

    global_batch_size: int | None = 16
    hidden_size: int | None = 4096
    max_position_embeddings: int | None = 4096
    num_attention_heads: int | None = 32
    num_layers: int | None = 32
    pipeline_model_parallel_size: int | None = 1
    recompute_activations: str | None = None
    seq_length: int | None = 4096
    tensor_model_parallel_size: int | None = 2

    save: Path | None = None
    load: Path | None = None
    tokenizer_model: Path | None = None

    tensorboard_dir: str | None = "/cloudai_run_results/tensorboard"
    log_timers_to_tensorboard: str | None = ""
    log_throughput: str | None = ""
    log_memory_to_tensorboard: str | None = ""
    log_interval: int | None = 1

    @field_validator("save", "load", mode="before")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        """``$HOME/ckpt`` as CloudAI expands it (from this process's environment)."""
        return os.path.expandvars(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _no_dashed_keys(self) -> MegatronRunArgs:
        dashed = sorted(key for key in self.model_extra or {} if "-" in key)
        if dashed:
            fixed = dashed[0].replace("-", "_")
            raise ValueError(f"dashed argument(s) {dashed}: write them with underscores ({fixed})")
        return self


def _switch(value: Any) -> list[str] | None:
    """A switch's words after its flag: [] for the bare flag, None to leave it out, [value] otherwise."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if text == "false":
        return None
    return [] if text in ("", "true") else [text]


def flags(model: MegatronRunArgs) -> list[str]:
    """The ``--flag value`` words of ``model``, in CloudAI's order."""
    extra = set(model.model_extra or {})
    words: list[str] = []
    for name, value in model.model_dump(exclude_none=True).items():
        if name in _NOT_FLAGS:
            continue
        flag = f"--{name.replace('_', '-')}"
        if name in _SWITCHES or name in extra:
            rest = _switch(value)
            words += [] if rest is None else [flag, *rest]
        else:
            words += [flag, str(value)]
    return words


def _knob(args: Mapping[str, Any], name: str, default: int | None) -> int | None:
    value = args.get(name, default)
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _parallelism(args: Mapping[str, Any]) -> tuple[int, int, int]:
    """(tp, pp, cp) with Megatron's defaults (CloudAI's tp default is 2)."""
    names = (("tensor_model_parallel_size", 2), ("pipeline_model_parallel_size", 1), ("context_parallel_size", 1))
    tp, pp, cp = (_knob(args, name, default) or 1 for name, default in names)
    return tp, pp, cp


def _model_split(args: Mapping[str, Any]) -> str | None:
    """The layers must split into pp stages, the attention heads into tp groups."""
    tp, pp, _ = _parallelism(args)
    layers, heads = _knob(args, "num_layers", 32), _knob(args, "num_attention_heads", 32)
    if layers is not None and layers % pp:
        return f"num_layers ({layers}) is not divisible by pipeline_model_parallel_size ({pp})"
    if heads is not None and heads % tp:
        return f"num_attention_heads ({heads}) is not divisible by tensor_model_parallel_size ({tp})"
    return None


def _gpu_split(args: Mapping[str, Any], gpus: int | None) -> str | None:
    """tp*pp*cp must divide the GPUs, the global batch split into micro-batches over dp (unknown GPUs: no rule)."""
    tp, pp, cp = _parallelism(args)
    if gpus is None:
        return None
    if gpus % (tp * pp * cp):
        return f"tp*pp*cp = {tp}*{pp}*{cp} = {tp * pp * cp} does not divide the {gpus} GPUs"
    dp, gbs, mbs = gpus // (tp * pp * cp), _knob(args, "global_batch_size", 16), _knob(args, "micro_batch_size", 1)
    if gbs is not None and mbs and gbs % (mbs * dp):
        return f"global_batch_size ({gbs}) is not divisible by micro_batch_size*dp = {mbs}*{dp} = {mbs * dp}"
    return None


class MegatronRun(Workload):
    name = "MegatronRun"
    args_model = MegatronRunArgs
    produces_metrics = True
    metrics = (
        "default",
        "iteration-time",
        "tflops-per-gpu",
        "step_time_s",
        "tflops_per_gpu",
        "tokens_per_s",
        "peak_memory_gb",
        "loss",
    )
    noisy = False  # a median over many steps is already the repetition; re-running a training job costs GPU hours
    units = {
        "default": "ms",
        "iteration-time": "ms",
        "tflops-per-gpu": "TFLOP/s",
        "step_time_s": "s",
        "tflops_per_gpu": "TFLOP/s",
        "tokens_per_s": "tokens/s",
        "peak_memory_gb": "GB",
    }

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = MegatronRunArgs.model_validate(args)
        script = str(model.run_script.absolute())
        return ["python", script, *flags(model), *cloudai_extra_args(job.extra_cmd_args)]

    def default_means(self, cmd_args: Mapping[str, Any]) -> str | None:
        return "iteration-time"

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return MegatronRunArgs.model_validate(args).docker_image_url or None

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        return _model_split(args) or _gpu_split(args, resources.num_gpus)

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        log = parse.parse(read_stdout(job_dir, "Megatron"))
        problem = parse.verdict(log)
        if problem:
            raise WorkloadError(problem)
        return write_metrics(job_dir, parse.metrics(log))

    def progress(self, job_dir: Path) -> list[tuple[int, float]]:
        """The headline metric (``default``) after each iteration logged so far, from the last MiB of stdout."""
        try:
            data, _ = read_ends(job_dir / STDOUT_FILE, 0, PROGRESS_TAIL)
        except OSError:
            return []
        return parse.progress(data.decode(errors="replace"))

    def failure_reason(self, job_dir: Path) -> str | None:
        """The fatal error the job's output shows (CUDA out of memory, an NCCL timeout, ...), or None."""
        return fatal_error(read_logs([job_dir / STDOUT_FILE, job_dir / "stderr.txt"]))
