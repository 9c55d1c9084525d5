"""CloudAI's JaxToolbox ``cmd_args`` (``GPTCmdArgs``, ``GrokCmdArgs``): field names, defaults, nesting.

``[cmd_args.fdl]`` are Paxml's Fiddle overrides (``--fdl.NAME=value``), written as shell words as CloudAI writes
them (``dcn_mesh_shape = "'[1, 8, 1]'"``: the quotes are the user's); ``[cmd_args.setup_flags]`` the launcher's
own flags; ``[cmd_args.xla_flags]`` (GPT) and ``[cmd_args.profile]`` / ``[cmd_args.perf]`` (Grok) the XLA flags
of each stage. A value is one shell word without ``$``, backticks or command separators (it lands in a script).
"""

from __future__ import annotations

import re
import shlex
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# An fdl value is shell text (CloudAI's convention), but one word and inert: no expansion, no second command.
_INERT = re.compile(r"[A-Za-z0-9_.,:/=+\-\[\]' \"\\]*")
# An XLA flag's value sits inside a double-quoted XLA_FLAGS="...": nothing that ends or expands the quotes.
_XLA_SAFE = re.compile(r"[^\"$`\\\s]*")


def _one_word(value: str) -> str:
    try:
        words = shlex.split(value)
    except ValueError:
        words = []
    if not _INERT.fullmatch(value) or len(words) != 1:
        raise ValueError(f"{value!r} must be one shell word of letters, digits, quotes and [],.:/=+-_")
    return value


def _xla_safe(value: str) -> str:
    if not _XLA_SAFE.fullmatch(value):
        raise ValueError(f"{value!r} must not hold a quote, '$', a backtick, a backslash or a space")
    return value


def _config_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_./:-]+", value):
        raise ValueError(f"{value!r} must be a Fiddle config name (letters, digits and _./:-)")
    return value


FdlText = Annotated[str, AfterValidator(_one_word)]
ConfigName = Annotated[str, AfterValidator(_config_name)]
XlaText = Annotated[str, AfterValidator(_xla_safe)]
_STRICT = ConfigDict(extra="forbid")


class JaxFdl(BaseModel):
    model_config = _STRICT

    checkpoint_policy: FdlText = "save_nothing"
    dcn_mesh_shape: FdlText = "'[1, 1, 1]'"
    fprop_dtype: FdlText = "bfloat16"
    ici_mesh_shape: FdlText = "'[1, 8, 1]'"
    max_steps: int = 20
    num_gpus: int = 64
    num_microbatches: int = 1
    num_stages: int = 1
    percore_batch_size: float = 4.0
    use_fp8: int = 1
    use_repeated_layer: bool = False


class GPTFdl(JaxFdl):
    num_groups: int = 64


class GrokFdl(JaxFdl):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    checkpoint_policy: FdlText = '"save_iteration_input"'
    combine_qkv: bool = False
    dcn_mesh_shape: FdlText = "'[1, 8, 1, 1]'"
    dims_per_head: int = 128
    hidden_dims: int = 32768
    ici_mesh_shape: FdlText = "'[1, 1, 8, 1]'"
    max_seq_len: int = 8192
    model_dims: int = 6144
    num_experts: int = 8
    num_groups: int = 64
    num_heads: int = 48
    num_kv_heads: int = 8
    num_layers: int = 64
    percore_batch_size: float = 1.0
    use_expert_parallel: bool = True
    use_fp8: int = 1
    use_te_dpa: bool = True
    vocab_size: int = 131072


class XLAFlags(BaseModel):
    model_config = _STRICT

    xla_disable_hlo_passes: XlaText = "rematerialization"
    xla_dump_hlo_pass_re: XlaText = ".*"
    xla_gpu_enable_all_gather_combine_by_dim: bool = False
    xla_gpu_enable_highest_priority_async_stream: bool = True
    xla_gpu_enable_latency_hiding_scheduler: bool = True
    xla_gpu_enable_pipelined_all_gather: bool = True
    xla_gpu_enable_pipelined_all_reduce: bool = True
    xla_gpu_enable_pipelined_reduce_scatter: bool = True
    xla_gpu_enable_reduce_scatter_combine_by_dim: bool = False
    xla_gpu_enable_triton_gemm: bool = False
    xla_gpu_enable_triton_softmax_fusion: bool = False
    xla_gpu_enable_while_loop_double_buffering: bool = True
    xla_gpu_graph_level: int = 0


