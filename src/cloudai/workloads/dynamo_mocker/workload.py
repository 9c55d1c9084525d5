"""``DynamoMocker``: what CloudAI's ``dynamo_mocker.sh`` runs, as the steps of one standalone job.

::

    <nats_cmd> -p 4222 -m 8222 &                              wait http://localhost:8222/healthz
    combined:  python -m dynamo.mocker --model-path M --num-workers N --speedup-ratio R --block-size B
               --num-gpu-blocks-override G --enable-prefix-caching --discovery-backend file --request-plane tcp &
    or disaggregated: prefill and decode mockers (``--disaggregation-mode prefill|decode``, ``--num-workers 1``,
               ``--kv-transfer-bandwidth``), each waited for on its ready line
    python -m dynamo.frontend --http-port P --router-mode kv|round-robin --discovery-backend file
               --request-plane tcp [--no-router-kv-events] &     wait until /v1/models lists a model
    aiperf profile --model M --url localhost:P --endpoint-type chat --streaming --artifact-dir <job>/aiperf_artifacts
               --no-server-metrics --synthetic-input-tokens-mean I --output-tokens-mean O --request-count N
               --concurrency C                       (or genai-perf profile ... as CloudAI's genai_perf.sh runs it)

``python`` is the ``dynamo-mocker`` environment ``cloudai install`` creates under the system's ``install_path``
(ai-dynamo, aiperf, genai-perf, pinned). The client's CSV export is copied to ``benchmark_report.csv`` (CloudAI's
name) and read by ``cloudai.workloads.profile_export``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cloudai.installables import PythonEnv
from cloudai.steps import Run, Shell, Step, WaitHttp
from cloudai.workloads import profile_export
from cloudai.workloads.base import JobContext, Workload, write_metrics
from cloudai.workloads.dynamo_mocker.args import DynamoMockerArgs, WorkerInstance

ENV = PythonEnv("dynamo-mocker", ("ai-dynamo==1.6.1", "aiperf==0.13.0", "genai-perf==0.0.16"))
REPORT = "benchmark_report.csv"
_NATS_MONITOR = 8222


def extra_flags(extra: Mapping[str, Any] | None) -> list[str]:
    """CloudAI's pass-through: ``key_name = v`` -> ``--key-name v``; true: a bare flag; false: left out."""
    words: list[str] = []
    for key, value in (extra or {}).items():
        flag = f"--{key.replace('_', '-')}"
        if value is True or value is False:
            words += [flag] if value else []
        else:
            words += [flag, str(value)]
    return words


def _python(job: JobContext) -> str:
    return str(ENV.python(job.install_path)) if job.install_path else "python3"


def _engine(model: DynamoMockerArgs) -> list[str]:
    e = model.engine
    caching = "--enable-prefix-caching" if e.enable_prefix_caching else "--no-enable-prefix-caching"
    return ["--model-path", model.model_path, "--speedup-ratio", str(e.speedup_ratio), "--block-size",
            str(e.block_size), "--num-gpu-blocks-override", str(e.num_gpu_blocks_override), caching]  # fmt: skip


def mockers(model: DynamoMockerArgs, python: str) -> list[Run]:
    common = ["--discovery-backend", "file", "--request-plane", "tcp"]
    extras = extra_flags(model.engine.model_extra) + extra_flags(model.worker.model_extra)
    w = model.worker
    if w.disaggregation_mode == "none":
        argv = [python, "-m", "dynamo.mocker", *_engine(model)]
        argv[4:4] = ["--num-workers", str(w.num_workers)]
        return [Run((*argv, *common, *extras), name="mocker", background=True, output="dynamo_mocker_combined.log")]
    runs = []
    for role, inst in (("prefill", w.prefill_worker), ("decode", w.decode_worker)):
        cmd = shlex.split(inst.cmd) or [python, "-m", "dynamo.mocker", "--disaggregation-mode", role]
        engine = _engine(model)
        argv = [*cmd, *engine[:2], "--num-workers", "1", *engine[2:]]
        argv += ["--kv-transfer-bandwidth", str(model.engine.kv_transfer_bandwidth), *common, *extras]
        argv += extra_flags(inst.args.model_extra) + shlex.split(inst.extra_args or "")
        runs += [Run(tuple(argv), name=f"{role}_{i}", background=True, output=f"dynamo_{role}_{i}.log")
                 for i in range(inst.num_nodes)]  # fmt: skip
    return runs


def ready_wait(model: DynamoMockerArgs, runs: Sequence[Run]) -> str:
    """Wait for each disaggregated mocker's ready line (a mocker that exits first ends the job)."""
    roles: dict[str, WorkerInstance] = {"prefill": model.worker.prefill_worker, "decode": model.worker.decode_worker}
    lines = ["cloudai_wait_ready() {  # LOG REGEX PID NAME",
             '    until grep -qE -- "$2" "$1" 2>/dev/null; do',
             '        kill -0 "$3" 2>/dev/null || { echo "cloudai: $4 exited before it was ready" >&2; return 1; }',
             "        sleep 1", "    done", "}"]  # fmt: skip
    for run in runs:
        regex = roles[(run.name or "").split("_")[0]].worker_initialized_regex
        lines.append(f'cloudai_wait_ready {run.output} {shlex.quote(regex)} "${run.pid_var}" {run.name} || exit 1')
    return "\n".join(lines)


