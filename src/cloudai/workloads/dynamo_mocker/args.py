"""CloudAI's ``DynamoMockerCmdArgs``: names, defaults and checks. Unknown keys of ``engine``, ``worker``,
``frontend``, a worker's ``args`` and the benchmark tables are the tools' own flags, passed through as CloudAI
does (``key_name = v`` -> ``--key-name v``; ``true``: a bare flag; ``false``: left out)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


def _positive(value: int | float) -> int | float:
    if value <= 0:
        raise ValueError("must be > 0")
    return value


class EngineArgs(_Open):
    speedup_ratio: float = Field(default=1.0, gt=0)
    block_size: int = Field(default=64, gt=0)
    num_gpu_blocks_override: int = Field(default=16384, gt=0)
    enable_prefix_caching: bool = True
    kv_transfer_bandwidth: float = Field(default=200.0, gt=0)  # GB/s, simulated KV migration (disaggregated mode)


class WorkerInstance(_Open):
    num_nodes: int = Field(default=1, gt=0)  # mocker instances of this role
    cmd: str = ""  # empty: <env python> -m dynamo.mocker --disaggregation-mode <role>
    worker_initialized_regex: str = "created and running"
    extra_args: str | None = None
    args: _Open = Field(default_factory=_Open)


class WorkerConfig(_Open):
    disaggregation_mode: Literal["none", "prefill_decode"] = "none"
    num_workers: int = Field(default=1, gt=0)  # combined mode: simulated workers in one process
    prefill_worker: WorkerInstance = Field(default_factory=WorkerInstance)
    decode_worker: WorkerInstance = Field(default_factory=WorkerInstance)


class FrontendArgs(_Open):
    http_port: int = Field(default=8000, ge=1, le=65535)  # CloudAI's; cloudai takes a port free at the trial's start
    router_mode: Literal["round_robin", "kv_router"] = "round_robin"


class BenchmarkArgs(_Open):
    cmd: str = ""  # empty: the environment's binary; "profile" is appended
    extra_args: str | None = None
    input_tokens: int = 5000
    output_tokens: int = 500
    request_count: int = Field(default=1000, gt=0)
    replay_concurrency: int = 100
    replay_mode: Literal["offline", "online"] = "offline"  # offline: --concurrency; online: --request-rate

    _positive = field_validator("input_tokens", "output_tokens", "replay_concurrency")(_positive)


class DynamoMockerArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_path: str = "Qwen/Qwen3-0.6B"  # a hub name, or a local dir ("./install/dynamo-tiny-model": installed)
    nats_cmd: str = "nats-server -js"  # CloudAI's; not run: Dynamo 1.6 runs on file discovery, tcp and zmq
    engine: EngineArgs = Field(default_factory=EngineArgs)
    worker: WorkerConfig = Field(default_factory=WorkerConfig)
    frontend: FrontendArgs = Field(default_factory=FrontendArgs)
    benchmark_tool: Literal["genai_perf", "aiperf"] = "genai_perf"
    genai_perf: BenchmarkArgs = Field(default_factory=BenchmarkArgs)
    aiperf: BenchmarkArgs = Field(default_factory=BenchmarkArgs)

    @property
    def bench(self) -> BenchmarkArgs:
        return self.aiperf if self.benchmark_tool == "aiperf" else self.genai_perf
