"""``sglang``: CloudAI's SGLang workload, its files unchanged. One job (``cloudai.workloads.serving``)::

    env CUDA_VISIBLE_DEVICES=0 python3 -m sglang.launch_server --model-path MODEL --host 0.0.0.0 --port 8300 [flags]
    wait for http://${NODE}:8300/v1/models
    python3 -m sglang.bench_serving --backend sglang --base-url http://${NODE}:8300 --model MODEL
        --dataset-name random --num-prompts 30 --max-concurrency 16 --random-input 16 --random-output 128
        --warmup-requests 2 --random-range-ratio 1.0 --output-file JOB/sglang-bench.jsonl --output-details

Disaggregated (``[cmd_args.prefill]``): ``--disaggregation-mode prefill|decode`` servers (port+100, port+200)
behind ``sglang_router.launch_router --pd-disaggregation`` (port), the client with ``--pd-separated``. A role on
several nodes is one task per node (``--dist-init-addr``, ``--nnodes``, ``--node-rank $SLURM_PROCID``).
``default`` is the request throughput (req/s), as CloudAI's report has it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from cloudai.config.fields import ExpandableText
from cloudai.errors import WorkloadError
from cloudai.steps import Run, Step, Var
from cloudai.workloads.base import JobContext
from cloudai.workloads.serving.args import Role, RoleArgs, ServingArgs
from cloudai.workloads.serving.results import BenchResult, accuracy, from_block, from_json, last_json_line, read_text
from cloudai.workloads.serving.workload import ServingWorkload, bench_host, fill, inner, words

BENCH_JSONL = "sglang-bench.jsonl"
BENCH_LOG = "sglang-bench.log"
SEMANTIC_LOG = "sglang-semantic-eval.log"


class SglangRole(RoleArgs):
    CONSUMED: ClassVar[frozenset[str]] = frozenset({"gpu_ids", "num_nodes", "disaggregation_transfer_backend"})

    disaggregation_transfer_backend: str = "nixl"


class SglangBenchArgs(BaseModel):
    """CloudAI's ``bench_cmd_args`` for ``sglang.bench_serving``; other keys become ``--key value`` flags."""

    model_config = ConfigDict(extra="allow")

    backend: str = "sglang"
    dataset_name: str = "random"
    num_prompts: int = 30
    max_concurrency: int = 16
    random_input: int = 16
    random_output: int = 128
    warmup_requests: int = 2
    random_range_ratio: float = 1.0
    output_details: bool = True


class SglangSemanticEvalArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entrypoint: str = "python3 -m sglang.test.run_eval"
    cli: str = "--host {host} --port {port} --eval-name gsm8k --num-examples 200 --num-threads 128 --model {model}"


class SglangArgs(ServingArgs):
    model: str = "Qwen/Qwen3-8B"
    serve_module: str = "sglang.launch_server"
    router_module: str = "sglang_router.launch_router"
    bench_module: str = "sglang.bench_serving"
    healthcheck: ExpandableText = "/v1/models"
    prefill: SglangRole | None = None  # pyright: ignore[reportIncompatibleVariableOverride]
    decode: SglangRole = Field(default_factory=SglangRole)  # pyright: ignore[reportIncompatibleVariableOverride]
    bench_cmd_args: SglangBenchArgs = Field(default_factory=SglangBenchArgs)
    semantic_eval_cmd_args: SglangSemanticEvalArgs | None = None


