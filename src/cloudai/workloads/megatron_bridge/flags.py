"""The launcher command CloudAI renders for MegatronBridge (``_build_launcher_parts``), in CloudAI's flag order.

A field reaches the command only when the test sets it (or CloudAI forces it: the model names, ``num_gpus``,
``gpus_per_node``, ``hf_token``, ``save_config_filepath``); booleans are ``true``/``false``; ``vp = 1`` is passed as
``-vp None`` (CloudAI's way of leaving virtual pipelining off); ``--detach false`` always (the launcher waits
for its job, so the step times are in its log); the Hydra overrides close the line, CloudAI's tensorboard
defaults first, then ``extra_cmd_args``.

``-hf`` is ``"${HF_TOKEN}"`` unless the test wrote a token itself: the job inherits ``HF_TOKEN`` from the
environment cloudai runs in, so the value reaches no script, log or terminal (CloudAI wrote it into the script).

Where CloudAI reads its system, the command reads the allocation it runs in: ``-p "$SLURM_JOB_PARTITION"`` (the
launcher's job goes where the batch script runs); no ``-a`` (the inner job takes Slurm's default account).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cloudai.steps import Var
from cloudai.workloads.base import JobContext
from cloudai.workloads.megatron_bridge.args import MegatronBridgeArgs

HF_TOKEN = Var("${HF_TOKEN}")  # the token from the job's environment: its value is never written
FORCED = {"model_family_name", "model_recipe_name", "num_gpus", "gpus_per_node", "hf_token", "save_config_filepath"}
TENSORBOARD = {
    "logger.tensorboard_dir": "/nemo_run/tb_logs",
    "logger.log_timers_to_tensorboard": "true",
    "logger.log_throughput_to_tensorboard": "true",
    "logger.log_memory_to_tensorboard": "true",
}
# (field, flag) in CloudAI's order, between the launcher's own flags and the Hydra overrides
_MODEL = [("hidden_size", "--hidden_size"), ("num_layers", "--num_layers"),
          ("pipeline_model_parallel_layout", "--pipeline_model_parallel_layout"),
          ("first_k_dense_replace", "--first_k_dense_replace")]  # fmt: skip
_PARALLEL = [("tp", "-tp"), ("pp", "-pp"), ("cp", "-cp"), ("vp", "-vp"), ("ep", "-ep"), ("et", "-et"),
             ("mb", "-mb"), ("gb", "-gb"), ("seq_length", "-sl")]  # fmt: skip
_TAIL = [("lr", "--lr"), ("min_lr", "--min_lr"), ("warmup_iters", "--warmup_iters"),
         ("pretrained_checkpoint", "--pretrained_checkpoint"), ("save_dir", "--save_dir"), ("load_dir", "--load_dir"),
         ("save_interval", "--save_interval"), ("most_recent_k", "--most_recent_k"),
         ("save_config_filepath", "--save_config_filepath"), ("data", "--data"), ("dataset_paths", "--dataset_paths"),
         ("dataset_root", "--dataset_root"), ("index_mapping_dir", "--index_mapping_dir"),
         ("dataset_name", "--dataset_name")]  # fmt: skip
_TOKENIZER = [("tokenizer_type", "--tokenizer_type"), ("tokenizer_model", "--tokenizer_model"),
              ("vocab_size", "--vocab_size"), ("pytorch_profiler", "-pyp"),
              ("profiling_start_step", "--profiling_start_step"), ("profiling_stop_step", "--profiling_stop_step"),
              ("record_memory_history", "-mh")]  # fmt: skip
_WANDB = [("hf_token", "-hf"), ("nemo_home", "-nh"), ("wandb_key", "-wdk"), ("wandb_project_name", "-wdp"),
          ("wandb_entity_name", "-wde"), ("wandb_experiment_name", "-wdj"), ("wandb_save_dir", "-wds"),
          ("max_retries", "--max_retries")]  # fmt: skip


class _Parts:
    """The growing command: ``add`` renders one value as CloudAI does, ``field`` only when the test set it."""

    def __init__(self, model: MegatronBridgeArgs) -> None:
        self.words: list[str] = []
        self.model = model
        self.set = model.model_fields_set

    def add(self, flag: str, value: Any) -> None:
        if value is None or value == "" or value == []:
            return
        if isinstance(value, bool):
            self.words += [flag, "true" if value else "false"]
        elif isinstance(value, list):
            items = [str(v) for v in value]
            self.words += [flag, *items] if flag == "--dataset_paths" else [flag, ",".join(items)]
        else:
            self.words += [flag, value if isinstance(value, str) else str(value)]  # a Var stays one

    def field(self, name: str, flag: str, value: Any = None) -> None:
        if name in self.set or name in FORCED:
            self.add(flag, getattr(self.model, name) if value is None else value)

    def switch(self, name: str, flag: str) -> None:
        if getattr(self.model, name) and name in self.set:
            self.words.append(flag)


def launcher_args(model: MegatronBridgeArgs, job: JobContext, mounts: list[str]) -> list[str]:
    """Every word after ``setup_experiment.py``."""
    p = _Parts(model)
    p.add("-p", Var("${SLURM_JOB_PARTITION}"))
    p.field("gpu_type", "-g")
    p.field("log_dir", "-l")
    p.add("-t", _hhmmss(job.time_limit_s))
    p.field("container_image", "-i", container_path(model.container_image, job))
    p.field("compute_dtype", "-c")
    p.field("task", "--task")
    for name, flag in _WANDB:
        p.field(name, flag, (model.hf_token or HF_TOKEN) if name == "hf_token" else None)
    p.switch("dryrun", "-d")
    p.field("num_gpus", "-ng")
    if job.gpus_per_node:
        p.add("-gn", job.gpus_per_node)
    p.add("-cm", ",".join(mounts))
    for key, value in sorted(job.env.items()):
        p.words += ["-cb", f"export {key}={value}"]
    _model_flags(p)
    for name, flag in _PARALLEL:
        p.field(name, flag, "None" if name == "vp" and model.vp == 1 else None)
    if "moe_a2a_overlap" in p.set:
        p.add("--moe_a2a_overlap", bool(model.moe_a2a_overlap))
    for name, flag in [("max_steps", "-ms"), ("recompute_num_layers", "-rl"), ("activation_offload_layers", "-ol")]:
        p.field(name, flag)
    if model.recompute_modules and "recompute_modules" in p.set:
        p.words += ["--recompute_modules", f'"{",".join(_items(model.recompute_modules))}"']
    p.words += ["--detach", "false"]
    _tail_flags(p, job)
    return p.words + [f"{k}={v}" if v not in ("", None) else str(k) for k, v in _overrides(job).items()]


def _model_flags(p: _Parts) -> None:
    m = p.model
    p.field("domain", "--domain")
    p.switch("use_recipes", "--use_recipes")
    if "enable_vboost" in p.set:
        p.add("-vb", bool(m.enable_vboost))
    p.field("model_family_name", "-m")
    p.field("model_recipe_name", "-mr")
    for name, flag in _MODEL:
        p.field(name, flag)
    p.switch("enable_nsys", "-en")
    for name in ("use_tokendrop", "use_megatron_fsdp", "nccl_ub"):
        if name in p.set and getattr(m, name) is not None:
            p.add(f"--{name}", bool(getattr(m, name)))
    p.field("cuda_graph_impl", "--cuda_graph_impl")
    if m.cuda_graph_scope and "cuda_graph_scope" in p.set:
        p.add("--cuda_graph_scope", ",".join(_items(m.cuda_graph_scope)))


def _tail_flags(p: _Parts, job: JobContext) -> None:
    m = p.model
    for name, flag in _TAIL:
        p.field(name, flag)
    p.switch("packed_sequence", "--packed_sequence")
    p.switch("head_only", "--head_only")
    for name, flag in _TOKENIZER:
        p.field(name, flag)
    p.switch("profiling_gpu_metrics", "--profiling_gpu_metrics")
    p.field("profiling_ranks", "--profiling_ranks")
    for name in ("nsys_trace", "nsys_extra_args"):
        value = getattr(m, name)
        p.field(name, f"--{name}", ",".join(_items(value)) if value else None)
    if job.gpus_per_node:
        gpus = job.gpus_per_node
        p.words += ["--additional_slurm_params", f"gpus-per-node={gpus};gres=gpu:{gpus}"]
    p.field("config_variant", "-cv")
    p.switch("list_config_variants", "--list_config_variants")


def container_path(image: str, job: JobContext) -> str | None:
    """``-i``: a local image file as an absolute path; an image name as given (cloudai caches no images)."""
    if image.startswith(("/", ".")):
        return str(Path(image).absolute())
    return image or None


def _overrides(job: JobContext) -> dict[str, Any]:
    extra = job.extra_cmd_args if isinstance(job.extra_cmd_args, Mapping) else {}
    return {**TENSORBOARD, **extra}


def _items(value: str | list[str]) -> list[str]:
    """A list, or a comma-separated string (in brackets or not), as clean items (CloudAI's normalisation)."""
    text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value).strip().strip("\"'")
    text = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    return [part.strip().strip("\"'") for part in text.split(",") if part.strip()]


def _hhmmss(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    total = int(seconds)
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"
