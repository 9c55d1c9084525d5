"""CloudAI's LLM-serving arguments (``LLMServingCmdArgs``) and where each server of a job runs.

Field names and defaults are CloudAI's, so its ``vllm`` and ``sglang`` files load unchanged. A role table
(``[cmd_args.decode]``, ``[cmd_args.prefill]``) takes any serve flag (``tensor_parallel_size = 4`` becomes
``--tensor-parallel-size 4``; ``""`` a bare flag) besides the two fields CloudAI consumes itself, ``gpu_ids``
and ``num_nodes``. Every value, flags included, may be a list or a range: a knob like any other.

``roles`` turns the arguments into the job's servers, with CloudAI's rules: no ``prefill`` table is one
aggregated server on all the job's nodes; with one, a prefill and a decode server (one node each on one or
two nodes, else ``prefill.num_nodes`` + ``decode.num_nodes`` nodes), each on its GPUs (``gpu_ids``, else
the job's ``CUDA_VISIBLE_DEVICES`` or the node's GPUs, split in halves when both share one node), prefill on
``port + 100`` and decode on ``port + 200`` behind a router on ``port``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cloudai.config.fields import ExpandableText
from cloudai.errors import WorkloadError


class RoleArgs(BaseModel):
    """One server's arguments: ``gpu_ids`` and ``num_nodes`` are CloudAI's; every other key is a serve flag."""

    model_config = ConfigDict(extra="allow")
    CONSUMED: ClassVar[frozenset[str]] = frozenset({"gpu_ids", "num_nodes"})  # never rendered as serve flags

    gpu_ids: str | list[str] | None = Field(default=None, description="Comma-separated GPU ids; default: all")
    num_nodes: int | None = Field(default=None, ge=1, description="Nodes of this role in disaggregated mode")

    @field_validator("gpu_ids")
    @classmethod
    def _integers(cls, gpu_ids: str | list[str] | None) -> str | list[str] | None:
        words = gpu_ids if isinstance(gpu_ids, list) else (gpu_ids or "").split(",") if gpu_ids else []
        if not all(str(word).strip().isdigit() for word in words):
            raise ValueError(f'gpu_ids {gpu_ids!r} must be comma-separated GPU numbers, e.g. "0,1"')
        return gpu_ids

    def flag(self, key: str, value: Any) -> list[str]:
        """CloudAI's spelling: ``--key-with-dashes value``; ``""`` is a bare flag."""
        opt = f"--{key.replace('_', '-')}"
        return [opt] if value == "" else [opt, str(value)]

    def serve_flags(self) -> list[str]:
        words: list[str] = []
        for key, value in self.model_dump(exclude=set(self.CONSUMED), exclude_none=True).items():
            words += self.flag(key, value)
        return words

    def gpu_list(self) -> list[int]:
        return parse_gpu_ids(self.gpu_ids)


class ServingArgs(BaseModel):
    """CloudAI's ``LLMServingCmdArgs``; a workload narrows ``prefill``/``decode`` to its own role model."""

    model_config = ConfigDict(extra="forbid")

    docker_image_url: str
    model: str
    port: int = Field(default=8300, ge=1, le=65535)
    host: str = "0.0.0.0"
    bench_host: ExpandableText | None = None  # in the client's URL: "$SLURM_JOB_MASTER_NODE" expands
    healthcheck: ExpandableText = "/health"
    serve_healthcheck: ExpandableText | None = None
    serve_wait_seconds: int = Field(default=300, ge=1)
    prefill: RoleArgs | None = None
    decode: RoleArgs = Field(default_factory=RoleArgs)

    @model_validator(mode="after")
    def _disaggregated_port(self) -> ServingArgs:
        if self.prefill is not None and self.port > 65335:
            raise ValueError("disaggregated mode needs port <= 65335: prefill and decode listen on port+100/+200")
        if self.prefill is not None and bool(self.prefill.gpu_ids) != bool(self.decode.gpu_ids):
            raise ValueError("set both prefill.gpu_ids and decode.gpu_ids, or neither")
        return self


def parse_gpu_ids(gpu_ids: str | list[str] | None) -> list[int]:
    if not gpu_ids:
        return []
    words = gpu_ids if isinstance(gpu_ids, list) else gpu_ids.split(",")
    try:
        return [int(word) for word in words]
    except ValueError:
        raise WorkloadError(f"gpu_ids {gpu_ids!r} must be comma-separated integers") from None


