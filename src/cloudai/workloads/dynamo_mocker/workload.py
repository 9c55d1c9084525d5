"""``DynamoMocker``: what CloudAI's ``dynamo_mocker.sh`` runs, as the steps of one standalone job.

::

    export HOME=<job>/dynamo-home DYN_FILE_KV=<job>/dynamo-kv DYN_DISCOVERY_BACKEND=file ...     (see ``setup``)
    CLOUDAI_HTTP_PORT=<a free port>
    combined:  python -m dynamo.mocker --model-path M --num-workers N --speedup-ratio R --block-size B
               --num-gpu-blocks-override G --enable-prefix-caching --discovery-backend file --request-plane tcp &
    or disaggregated: prefill and decode mockers (``--disaggregation-mode prefill|decode``, ``--num-workers 1``,
               ``--kv-transfer-bandwidth``), each waited for on its ready line
    python -m dynamo.frontend --http-port $CLOUDAI_HTTP_PORT --router-mode kv|round-robin --discovery-backend file
               --request-plane tcp [--no-router-kv-events] &     wait until /v1/models lists a model
               (disaggregated: and until the frontend logs "Prefill router target activated")
    aiperf profile --model M --url localhost:$CLOUDAI_HTTP_PORT --endpoint-type chat --streaming --artifact-dir
               <job>/aiperf_artifacts --no-server-metrics --synthetic-input-tokens-mean I --output-tokens-mean O
               --request-count N --concurrency C     (or genai-perf profile ... as CloudAI's genai_perf.sh runs it)

``python`` is ``stack.ENV``, the environment ``cloudai install`` creates under the system's ``install_path``.
The client's CSV export of the profiling phase (not a warmup phase's) is copied to ``benchmark_report.csv``
(CloudAI's name) and read by ``cloudai.workloads.profile_export``.

Where cloudai differs from CloudAI on purpose, so that trials can run side by side on one machine: no NATS
server (Dynamo 1.6 runs on file discovery, the tcp request plane and the zmq event plane; ``nats_cmd`` is
accepted and not run: CloudAI's would listen on the fixed ports 4222 and 8222), the frontend listens on a port
free when the trial starts (``frontend.http_port`` is not used), and each trial has its own ``HOME`` (Dynamo
caches model cards under ``$HOME/.cache/dynamo``) and discovery dir. Every other port is the OS's choice.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cloudai.installables import Installable
from cloudai.steps import Run, Shell, Step, Var
from cloudai.workloads import profile_export
from cloudai.workloads.base import JobContext, Workload, write_metrics
from cloudai.workloads.dynamo_mocker.args import DynamoMockerArgs, WorkerInstance
from cloudai.workloads.dynamo_mocker.stack import ENV, TINY_MODEL, wants_tiny_model

REPORT = "benchmark_report.csv"
PORT = "CLOUDAI_HTTP_PORT"  # the frontend's port, chosen free when the trial starts


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


def model_path(model: DynamoMockerArgs) -> str:
    """A local model dir (``./install/dynamo-tiny-model``, an existing dir) as an absolute path, the same word for
    the mockers, the frontend's model list and the client; else a hub name, as given."""
    path = Path(model.model_path)
    local = model.model_path.startswith(("./", "../", "/")) or path.is_dir()
    return str(path.absolute()) if local else model.model_path


def setup(job: JobContext) -> str:
    """Each trial its own ``HOME`` and discovery dir, loopback for Dynamo's planes, a free frontend port; the
    Hugging Face cache stays where it was (the system's ``hf_home_path``, else the user's)."""
    job_dir = shlex.quote(str(job.job_dir.absolute()))
    hf_home = shlex.quote(str(job.hf_home)) if job.hf_home else '"${HF_HOME:-$HOME/.cache/huggingface}"'
    pick = "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
    return "\n".join([
        f"export HF_HOME={hf_home}",
        f"export HOME={job_dir}/dynamo-home DYN_FILE_KV={job_dir}/dynamo-kv DYN_DISCOVERY_BACKEND=file",
        'mkdir -p "$HOME" "$DYN_FILE_KV"',
        "export DYN_TCP_RPC_HOST=127.0.0.1 DYN_EVENT_PLANE_HOST=127.0.0.1",
        "export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 TQDM_DISABLE=1 NO_COLOR=1",
        f'export {PORT}="$({shlex.quote(_python(job))} -c "{pick}")"',
    ])  # fmt: skip


def _engine(model: DynamoMockerArgs) -> list[str]:
    e = model.engine
    caching = "--enable-prefix-caching" if e.enable_prefix_caching else "--no-enable-prefix-caching"
    return ["--model-path", model_path(model), "--speedup-ratio", str(e.speedup_ratio), "--block-size",
            str(e.block_size), "--num-gpu-blocks-override", str(e.num_gpu_blocks_override), caching]  # fmt: skip


def mockers(model: DynamoMockerArgs, python: str) -> list[Run]:
    common = ["--discovery-backend", "file", "--request-plane", "tcp"]
    extras = extra_flags(model.engine.model_extra) + extra_flags(model.worker.model_extra)
    w = model.worker
    if w.disaggregation_mode == "none":
        argv = [python, "-m", "dynamo.mocker", *_engine(model)]
        argv[5:5] = ["--num-workers", str(w.num_workers)]  # after --model-path M
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
             "        sleep 0.2", "    done", "}"]  # fmt: skip
    for run in runs:
        regex = roles[(run.name or "").split("_")[0]].worker_initialized_regex
        lines.append(f'cloudai_wait_ready {run.output} {shlex.quote(regex)} "${run.pid_var}" {run.name} || exit 1')
    return "\n".join(lines)


