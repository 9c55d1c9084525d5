"""CloudAI's ``MegatronBridgeCmdArgs``: field names and defaults (each maps to one launcher flag, see ``flags``).

Only fields the test sets reach the command (CloudAI passes ``model_fields_set`` plus a few forced ones), so a
default here documents the launcher's own default rather than adding a flag. ``hf_token`` falls back to the
``HF_TOKEN`` environment variable and one of them is required, as in CloudAI; the fallback stays a reference
(``"${HF_TOKEN}"`` in the script, expanded by the job's shell from the environment the job inherits), so the
token is in no file cloudai writes, no log line and no terminal output.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

StrList = str | list[str]


class MegatronBridgeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gpu_type: str = "gb200"
    log_dir: str = ""
    container_image: str = ""
    num_gpus: int = 8
    enable_vboost: bool | None = False
    dryrun: bool | None = False
    enable_nsys: bool | None = False
    domain: str | None = None
    hidden_size: int | None = None
    num_layers: int | None = None
    pipeline_model_parallel_layout: str | None = None
    first_k_dense_replace: int | None = None
    model_family_name: str = ""
    model_recipe_name: str = ""
    use_recipes: bool | None = None
    task: str = "pretrain"
    compute_dtype: str = "bf16"
    fp8_recipe: str | None = None
    hf_token: str = ""
    nemo_home: str | None = None
    wandb_key: str | None = None
    wandb_project_name: str | None = None
    wandb_entity_name: str | None = None
    wandb_experiment_name: str | None = None
    wandb_save_dir: str | None = None
    max_retries: int | None = 1
    use_tokendrop: bool | None = None
    use_megatron_fsdp: bool | None = None
    cuda_graph_impl: str | None = None
    cuda_graph_scope: StrList | None = None
    tp: int | None = None
    pp: int | None = None
    cp: int | None = None
    vp: int | None = None
    ep: int | None = None
    et: int | None = None
    mb: int | None = None
    gb: int | None = None
    seq_length: int | None = None
    lr: float | None = None
    min_lr: float | None = None
    warmup_iters: int | None = None
    pretrained_checkpoint: str | None = None
    save_dir: str | None = None
    load_dir: str | None = None
    save_interval: int | None = None
    most_recent_k: int | None = None
    save_config_filepath: str | None = "/nemo_run/configs/ConfigContainer.yaml"
    data: str | None = None
    dataset_paths: StrList | None = None
    dataset_root: str | None = None
    index_mapping_dir: str | None = None
    dataset_name: str | None = None
    packed_sequence: bool | None = None
    head_only: bool | None = None
    tokenizer_type: str | None = None
    tokenizer_model: str | None = None
    vocab_size: int | None = None
    pytorch_profiler: bool | None = None
    profiling_start_step: int | None = None
    profiling_stop_step: int | None = None
    record_memory_history: bool | None = None
    profiling_gpu_metrics: bool | None = None
    profiling_ranks: int | str | list[int] | None = None
    nsys_trace: StrList | None = None
    nsys_extra_args: StrList | None = None
    nccl_ub: bool | None = None
    moe_a2a_overlap: bool | None = None
    max_steps: int | None = 10
    recompute_num_layers: int | None = None
    activation_offload_layers: int | None = None
    recompute_modules: StrList | None = None
    num_distributed_optimizer_instances: int | None = None
    config_variant: str | None = None
    list_config_variants: bool | None = None

    @field_validator("hf_token", mode="after")
    @classmethod
    def _token(cls, value: str) -> str:
        """The token as written ("" when it comes from ``HF_TOKEN``: never copied out of the environment)."""
        if not (value.strip() or os.environ.get("HF_TOKEN", "").strip()):
            raise ValueError("a Hugging Face token is required: set HF_TOKEN in the environment or cmd_args.hf_token")
        return value.strip()

    @field_validator("model_family_name", "model_recipe_name", mode="after")
    @classmethod
    def _named(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip():
            raise ValueError(f"cmd_args.{info.field_name} cannot be empty")
        return value.strip()