class Sglang(ServingWorkload):
    name = "sglang"
    args_model = SglangArgs
    slug = "sglang"
    title = "SGLang"
    default_metric = "request_throughput"

    def serve_argv(self, args: ServingArgs, role: Role, disaggregated: bool) -> list[str]:
        assert isinstance(args, SglangArgs)
        argv = ["python3", "-m", args.serve_module, "--model-path", args.model, "--host", args.host]
        argv += ["--port", str(role.port)]
        chosen = args.prefill if role.name == "prefill" else args.decode
        assert chosen is not None
        if disaggregated:
            argv += ["--disaggregation-mode", role.name]
            argv += ["--disaggregation-transfer-backend", chosen.disaggregation_transfer_backend]
        return [*argv, *chosen.serve_flags()]

    def role_env(self, args: ServingArgs, role: Role, disaggregated: bool) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, role.gpus))}  # aggregated too, unlike vLLM

    def preamble(self, args: ServingArgs, servers: Sequence[Role], job: JobContext) -> list[str]:
        if not any(r.num_nodes > 1 for r in servers):
            return []
        if len(servers) == 1:
            return ["export SERVE_DIST_INIT_PORT=$((20000 + PORT_OFFSET))"]
        return ["export PREFILL_DIST_INIT_PORT=$((20000 + PORT_OFFSET))",
                "export DECODE_DIST_INIT_PORT=$((21000 + PORT_OFFSET))"]  # fmt: skip

    def multi_node(self, args: ServingArgs, role: Role, argv: list[str]) -> list[Step]:
        head = "SERVE_NODE" if role.name == "serve" else role.host
        dist = f'--dist-init-addr "${{{head}}}:${{{role.name.upper()}_DIST_INIT_PORT}}"'
        script = f'exec {inner(argv)} {dist} --nnodes {role.num_nodes} --node-rank "$SLURM_PROCID"'
        n = role.num_nodes
        log = f"sglang-{role.name}.log"
        return [Run(("bash", "-c", script), role.name, True, log, n, 1, num_nodes=n, node=role.first_node)]

    def router_argv(self, args: ServingArgs, prefill: Role, decode: Role) -> list[str]:
        assert isinstance(args, SglangArgs)
        return ["python3", "-m", args.router_module, "--pd-disaggregation",
                "--prefill", Var(f"http://{prefill.host_ref}:{prefill.port}"),
                "--decode", Var(f"http://{decode.host_ref}:{decode.port}"),
                "--host", args.host, "--port", str(args.port)]  # fmt: skip

    def bench_argv(self, args: ServingArgs, job: JobContext) -> list[str]:
        assert isinstance(args, SglangArgs)
        bench = args.bench_cmd_args
        argv = ["python3", "-m", args.bench_module, "--backend", bench.backend,
                "--base-url", Var(f"http://{bench_host(args)}:{args.port}"), "--model", args.model,
                "--dataset-name", bench.dataset_name, "--num-prompts", str(bench.num_prompts),
                "--max-concurrency", str(bench.max_concurrency), "--random-input", str(bench.random_input),
                "--random-output", str(bench.random_output), "--warmup-requests", str(bench.warmup_requests),
                "--random-range-ratio", str(bench.random_range_ratio),
                "--output-file", str(job.job_dir.absolute() / BENCH_JSONL)]  # fmt: skip
        for key, value in (bench.model_extra or {}).items():
            argv += [f"--{key.replace('_', '-')}", *([] if value == "" else [str(value)])]
        if bench.output_details:
            argv.append("--output-details")
        if args.prefill is not None:
            argv.append("--pd-separated")
        return argv

    def semantic_eval_argv(self, args: Mapping[str, Any], job: JobContext) -> list[str] | None:
        model = SglangArgs.model_validate(args)
        evaluation = model.semantic_eval_cmd_args
        if evaluation is None:
            return None
        return words(f"{evaluation.entrypoint} {fill(evaluation.cli, model, bench_host(model), job)}")

    def accuracy(self, job_dir: Path) -> float | None:
        return accuracy(read_text(job_dir / SEMANTIC_LOG), "Score|Accuracy")

    def result(self, job_dir: Path) -> BenchResult:
        text = read_text(job_dir / BENCH_JSONL)
        if text is not None and text.strip():
            return from_json(last_json_line(text, BENCH_JSONL), BENCH_JSONL)
        log = read_text(job_dir / BENCH_LOG)
        if log is None:
            raise WorkloadError(f"neither {BENCH_JSONL} nor {BENCH_LOG} was written: sglang.bench_serving did not run")
        return from_block(log, BENCH_LOG)