class GPTXLAFlags(XLAFlags):
    xla_gpu_all_reduce_combine_threshold_bytes: int = 447741952
    xla_gpu_enable_while_loop_double_buffering: bool = False


class GrokPerfXLAFlags(XLAFlags):
    combine_threshold_bytes: int = 301989888
    xla_gpu_run_post_layout_collective_pipeliner: bool = False
    xla_gpu_use_memcpy_local_p2p: bool = False
    xla_gpu_pgle_profile_file_or_directory_path: XlaText = "/opt/paxml/workspace/pgle_output_profile.pbtxt"


class GrokProfileXLAFlags(XLAFlags):
    xla_gpu_disable_async_collectives: XlaText = (
        "ALLREDUCE,ALLGATHER,REDUCESCATTER,COLLECTIVEBROADCAST,ALLTOALL,COLLECTIVEPERMUTE"
    )
    xla_gpu_run_post_layout_collective_pipeliner: bool = False
    xla_gpu_enable_latency_hiding_scheduler: bool = False


class SetupFlags(BaseModel):
    model_config = _STRICT

    docker_workspace_dir: str = Field(default="/opt/paxml/workspace/", pattern=r"/[A-Za-z0-9_./-]*")
    enable_checkpoint_saving: bool = False
    gpus_per_node: int = Field(default=8, gt=0)
    mpi: str = "pmix"
    num_nodes: int = 8
    tfds_data_dir: str = Field(default="/opt/dataset", pattern=r"/[A-Za-z0-9_./-]*")


class GPTSetupFlags(SetupFlags):
    gpt_vocab_path: str = "gs://t5-data/vocabs/cc_all.32000.100extra/sentencepiece.model"


class JaxToolboxArgs(BaseModel):
    model_config = _STRICT

    docker_image_url: str
    load_container: bool = True  # CloudAI's pyxis named-container pre-load; the Slurm system pulls the image itself
    output_path: str | None = None  # CloudAI fills it with the job dir; not part of the command


class GPTArgs(JaxToolboxArgs):
    fdl_config: ConfigName
    fdl: GPTFdl = Field(default_factory=GPTFdl)
    xla_flags: GPTXLAFlags = Field(default_factory=GPTXLAFlags)
    setup_flags: GPTSetupFlags = Field(default_factory=GPTSetupFlags)


class GrokArgs(JaxToolboxArgs):
    fdl: GrokFdl = Field(default_factory=GrokFdl)
    fdl_config: ConfigName = "paxml.tasks.lm.params.nvidia.Grok_Proxy"
    enable_pgle: bool = True
    setup_flags: SetupFlags = Field(default_factory=SetupFlags)
    profile: GrokProfileXLAFlags = Field(default_factory=GrokProfileXLAFlags)
    perf: GrokPerfXLAFlags = Field(default_factory=GrokPerfXLAFlags)


def quoted_text(value: str) -> str:
    """A string fdl value as CloudAI serialises ``fprop_dtype`` / ``checkpoint_policy``: ``\\"value\\"`` (kept when
    already so, its plain double quotes escaped when it has them)."""
    if value.startswith('\\"') and value.endswith('\\"'):
        return value
    if value.startswith('"') and value.endswith('"'):
        return value.replace('"', '\\"')
    return f'\\"{value}\\"'


def fdl_words(fdl: JaxFdl) -> list[str]:
    """``--fdl.NAME=value`` for every fdl field, sorted by name, values as CloudAI prints them."""
    values: dict[str, Any] = fdl.model_dump()
    for name in ("fprop_dtype", "checkpoint_policy"):
        values[name] = quoted_text(values[name])
    return [f"--fdl.{name.upper()}={value}" for name, value in sorted(values.items())]