@dataclass(frozen=True)
class Role:
    """One server of the job: ``serve`` (aggregated), ``prefill`` or ``decode``."""

    name: str
    first_node: int  # index of its first node in the job
    num_nodes: int
    gpus: tuple[int, ...]
    port: int
    host: str  # the shell variable that holds its (first) node's name: NODE, PREFILL_NODE, DECODE_NODE

    @property
    def host_ref(self) -> str:
        return f"${{{self.host}}}"


def visible_gpus(env: Mapping[str, str], gpus_per_node: int | None) -> list[int]:
    """The job's GPUs as CloudAI counts them: its ``CUDA_VISIBLE_DEVICES``, else the node's, else one."""
    devices = env.get("CUDA_VISIBLE_DEVICES", "")
    return parse_gpu_ids(devices) if devices else list(range(gpus_per_node or 1))


def roles(args: ServingArgs, num_nodes: int, env: Mapping[str, str], gpus_per_node: int | None) -> list[Role]:
    """The servers of one job (see the module docstring); ``WorkloadError`` when the node counts do not add up."""
    if args.prefill is None:
        gpus = all_gpu_ids(args, env, gpus_per_node)
        return [Role("serve", 0, num_nodes, tuple(gpus), args.port, "NODE")]
    prefill_nodes, decode_nodes = role_nodes(args, num_nodes)
    shared = num_nodes == 1 and prefill_nodes == decode_nodes == 1
    every = visible_gpus(env, gpus_per_node)
    half = len(every) // 2
    prefill_gpus = args.prefill.gpu_list() or (every[:half] if _split(args.prefill, num_nodes) else every)
    decode_gpus = args.decode.gpu_list() or (every[half:] if _split(args.decode, num_nodes) else every)
    return [
        Role("prefill", 0, prefill_nodes, tuple(prefill_gpus), args.port + 100, "PREFILL_NODE"),
        Role(
            "decode", 0 if shared else prefill_nodes, decode_nodes, tuple(decode_gpus), args.port + 200, "DECODE_NODE"
        ),
    ]


def _split(role: RoleArgs, num_nodes: int) -> bool:
    """Prefill and decode share one node's GPUs (halves) unless the job or the role spans nodes."""
    return num_nodes == 1 and role.num_nodes is None


def role_nodes(args: ServingArgs, num_nodes: int) -> tuple[int, int]:
    """(prefill nodes, decode nodes) of a disaggregated job, by CloudAI's rules."""
    assert args.prefill is not None
    prefill, decode = args.prefill.num_nodes, args.decode.num_nodes
    if prefill is None and decode is None:
        if num_nodes in (1, 2):
            return 1, 1
        raise WorkloadError(f"disaggregated serving on {num_nodes} nodes needs prefill.num_nodes and decode.num_nodes")
    if prefill is None or decode is None:
        raise WorkloadError("set both prefill.num_nodes and decode.num_nodes, or neither")
    if not (num_nodes == 1 and prefill == decode == 1) and prefill + decode != num_nodes:
        raise WorkloadError(
            f"prefill.num_nodes ({prefill}) + decode.num_nodes ({decode}) must equal the job's nodes ({num_nodes})"
        )
    return prefill, decode


def all_gpu_ids(args: ServingArgs, env: Mapping[str, str], gpus_per_node: int | None) -> list[int]:
    """The GPUs of one node that the job's servers use, as CloudAI lists them."""
    if args.prefill is not None and args.prefill.gpu_ids and args.decode.gpu_ids:
        return args.prefill.gpu_list() + args.decode.gpu_list()
    if args.prefill is None and not env.get("CUDA_VISIBLE_DEVICES") and args.decode.gpu_ids:
        return args.decode.gpu_list()
    return visible_gpus(env, gpus_per_node)


def used_gpus(args: ServingArgs, num_nodes: int, env: Mapping[str, str], gpus_per_node: int | None) -> int:
    """GPUs the job serves with, as CloudAI counts them for ``tps-per-gpu``."""
    count = len(all_gpu_ids(args, env, gpus_per_node))
    if args.prefill is None or num_nodes <= 1 or (args.prefill.gpu_ids and args.decode.gpu_ids):
        return count
    return count * num_nodes