def frontend(model: DynamoMockerArgs, python: str) -> Run:
    mode = {"kv_router": "kv", "round_robin": "round-robin"}[model.frontend.router_mode]
    argv = [python, "-m", "dynamo.frontend", "--http-port", Var(f"${PORT}"), "--router-mode", mode]
    argv += ["--discovery-backend", "file", "--request-plane", "tcp"] + (
        ["--no-router-kv-events"] if mode == "kv" else []
    )
    return Run((*argv, *extra_flags(model.frontend.model_extra)), name="frontend", background=True,
               output="dynamo_frontend.log")  # fmt: skip


def model_wait(disaggregated: bool, runs: Sequence[Run]) -> str:
    """Wait (300 s) until the frontend lists a model: a worker has registered (CloudAI's wait_for_model); when
    disaggregated, also until the frontend has found the prefill workers (before that it serves without them).
    A mocker or the frontend that exits first ends the job at once, with its name."""
    url = f"http://localhost:${{{PORT}}}/v1/models"
    ready = f'curl -sf "{url}" 2>/dev/null | grep -q \'"id"\''
    if disaggregated:
        ready += " && grep -q 'Prefill router target activated' dynamo_frontend.log"
    alive = "".join(f'kill -0 "${run.pid_var}" 2>/dev/null || {{ echo "cloudai: {run.name} exited before it was '
                    f'ready (see {run.output})" >&2; exit 1; }}; ' for run in runs)  # fmt: skip
    return (f"for _ in $(seq 1 1500); do {ready} && break; {alive}sleep 0.2; done\n"
            f"{ready} || {{ echo \"cloudai: no model registered at {url}\" >&2; exit 1; }}")  # fmt: skip


def benchmark(model: DynamoMockerArgs, job: JobContext) -> list[Step]:
    b, job_dir, port = model.bench, job.job_dir.absolute(), f"${{{PORT}}}"
    load = ["--request-rate" if b.replay_mode == "online" else "--concurrency", str(b.replay_concurrency)]
    tool = "aiperf" if model.benchmark_tool == "aiperf" else "genai-perf"
    binary = shlex.split(b.cmd) or [str(Path(_python(job)).parent / tool) if job.install_path else tool]
    extras = extra_flags(b.model_extra) + shlex.split(b.extra_args or "")
    if tool == "aiperf":
        art = job_dir / "aiperf_artifacts"
        argv = [*binary, "profile", "--model", model_path(model), "--url", Var(f"localhost:{port}"), "--endpoint-type",
                "chat", "--streaming", "--artifact-dir", str(art), "--no-server-metrics",
                "--synthetic-input-tokens-mean", str(b.input_tokens), "--output-tokens-mean", str(b.output_tokens),
                "--request-count", str(b.request_count), *load, *extras]  # fmt: skip
        pattern = "-maxdepth 1 -name profile_export_aiperf.csv"  # the profiling phase's (warmup's are in phases/)
    else:
        art = job_dir / "genai_perf_artifacts"
        argv = [*binary, "profile", "--model", model_path(model), "--url", Var(f"http://localhost:{port}"),
                "--artifact-dir", str(art), "--profile-export-file", "profile.json", *load, "--request-count",
                str(b.request_count), "--synthetic-input-tokens-mean", str(b.input_tokens), "--output-tokens-mean",
                str(b.output_tokens), "--endpoint-type", "chat", *extras]  # fmt: skip
        pattern = "-name profile_genai_perf.csv"
    copy = (f"report=$(find {shlex.quote(str(art))} {pattern} -print -quit)\n"
            f'[ -n "$report" ] && cp "$report" {shlex.quote(str(job_dir / REPORT))}')  # fmt: skip
    return [Run(tuple(argv), name="benchmark", output=f"{model.benchmark_tool}.log"), Shell(copy)]


class DynamoMocker(Workload):
    name = "DynamoMocker"
    args_model = DynamoMockerArgs
    produces_metrics = True
    hardware = "cpu"  # the mocker simulates the GPU: it runs here for real
    noisy = True  # nine repeats of one point: 15.6-16.6 requests/s (benchmarks/bench_serving_stack.py)
    metrics = profile_export.METRICS
    units = profile_export.UNITS
    latency_charts = profile_export.LATENCY_CHARTS

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        run = benchmark(DynamoMockerArgs.model_validate(args), job)[0]
        return list(run.argv) if isinstance(run, Run) else []

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        model, python = DynamoMockerArgs.model_validate(args), _python(job)
        workers = mockers(model, python)
        disagg = model.worker.disaggregation_mode != "none"
        steps: list[Step] = [Shell(setup(job)), *workers]
        steps += [Shell(ready_wait(model, workers))] if disagg else []
        front = frontend(model, python)
        steps += [front, Shell(model_wait(disagg, [*workers, front]))]
        return [*steps, *benchmark(model, job)]

    def installables(self, args: Mapping[str, Any]) -> Sequence[Installable]:
        return (ENV, TINY_MODEL) if wants_tiny_model(str(args.get("model_path", ""))) else (ENV,)

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        return write_metrics(job_dir, profile_export.read_profile(job_dir / REPORT, "the mocker's benchmark"))
