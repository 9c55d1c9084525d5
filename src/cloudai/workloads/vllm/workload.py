"""``vllm``: CloudAI's vLLM workload, its files unchanged. One job (``cloudai.workloads.serving``)::

    vllm serve MODEL --host 0.0.0.0 [decode flags] --port 8300                  # aggregated, in the background
    wait for http://${NODE}:8300/healthcheck
    vllm bench serve --model MODEL --base-url http://${NODE}:8300 --random-input-len 16 --random-output-len 128
        --max-concurrency 16 --num-prompts 30 --result-dir JOB --result-filename vllm-bench.json --save-result

Disaggregated (``[cmd_args.prefill]``): a prefill (``kv_producer``, port+100) and a decode server (``kv_consumer``,
port+200) exchanging KV over NIXL, behind CloudAI's ``proxy_script`` (port). A role on several nodes runs as a
Ray cluster (one worker per extra node, the head execs ``vllm serve --distributed-executor-backend ray``).
``default`` is the output token throughput (tok/s), as CloudAI's report has it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from cloudai.config.fields import ExpandableText
from cloudai.errors import WorkloadError
from cloudai.steps import Step, Var
from cloudai.workloads.base import JobContext, Resources
from cloudai.workloads.serving.args import Role, RoleArgs, ServingArgs, all_gpu_ids
from cloudai.workloads.serving.results import BenchResult, accuracy, from_block, from_json, read_text
from cloudai.workloads.serving.workload import ServingWorkload, bench_host, fill, words
from cloudai.workloads.vllm.ray import RayStartArgs, ray_steps

BENCH_JSON = "vllm-bench.json"
BENCH_LOG = "vllm-bench.log"
GSM8K_JSON = "vllm-gsm8k.json"
SEMANTIC_LOG = "vllm-semantic-eval.log"


class VllmRole(RoleArgs):
    CONSUMED: ClassVar[frozenset[str]] = frozenset({"gpu_ids", "num_nodes", "ray_head", "ray_worker", "nixl_threads"})

    ray_head: RayStartArgs | None = None
    ray_worker: RayStartArgs | None = None
    nixl_threads: int | None = None

    def flag(self, key: str, value: Any) -> list[str]:
        if isinstance(value, bool):  # vLLM's own boolean flags: --enforce-eager / --no-enforce-eager
            return [f"--{key.replace('_', '-')}"] if value else [f"--no-{key.replace('_', '-')}"]
        return super().flag(key, value)


class VllmBenchArgs(BaseModel):
    """CloudAI's ``bench_cmd_args`` (a table of the test file); other keys become ``--key value`` flags."""

    model_config = ConfigDict(extra="allow")

    random_input_len: int = 16
    random_output_len: int = 128
    max_concurrency: int = 16
    num_prompts: int = 30


class SemanticEvalArgs(BaseModel):
    """CloudAI's ``semantic_eval_cmd_args``: a command run after the benchmark; ``{host}``, ``{port}``,
    ``{url}``, ``{model}``, ``{output_path}`` in ``cli`` are filled in."""

    model_config = ConfigDict(extra="forbid")

    entrypoint: str = "python3 /opt/vllm/tests/evals/gsm8k/gsm8k_eval.py"
    cli: str = "--host {host} --port {port} --num-questions 200 --save-results {output_path}/vllm-gsm8k.json"


class VllmArgs(ServingArgs):
    model: str = "Qwen/Qwen3-0.6B"
    proxy_script: str = "/opt/vllm/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py"
    healthcheck: ExpandableText = "/healthcheck"
    proxy_healthcheck: ExpandableText = "/healthcheck"
    prefill: VllmRole | None = None  # pyright: ignore[reportIncompatibleVariableOverride]
    decode: VllmRole = Field(default_factory=VllmRole)  # pyright: ignore[reportIncompatibleVariableOverride]
    bench_cmd_args: VllmBenchArgs = Field(default_factory=VllmBenchArgs)
    semantic_eval_cmd_args: SemanticEvalArgs | None = None


