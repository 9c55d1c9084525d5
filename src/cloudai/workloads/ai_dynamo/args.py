"""CloudAI's ``AIDynamoCmdArgs``: field names (dashed aliases too), defaults and order, as its TOML files use them.

Worker ``args`` and benchmark ``args`` pass unknown keys through (they are the tools' own flags, as in CloudAI);
every other table is closed. CloudAI fields cloudai does not run are refused by name (``CLOUDAI_ONLY``: the
error says "not supported by cloudai", never a did-you-mean).
"""

from __future__ import annotations

import shlex
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from cloudai.config.fields import AbsolutePathOrEmpty, RelativeName, ShellCode


def _alias(name: str) -> Any:
    """A field read as ``name`` or with dashes (``worker-initialized-regex``), written with dashes."""
    dashed = name.replace("_", "-")
    return Field(validation_alias=AliasChoices(dashed, name), serialization_alias=dashed)


def _aliased(name: str, default: Any) -> Any:
    dashed = name.replace("_", "-")
    return Field(default=default, validation_alias=AliasChoices(dashed, name), serialization_alias=dashed)


class Args(BaseModel):
    """A tool's own flags: any key, rendered ``--key value`` in TOML order."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class WorkerArgs(Args):
    model: str | None = None
    model_path: str | None = Field(default=None, serialization_alias="model-path")
    served_model_name: str | None = Field(default=None, serialization_alias="served-model-name")
    gpu_memory_utilization: float | None = _aliased("gpu_memory_utilization", None)
    pipeline_parallel_size: int = _aliased("pipeline_parallel_size", 1)
    tensor_parallel_size: int = _aliased("tensor_parallel_size", 1)
    data_parallel_size: int | None = _aliased("data_parallel_size", None)


class WorkerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    CLOUDAI_ONLY: ClassVar[dict[str, str]] = {"nodes": "CloudAI pins this role to named nodes of the allocation"}

    cmd: str
    worker_initialized_regex: str = _alias("worker_initialized_regex")
    multiple_workers_per_node: bool = _aliased("multiple_workers_per_node", False)
    num_nodes: int = Field(default=1, ge=0, validation_alias=AliasChoices("num-nodes", "num_nodes"))
    args: WorkerArgs = Field(default_factory=WorkerArgs)
    extra_args: str | None = _aliased("extra_args", None)

    @field_validator("multiple_workers_per_node")
    @classmethod
    def _one_per_node(cls, value: bool) -> bool:
        if value:
            raise ValueError("true is not supported by cloudai (one worker per node and role; CloudAI starts "
                             "gpus/(tp*pp) workers per node): remove it or set it false")  # fmt: skip
        return value

    @property
    def gpus(self) -> int:
        return self.args.tensor_parallel_size * self.args.pipeline_parallel_size


class DCGMExporter(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    enabled: bool = False
    docker_image_url: str = Field(
        default="nvcr.io/nvidia/k8s/dcgm-exporter:4.5.2-4.8.1-distroless",
        validation_alias=AliasChoices("docker-image-url", "docker_image_url", "image-url", "image_url"),
    )
    port: int = 9401


def _worker(cmd: str) -> WorkerConfig:
    return WorkerConfig.model_validate({"cmd": cmd, "worker_initialized_regex": "VllmWorker.*has.been.initialized"})


class DynamoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    model: str = "Qwen/Qwen3-0.6B"
    backend: Literal["vllm", "sglang", "sglang_dsr1"] = "vllm"
    endpoint: str = "v1/chat/completions"
    connector: str | list[str] | None = None
    workspace_path: str = _aliased("workspace_path", "/workspace")
    ingress_cmd: str = _aliased("ingress_cmd", "python -m dynamo.frontend --router-mode kv")
    node_setup_cmd: ShellCode = _aliased("node_setup_cmd", "/usr/local/ucx/bin/ucx_info -d |grep Transport | sort -u;")
    port: int = 8000
    etcd_cmd: str = _aliased("etcd_cmd", "etcd --log-level info --data-dir /tmp/etcd")
    etcd_port: int = _aliased("etcd_port", 2379)
    nats_cmd: str = _aliased("nats_cmd", "nats-server -js")
    nats_port: int = _aliased("nats_port", 4222)
    dcgm_exporter: DCGMExporter = Field(default_factory=DCGMExporter)
    decode_worker: WorkerConfig = Field(default_factory=lambda: _worker("python3 -m dynamo.vllm"))
    prefill_worker: WorkerConfig = Field(default_factory=lambda: _worker("python3 -m dynamo.vllm --is-prefill-worker"))

    @field_validator("connector")
    @classmethod
    def _connectors(cls, value: str | list[str] | None) -> str | list[str] | None:
        words = (value if isinstance(value, str) else " ".join(value)).split() if value is not None else []
        wrong = [w for w in words if w not in ("kvbm", "lmcache", "nixl", "none")]
        if wrong:
            raise ValueError(f"unknown connector {wrong[0]!r}: kvbm, lmcache, nixl or none")
        return value

    @model_validator(mode="after")
    def _served_model(self) -> DynamoArgs:
        """CloudAI's rule: the workers serve ``model`` (vLLM: ``--model``; SGLang: ``--model-path`` and
        ``--served-model-name``)."""
        for worker in (self.prefill_worker, self.decode_worker):
            if self.backend == "vllm":
                worker.args.model = self.model
            else:
                worker.args.model_path = worker.args.served_model_name = self.model
        return self


class Benchmark(BaseModel):
    """A benchmark client (CloudAI's ``Workload``: genai_perf, aiperf)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    CLOUDAI_ONLY: ClassVar[dict[str, str]] = {"repo": "CloudAI clones the benchmark's repository at install time"}

    name: str
    cmd: str
    script: Any = None  # CloudAI's installed wrapper script: accepted; cloudai runs the benchmark itself
    report_name: RelativeName | None = _aliased("report_name", None)
    args: Args = Field(default_factory=Args)
    extra_args: str | None = _aliased("extra_args", None)

    @field_validator("extra_args", mode="before")
    @classmethod
    def _one_string(cls, value: Any) -> Any:
        return shlex.join(value) if isinstance(value, list) else value


class GenAIPerf(Benchmark):
    """Keys beside ``args`` are genai-perf flags too (CloudAI accepts them there)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    name: str = "genai_perf"
    cmd: str = "genai-perf profile"


class AIPerf(Benchmark):
    name: str = "aiperf"
    cmd: str = "aiperf profile"
    setup_cmd: ShellCode | None = _aliased("setup_cmd", None)  # run by bash -lc
    report_name: RelativeName | None = _aliased("report_name", "aiperf_report.csv")
    artifact_dir_name: RelativeName = _aliased("artifact_dir_name", "aiperf_artifacts")
    health_check_between_phases: bool = _aliased("health_check_between_phases", True)
    continue_on_phase_failure: bool = _aliased("continue_on_phase_failure", False)
    between_phase_cmd: ShellCode | None = _aliased("between_phase_cmd", "true")


class AIPerfPhase(BaseModel):
    """A named aiperf run whose fields override ``[cmd_args.aiperf]``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: RelativeName = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")  # a dir under the artifact dir
    cmd: str | None = None
    setup_cmd: ShellCode | None = _aliased("setup_cmd", None)  # run by bash -lc
    report_name: RelativeName | None = _aliased("report_name", None)
    artifact_dir_name: RelativeName | None = _aliased("artifact_dir_name", None)
    args: Args = Field(default_factory=Args)
    extra_args: str | None = _aliased("extra_args", None)
    between_phase_cmd: ShellCode | None = _aliased("between_phase_cmd", None)


class AIPerfAccuracy(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = "aiperf_accuracy"
    entrypoint: str = "aiperf profile"
    cli: str
    script: Any = None
    setup_cmd: ShellCode | None = _aliased("setup_cmd", None)  # run by bash -lc
    artifact_dir_name: RelativeName = _aliased("artifact_dir_name", "aiperf_accuracy_artifacts")


class LMCacheController(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cmd: str


class AIDynamoArgs(BaseModel):
    """``[cmd_args]`` of an ``AIDynamo`` test."""

    model_config = ConfigDict(extra="forbid")
    CLOUDAI_ONLY: ClassVar[dict[str, str]] = {
        "startup_cmd": "CloudAI runs a command in its own container before the workers",
        "startup_cmd_docker_image": "CloudAI runs startup_cmd in this image",
    }

    docker_image_url: str
    # mounted at itself; "" is CloudAI's default base (cache_config.DEFAULT_CACHE_BASE)
    storage_cache_dir: AbsolutePathOrEmpty | list[AbsolutePathOrEmpty] | None = "/tmp"
    dynamo: DynamoArgs
    hicache: dict[str, Any] | None = None  # SGLang HiCache storage-backend config, passed whole (cache_config)
    lmcache: dict[str, Any] | None = None  # LMCache config, passed whole (cache_config)
    lmcache_controller: LMCacheController | None = None
    genai_perf: GenAIPerf = Field(default_factory=GenAIPerf)
    aiperf: AIPerf = Field(default_factory=AIPerf)
    aiperf_phases: list[AIPerfPhase] | None = None
    aiperf_accuracy: AIPerfAccuracy | None = None
    workloads: str = "genai_perf.sh"

    @field_validator("workloads")
    @classmethod
    def _workloads(cls, value: str) -> str:
        names = [name.strip() for name in value.split(",")]
        wrong = [name for name in names if name not in ("genai_perf.sh", "aiperf.sh")]
        if wrong:
            raise ValueError(f"unknown workload {wrong[0]!r}: genai_perf.sh, aiperf.sh or both, comma-separated")
        return ",".join(names)

    @field_validator("aiperf_phases")
    @classmethod
    def _unique_phases(cls, phases: list[AIPerfPhase] | None) -> list[AIPerfPhase] | None:
        names = [phase.name for phase in phases or []]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"aiperf phase names must be unique; given twice: {', '.join(twice)}")
        return phases

    @property
    def workload_list(self) -> list[str]:
        return self.workloads.split(",")
