"""``ServingWorkload``: an LLM server benchmarked by its client, as the steps of one job (``cloudai.steps``).

The job CloudAI's ``vllm`` and ``sglang`` scripts run, system-agnostic: name the nodes, start the server(s) in
the background, wait until each answers its health URL, (disaggregated) start the router and wait for it, run
the benchmark client, then the optional semantic evaluation. A subclass supplies the tool's commands (serve,
router, bench, multi-node launch); this class supplies the order, the placement, the logs and the results.

Shell variables the steps define (CloudAI's names, so the commands read as CloudAI's): ``NODE`` (aggregated),
``PREFILL_NODE``/``DECODE_NODE`` (disaggregated), ``SERVE_NODE`` (aggregated on several nodes) and
``PORT_OFFSET`` (``$SLURM_JOB_ID % 1000``, 0 elsewhere) for the ports a subclass derives from it.
"""

from __future__ import annotations

import shlex
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from cloudai.errors import WorkloadError
from cloudai.steps import Run, Shell, Step, Var, WaitHttp, var_safe
from cloudai.workloads.base import ONE_NODE, JobContext, LatencyCharts, Resources, Workload, write_metrics
from cloudai.workloads.serving.args import Role, ServingArgs, roles, used_gpus
from cloudai.workloads.serving.results import (
    GPUS_FILE,
    SERVING_METRICS,
    SERVING_UNITS,
    BenchResult,
    last_error_line,
    serving_metrics,
)

HF_CACHE = "/root/.cache/huggingface"  # where CloudAI mounts the system's hf_home_path in a vLLM / SGLang image
POLL_S = 1  # how often a health URL is tried (CloudAI: every 5 s; a curl a second costs nothing and saves 4 s)


def words(text: str) -> list[str]:
    """A command CloudAI writes as text, as argv words: those holding ``$`` stay for the batch shell to expand."""
    return [Var(word) if "$" in word and var_safe(word) else word for word in shlex.split(text)]


class ServingWorkload(Workload):
    """Server(s), health waits and a benchmark client; subclasses give the tool's commands and result parser."""

    args_model = ServingArgs
    slug: ClassVar[str]  # log-file prefix, as CloudAI names them: vllm-serve.log, sglang-bench.log, ...
    title: ClassVar[str]  # for the script's echo lines: "vLLM", "SGLang"
    produces_metrics = True
    noisy = True
    metrics = SERVING_METRICS
    units = SERVING_UNITS
    latency_charts = LatencyCharts(  # TTFT, TPOT and ITL against output tokens/s in the report
        "output_throughput",
        tuple(tuple(f"{stat}_{kind}_ms" for stat in ("mean", "median", "p99")) for kind in ("ttft", "tpot", "itl")),
    )

    # --- what a subclass supplies -------------------------------------------------------------------------------

    @abstractmethod
    def serve_argv(self, args: ServingArgs, role: Role, disaggregated: bool) -> list[str]: ...

    @abstractmethod
    def router_argv(self, args: ServingArgs, prefill: Role, decode: Role) -> list[str]: ...

    @abstractmethod
    def bench_argv(self, args: ServingArgs, job: JobContext) -> list[str]: ...

    default_metric: ClassVar[str]  # CloudAI's throughput for this tool: what ``default`` is

    @abstractmethod
    def result(self, job_dir: Path) -> BenchResult:
        """The client's result (``results.from_json``/``from_block``); ``WorkloadError`` when there is none."""

    def accuracy(self, job_dir: Path) -> float | None:
        """The semantic evaluation's score, when one ran."""
        return None

    def role_env(self, args: ServingArgs, role: Role, disaggregated: bool) -> dict[str, str]:
        """Variables ``env`` sets for one server (CloudAI: the role's GPUs when disaggregated)."""
        return {"CUDA_VISIBLE_DEVICES": ",".join(map(str, role.gpus))} if disaggregated else {}

    def multi_node(self, args: ServingArgs, role: Role, argv: list[str]) -> list[Step]:
        """The steps that start one server over several nodes (vLLM: a Ray cluster; SGLang: one task per node)."""
        raise NotImplementedError(f"{self.name} serves on one node per role")

    def preamble(self, args: ServingArgs, servers: Sequence[Role], job: JobContext) -> list[str]:
        """Shell lines before the servers start (ports derived from ``PORT_OFFSET``)."""
        return []

    def serve_health(self, args: ServingArgs, role: Role) -> str:
        if args.serve_healthcheck:
            return args.serve_healthcheck
        return "/health" if role.name in ("prefill", "decode") else args.healthcheck

    def router_health(self, args: ServingArgs) -> str:
        return args.healthcheck

    def semantic_eval_argv(self, args: Mapping[str, Any], job: JobContext) -> list[str] | None:
        return None

    # --- the contract ------------------------------------------------------------------------------------------

    def model(self, args: Mapping[str, Any]) -> ServingArgs:
        assert self.args_model is not None and issubclass(self.args_model, ServingArgs)
        return self.args_model.model_validate(args)

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        return self.bench_argv(self.model(args), job)

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return self.model(args).docker_image_url or None

    def ntasks(self, args: Mapping[str, Any]) -> int | None:
        return 1

    def container_mounts(self, args: Mapping[str, Any], job: JobContext) -> Sequence[str]:
        """CloudAI's Hugging Face cache mount: the weights are downloaded once per system, not once per job."""
        return [f"{job.hf_home}:{HF_CACHE}"] if job.hf_home else []

    def container_env(self, args: Mapping[str, Any], job: JobContext) -> Mapping[str, str]:
        """``HF_HOME`` at the mount: the cache is ``/root/.cache/huggingface`` only for root, and pyxis runs the
        image as the submitting user."""
        return {"HF_HOME": HF_CACHE} if job.hf_home else {}

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        """CloudAI's rules before any trial: role node counts that add up to the job's nodes, and (vLLM)
        ``tp * pp * dp`` within each role's GPUs."""
        model = self.model(args)
        try:
            servers = roles(model, resources.num_nodes, {}, resources.gpus_per_node)
        except WorkloadError as exc:
            return str(exc)
        for role in servers:
            reason = self.role_constraint(model, role, resources)
            if reason:
                return reason
        return None

    def role_constraint(self, args: ServingArgs, role: Role, resources: Resources) -> str | None:
        return None

    def servers(self, args: ServingArgs, job: JobContext) -> list[Role]:
        return roles(args, job.num_nodes, job.env, job.gpus_per_node)

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        model = self.model(args)
        servers = self.servers(model, job)
        first = servers[0]
        gpus = used_gpus(model, job.num_nodes, job.env, job.gpus_per_node)
        setup = [f"echo {gpus} > {GPUS_FILE}", "export PORT_OFFSET=$((${SLURM_JOB_ID:-0} % 1000))"]
        setup += [f"mkdir -p {shlex.quote(str(job.hf_home))}"] if job.hf_home else []  # a mount's source must exist
        setup += _node_lines(servers) + self.preamble(model, servers, job)
        steps: list[Step] = [Shell("\n".join(setup)), Shell(f'echo "Starting {self.title} instances..."')]
        disaggregated = len(servers) > 1
        for role in servers:
            steps += self._start(model, role, disaggregated)
        for role in servers:
            url = Var(f"http://{role.host_ref}:{role.port}{self.serve_health(model, role)}")
            steps.append(WaitHttp(url, model.serve_wait_seconds, POLL_S))
        if disaggregated:
            steps.append(Shell('echo "Starting router..."'))
            steps.append(self._run(self.router_argv(model, *servers), first, "helper", f"{self.slug}-router.log"))
            health = Var(f"http://{first.host_ref}:{model.port}{self.router_health(model)}")
            steps.append(WaitHttp(health, model.serve_wait_seconds, POLL_S))
        steps.append(Shell('echo "Running benchmark..."'))
        steps.append(self._run(self.bench_argv(model, job), first, None, f"{self.slug}-bench.log"))
        semantic = self.semantic_eval_argv(args, job)
        if semantic:
            steps.append(Shell('echo "Running semantic validation..."'))
            steps.append(self._run(semantic, first, None, f"{self.slug}-semantic-eval.log"))
        return steps

    def _start(self, args: ServingArgs, role: Role, disaggregated: bool) -> list[Step]:
        env = self.role_env(args, role, disaggregated)
        argv = self.serve_argv(args, role, disaggregated)
        if env:
            argv = ["env", *(_assignment(k, v) for k, v in env.items()), *argv]
        if role.num_nodes > 1:
            return self.multi_node(args, role, argv)
        log = f"{self.slug}-{role.name}.log"
        return [self._run(argv, role, role.name, log)]

    def _run(self, argv: Sequence[str], role: Role, name: str | None, output: str) -> Run:
        """One task on the role's (first) node; named steps run in the background (servers, the router)."""
        return Run(tuple(argv), name, name is not None, output, ntasks=1, ntasks_per_node=1, node=role.first_node)

    def default_means(self, cmd_args: Mapping[str, Any]) -> str | None:
        return self.default_metric

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        metrics = serving_metrics(self.result(job_dir), self.default_metric, job_dir)
        score = self.accuracy(job_dir)
        if score is not None:
            metrics["accuracy"] = score
        return write_metrics(job_dir, metrics)

    def failure_reason(self, job_dir: Path) -> str | None:
        names = ("bench", "router", "serve", "prefill", "decode", "semantic-eval")
        return last_error_line([job_dir / f"{self.slug}-{name}.log" for name in names])