def frontend(model: DynamoMockerArgs, python: str) -> Run:
    mode = {"kv_router": "kv", "round_robin": "round-robin"}[model.frontend.router_mode]
    argv = [python, "-m", "dynamo.frontend", "--http-port", str(model.frontend.http_port), "--router-mode", mode]
    argv += ["--discovery-backend", "file", "--request-plane", "tcp"] + (
        ["--no-router-kv-events"] if mode == "kv" else []
    )
    return Run((*argv, *extra_flags(model.frontend.model_extra)), name="frontend", background=True,
               output="dynamo_frontend.log")  # fmt: skip


def model_wait(port: int) -> str:
    """Wait (300 s) until the frontend lists a model: a worker has registered (CloudAI's wait_for_model)."""
    url = f"http://localhost:{port}/v1/models"
    return (f"for _ in $(seq 1 300); do curl -sf {url} 2>/dev/null | grep -q '\"id\"' && break; sleep 1; done\n"
            f"curl -sf {url} 2>/dev/null | grep -q '\"id\"' || {{ echo 'cloudai: no model registered at {url}' >&2; "
            "exit 1; }")  # fmt: skip


def benchmark(model: DynamoMockerArgs, job: JobContext) -> list[Step]:
    b, job_dir, port = model.bench, job.job_dir.absolute(), model.frontend.http_port
    load = ["--request-rate" if b.replay_mode == "online" else "--concurrency", str(b.replay_concurrency)]
    tool = "aiperf" if model.benchmark_tool == "aiperf" else "genai-perf"
    binary = shlex.split(b.cmd) or [str(Path(_python(job)).parent / tool) if job.install_path else tool]
    extras = extra_flags(b.model_extra) + shlex.split(b.extra_args or "")
    if tool == "aiperf":
        art = job_dir / "aiperf_artifacts"
        argv = [*binary, "profile", "--model", model.model_path, "--url", f"localhost:{port}", "--endpoint-type",
                "chat", "--streaming", "--artifact-dir", str(art), "--no-server-metrics",
                "--synthetic-input-tokens-mean", str(b.input_tokens), "--output-tokens-mean", str(b.output_tokens),
                "--request-count", str(b.request_count), *load, *extras]  # fmt: skip
        pattern = "*aiperf*.csv"
    else:
        art = job_dir / "genai_perf_artifacts"
        argv = [*binary, "profile", "--model", model.model_path, "--url", f"http://localhost:{port}", "--artifact-dir",
                str(art), "--profile-export-file", "profile.json", *load, "--request-count", str(b.request_count),
                "--synthetic-input-tokens-mean", str(b.input_tokens), "--output-tokens-mean", str(b.output_tokens),
                "--endpoint-type", "chat", *extras]  # fmt: skip
        pattern = "profile_genai_perf.csv"
    copy = (f"report=$(find {shlex.quote(str(art))} -name {shlex.quote(pattern)} -print -quit)\n"
            f'[ -n "$report" ] && cp "$report" {shlex.quote(str(job_dir / REPORT))}')  # fmt: skip
    return [Run(tuple(argv), name="benchmark", output=f"{model.benchmark_tool}.log"), Shell(copy)]


class DynamoMocker(Workload):
    name = "DynamoMocker"
    args_model = DynamoMockerArgs
    produces_metrics = True
    metrics = profile_export.METRICS
    units = profile_export.UNITS

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        run = benchmark(DynamoMockerArgs.model_validate(args), job)[0]
        return list(run.argv) if isinstance(run, Run) else []

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        model, python = DynamoMockerArgs.model_validate(args), _python(job)
        nats = Run((*shlex.split(model.nats_cmd), "-p", "4222", "-m", str(_NATS_MONITOR)), name="nats",
                   background=True, output="nats.log")  # fmt: skip
        workers = mockers(model, python)
        disagg = model.worker.disaggregation_mode != "none"
        steps: list[Step] = [nats, WaitHttp(f"http://localhost:{_NATS_MONITOR}/healthz", 30, 1), *workers]
        steps += [Shell(ready_wait(model, workers))] if disagg else []
        steps += [frontend(model, python), Shell(model_wait(model.frontend.http_port))]
        return [*steps, *benchmark(model, job)]

    def installables(self, args: Mapping[str, Any]) -> Sequence[PythonEnv]:
        return (ENV,)

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        return write_metrics(job_dir, profile_export.read_profile(job_dir / REPORT, "the mocker's benchmark"))