class Vllm(ServingWorkload):
    name = "vllm"
    args_model = VllmArgs
    slug = "vllm"
    title = "vLLM"
    default_metric = "output_throughput"

    def role_constraint(self, args: ServingArgs, role: Role, resources: Resources) -> str | None:
        """CloudAI's vLLM rule: tensor x pipeline x data parallel sizes fit the role's GPUs (on all its nodes)."""
        if resources.gpus_per_node is None and not _role(args, role).gpu_ids:
            return None  # the system does not say how many GPUs a node has
        extra = _role(args, role).model_extra or {}
        sizes = [extra.get(f"{kind}_parallel_size", 1) for kind in ("tensor", "pipeline", "data")]
        if not all(isinstance(n, int) for n in sizes):
            return None
        gpus = len(role.gpus) * role.num_nodes
        if sizes[0] * sizes[1] * sizes[2] > gpus:
            tp, pp, dp = sizes
            return f"vLLM {role.name}: tp*pp*dp = {tp}*{pp}*{dp} exceeds its {gpus} GPUs"
        return None

    def serve_argv(self, args: ServingArgs, role: Role, disaggregated: bool) -> list[str]:
        base = ["vllm", "serve", args.model, "--host", args.host]
        flags = _role(args, role).serve_flags()
        if not disaggregated:
            argv = [*base, *flags, "--port", str(role.port)]
        else:
            kv: dict[str, Any] = {"kv_connector": "NixlConnector"}
            kv["kv_role"] = "kv_producer" if role.name == "prefill" else "kv_consumer"
            threads = _role(args, role).nixl_threads
            if threads is not None:
                kv["kv_connector_extra_config"] = {"num_threads": threads}
            argv = [*base, "--port", str(role.port), "--kv-transfer-config", json.dumps(kv, separators=(",", ":"))]
            argv += flags
        if role.num_nodes > 1 and "--distributed-executor-backend" not in argv:
            argv += ["--distributed-executor-backend", "ray"]
        return argv

    def role_env(self, args: ServingArgs, role: Role, disaggregated: bool) -> dict[str, str]:
        env = super().role_env(args, role, disaggregated)
        if disaggregated:
            env["VLLM_NIXL_SIDE_CHANNEL_HOST"] = role.host_ref
            env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = f"${role.name.upper()}_NIXL_PORT"
        return env

    def preamble(self, args: ServingArgs, servers: Sequence[Role], job: JobContext) -> list[str]:
        if len(servers) == 1:
            return ["export SERVE_RAY_PORT=$((6379 + PORT_OFFSET))"] if servers[0].num_nodes > 1 else []
        count = len(all_gpu_ids(args, job.env, job.gpus_per_node))
        lines = ["export PREFILL_NIXL_PORT=$((5557 + PORT_OFFSET))"]
        lines.append(f"export DECODE_NIXL_PORT=$((5557 + PORT_OFFSET + {count}))")
        if any(r.num_nodes > 1 for r in servers):
            lines += [
                "export PREFILL_RAY_PORT=$((6379 + PORT_OFFSET))",
                "export DECODE_RAY_PORT=$((7379 + PORT_OFFSET))",
            ]
        return lines

    def router_health(self, args: ServingArgs) -> str:
        assert isinstance(args, VllmArgs)
        chosen = args.model_fields_set
        return (
            args.healthcheck
            if "proxy_healthcheck" not in chosen and "healthcheck" in chosen
            else args.proxy_healthcheck
        )

    def router_argv(self, args: ServingArgs, prefill: Role, decode: Role) -> list[str]:
        assert isinstance(args, VllmArgs)
        return ["python3", args.proxy_script, "--host", args.host, "--port", str(args.port),
                "--prefiller-hosts", Var(prefill.host_ref), "--prefiller-ports", str(prefill.port),
                "--decoder-hosts", Var(decode.host_ref), "--decoder-ports", str(decode.port)]  # fmt: skip

    def bench_argv(self, args: ServingArgs, job: JobContext) -> list[str]:
        assert isinstance(args, VllmArgs)
        bench = args.bench_cmd_args
        argv = ["vllm", "bench", "serve", "--model", args.model, "--base-url", Var(f"http://{bench_host(args)}:{args.port}"),
                "--random-input-len", str(bench.random_input_len), "--random-output-len", str(bench.random_output_len),
                "--max-concurrency", str(bench.max_concurrency), "--num-prompts", str(bench.num_prompts),
                "--result-dir", str(job.job_dir.absolute()),
                "--result-filename", BENCH_JSON, "--save-result"]  # fmt: skip
        for key, value in (bench.model_extra or {}).items():
            argv += [f"--{key.replace('_', '-')}", *([] if value == "" else [str(value)])]
        return argv

    def semantic_eval_argv(self, args: Mapping[str, Any], job: JobContext) -> list[str] | None:
        model = VllmArgs.model_validate(args)
        evaluation = model.semantic_eval_cmd_args
        if evaluation is None:
            return None
        host = bench_host(model)
        host = host if host.startswith(("http://", "https://")) else f"http://{host}"
        return words(f"{evaluation.entrypoint} {fill(evaluation.cli, model, host, job)}")

    def multi_node(self, args: ServingArgs, role: Role, argv: list[str]) -> list[Step]:
        chosen = _role(args, role)
        return ray_steps(chosen.ray_head, chosen.ray_worker, role, argv, args.serve_wait_seconds)

    def accuracy(self, job_dir: Path) -> float | None:
        return semantic_accuracy(job_dir)

    def result(self, job_dir: Path) -> BenchResult:
        text = read_text(job_dir / BENCH_JSON)
        if text is None:
            return from_block(_bench_log(job_dir), BENCH_LOG)
        try:
            data = json.loads(text)
        except ValueError:
            return from_block(_bench_log(job_dir), f"{BENCH_LOG} ({BENCH_JSON} is not valid JSON)")
        return from_json(data, BENCH_JSON)


def _bench_log(job_dir: Path) -> str:
    text = read_text(job_dir / BENCH_LOG)
    if text is None:
        raise WorkloadError(f"neither {BENCH_JSON} nor {BENCH_LOG} was written: vllm bench serve did not run")
    return text


def semantic_accuracy(job_dir: Path) -> float | None:
    """The gsm8k evaluation's accuracy: its JSON result, else its log's ``Accuracy:`` line."""
    text = read_text(job_dir / GSM8K_JSON)
    if text is not None:
        try:
            value = json.loads(text).get("accuracy")
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
        except (ValueError, AttributeError):
            pass
    return accuracy(read_text(job_dir / SEMANTIC_LOG))


def _role(args: ServingArgs, role: Role) -> VllmRole:
    chosen = args.prefill if role.name == "prefill" else args.decode
    assert isinstance(chosen, VllmRole)
    return chosen