def bench_host(args: ServingArgs) -> str:
    """Where the client reaches the server: ``bench_host``, else the (prefill) node, as CloudAI does."""
    return args.bench_host or ("${PREFILL_NODE}" if args.prefill is not None else "${NODE}")


def fill(cli: str, args: ServingArgs, host: str, job: JobContext) -> str:
    """CloudAI's placeholders of a semantic evaluation's ``cli``."""
    out = str(job.job_dir.absolute())
    values = {"{model}": args.model, "{host}": host, "{port}": str(args.port), "{url}": f"{host}:{args.port}",
              "{output_path}": out, "{result_dir}": out}  # fmt: skip
    for placeholder, value in values.items():
        cli = cli.replace(placeholder, value)
    return cli


def inner(argv: list[str]) -> str:
    """``argv`` as text for a ``bash -c`` script: ``Var`` words in double quotes (the task's shell expands them)."""
    return " ".join(f'"{w}"' if isinstance(w, Var) else shlex.quote(w) for w in argv)


def _assignment(name: str, value: str) -> str:
    text = f"{name}={value}"
    return Var(text) if "$" in value and var_safe(text) else text


def _node_lines(servers: Sequence[Role]) -> list[str]:
    """``NODE``/``SERVE_NODE`` or ``PREFILL_NODE``/``DECODE_NODE`` from the job's node list (``CLOUDAI_NODES``)."""
    if len(servers) == 1:
        lines = ["export NODE=${CLOUDAI_NODES[0]}"]
        return [*lines, "export SERVE_NODE=$NODE"] if servers[0].num_nodes > 1 else lines
    prefill, decode = servers
    return [
        f"export PREFILL_NODE=${{CLOUDAI_NODES[{prefill.first_node}]}}",
        f"export DECODE_NODE=${{CLOUDAI_NODES[{decode.first_node}]}}",
        'echo "Node roles: prefill=$PREFILL_NODE decode=$DECODE_NODE"',
    ]
