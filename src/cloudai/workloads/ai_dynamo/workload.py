"""``AIDynamo``: NVIDIA Dynamo disaggregated serving (etcd, NATS, prefill and decode workers, the frontend) and
its benchmark clients, from CloudAI's ``AIDynamoCmdArgs``.

CloudAI runs one ``srun`` of its ``ai_dynamo.sh`` on every node, which starts the pieces by node role. cloudai
renders the same pieces as steps of the job, so each is a step of its own on Slurm (its log, its node, its exit
status)::

    [LMCache / HiCache config files written] -> node setup (every node) -> [LMCache cache dir (every node)]
    -> [dcgm-exporter] -> etcd, nats (head) -> wait etcd /readyz -> [lmcache controller]
    -> decode workers, prefill workers (workers.py) -> wait for each worker's ready line
    -> frontend ``<ingress-cmd> --http-port <port>`` (head) -> wait until it answers a chat request
    -> genai-perf and/or ``bash aiperf.sh`` (aiperf_script.py) -> [aiperf accuracy]

The commands are CloudAI's, flag for flag: ``<etcd-cmd> --listen-client-urls http://0.0.0.0:<etcd-port>
--advertise-client-urls ...``, ``<nats-cmd> -p <nats-port>``, ``<worker cmd> --model M --<arg> <v> ...
<extra-args>``, and ``aiperf.sh`` as CloudAI generates it. Metrics come from the first workload's report
(``aiperf_report.csv`` / genai-perf's ``profile_genai_perf.csv``; ``cloudai.workloads.profile_export``).
When the scenario entry sets no ``num_nodes`` the job takes prefill + decode nodes, as in CloudAI.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cloudai.steps import Run, Shell, Step, Var, WaitHttp
from cloudai.workloads import profile_export
from cloudai.workloads.ai_dynamo import aiperf_script, cache_config
from cloudai.workloads.ai_dynamo.accuracy import read_accuracy
from cloudai.workloads.ai_dynamo.args import AIDynamoArgs
from cloudai.workloads.ai_dynamo.cache_config import lmcache_config
from cloudai.workloads.ai_dynamo.workers import SYSTEM_PORT, flag_words, layout, ready_wait, worker_runs
from cloudai.workloads.base import ONE_NODE, JobContext, Resources, Workload, write_metrics
from cloudai.workloads.heredoc import write_lines, written_files

HEAD = "${CLOUDAI_HEAD_NODE}"
GENAI_PERF_DIR, GENAI_PERF_EXPORT = "genai_perf_artifacts", "profile_genai_perf.csv"
AIPERF_REPORT = "aiperf_report.csv"
HF_HOME = "/cloudai_install/huggingface"  # CloudAI's CONTAINER_MOUNT_HF_HOME
NODELIST = "DYNAMO_NODELIST"
_END = "CLOUDAI_AIPERF_EOF"


def _frontend(model: AIDynamoArgs) -> str:
    return f"http://{HEAD}:{model.dynamo.port}"


def environment(model: AIDynamoArgs, job_dir: Path, env: Mapping[str, str] | None = None) -> str:
    """Batch-shell exports every step inherits: where etcd, NATS and the frontend are (CloudAI's names); the
    LMCache / HiCache config files (``cache_config``); ``env``: the job's variables (``extra_env_vars``).

    ``AIPERF_ENDPOINT`` is not exported (CloudAI's ``ai_dynamo.sh`` does): aiperf reads ``AIPERF_*`` variables as
    its own settings, and 0.13 refuses ``AIPERF_ENDPOINT=v1/chat/completions`` as its ``endpoint`` settings
    ("error parsing value for field ENDPOINT"), so every phase failed before a request; ``aiperf.sh`` sets it
    for its probe without exporting it (``: "${AIPERF_ENDPOINT:=...}"``)."""
    d = model.dynamo
    metrics = f"{_frontend(model)}/metrics,http://{HEAD}:${{DYN_SYSTEM_PORT:-{SYSTEM_PORT}}}/metrics"  # a worker's
    if d.dcgm_exporter.enabled:
        metrics += f",http://{HEAD}:{d.dcgm_exporter.port}/metrics"
    lines = [f'export ETCD_ENDPOINTS="http://{HEAD}:{d.etcd_port}"', f'export NATS_SERVER="nats://{HEAD}:{d.nats_port}"',
             f'export FRONTEND_URL="{_frontend(model)}"', f'export AIPERF_SERVER_METRICS_URLS="{metrics}"',
             f"export AIPERF_MODEL={shlex.quote(d.model)}",
             f"export AIPERF_FAILURE_MARKER={shlex.quote(str(job_dir / aiperf_script.FAILURE_MARKER))}"]  # fmt: skip
    connectors = " ".join(str((w.args.model_extra and w.args.model_extra.get("connector")) or "")
                          for w in (d.prefill_worker, d.decode_worker)).split()  # fmt: skip
    enabled = {"kvbm": "kvbm" in connectors, "lmcache": "lmcache" in connectors or lmcache_config(model, env or {})}
    lines += [f"export ENABLE_{name.upper()}=1" for name, on in enabled.items() if on]
    lines += cache_config.shell_lines(model, job_dir, env or {})
    if "aiperf.sh" in model.workload_list:
        script = aiperf_script.render(model, str(job_dir))
        lines += write_lines(job_dir / aiperf_script.SCRIPT, script, _END, executable=True)
    return "\n".join(lines)


def frontend_wait(model: AIDynamoArgs, frontend: Run, timeout_s: int = 600, interval_s: int = 1) -> str:
    """Batch-shell lines: wait until the frontend answers a one-token chat request (CloudAI's ``wait_for_router``),
    not merely ``/v1/models``: the frontend answers that with 200 and an empty list before any worker registers, and
    a disaggregated model is listed before its prefill router is active (requests then get 503). The frontend
    exiting first, or ``timeout_s`` passing, ends the job with a line saying which."""
    d = model.dynamo
    body = json.dumps({"model": d.model, "messages": [{"role": "user", "content": "ping"}], "stream": False,
                       "max_tokens": 1}, separators=(",", ":"))  # fmt: skip
    url = f'"$FRONTEND_URL"/{shlex.quote(d.endpoint)}'
    return "\n".join([
        f"cloudai_frontend_end=$(( $(date +%s) + {timeout_s} ))",
        f"until curl -fsS -X POST {url} -H 'Content-Type: application/json' -d {shlex.quote(body)} >/dev/null 2>&1; do",
        f'    kill -0 "${frontend.pid_var}" 2>/dev/null || {{ echo "cloudai: the frontend exited before it '
        'answered" >&2; exit 1; }',
        '    [ "$(date +%s)" -lt "$cloudai_frontend_end" ] || { echo "cloudai: the frontend did not answer a chat '
        f'request within {timeout_s} s" >&2; exit 1; }}',
        f"    sleep {interval_s}",
        "done",
        'echo "cloudai: the frontend answers a chat request"',
    ])  # fmt: skip


def job_lines(job: JobContext) -> str:
    """The Hugging Face cache made (a mount's source must exist) and ``DYNAMO_NODELIST``, the job's nodes comma
    separated, which CloudAI's files compute with ``$(scontrol show hostname ...)`` in ``extra_env_vars`` (see
    ``AIDynamo.job_env``); a list the test gives as plain text is kept."""
    lines = [f"mkdir -p {shlex.quote(str(job.hf_home))}"] if job.hf_home else []
    if NODELIST not in job.env:
        lines.append(f'export {NODELIST}="$(IFS=,; echo "${{CLOUDAI_NODES[*]}}")"')
    return "\n".join(lines)


def extract_aiperf_script(script: str) -> str | None:
    """The ``aiperf.sh`` a rendered job script writes; None when it writes none."""
    return written_files(script).get(aiperf_script.SCRIPT)


def services(model: AIDynamoArgs, num_nodes: int) -> list[Step]:
    d = model.dynamo
    n = num_nodes  # one task on every node
    steps: list[Step] = [Run(("bash", "-c", d.node_setup_cmd), name="node_setup", output="node_setup.log",
                             num_nodes=n, ntasks=n, ntasks_per_node=1)]  # fmt: skip
    steps += cache_config.cache_dir_steps(model, n)
    if d.dcgm_exporter.enabled:
        dcgm = ("bash", "-lc", f"DCGM_EXPORTER_LISTEN=:{d.dcgm_exporter.port} dcgm-exporter")
        steps += [Run(dcgm, name="dcgm_exporter", background=True, output="dcgm-exporter.txt",
                      image=d.dcgm_exporter.docker_image_url, num_nodes=n, ntasks=n, ntasks_per_node=1),
                  WaitHttp(Var(f"http://{HEAD}:{d.dcgm_exporter.port}/metrics"), 60, 2)]  # fmt: skip
    etcd_url = f"http://0.0.0.0:{d.etcd_port}"
    etcd = (*shlex.split(d.etcd_cmd), "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url)
    steps += [Run(etcd, name="etcd", background=True, output="etcd.log", node=0, ntasks=1),
              Run((*shlex.split(d.nats_cmd), "-p", str(d.nats_port)), name="nats", background=True,
                  output="nats.log", node=0, ntasks=1),
              WaitHttp(Var(f"http://{HEAD}:{d.etcd_port}/readyz"), 300, 5)]  # fmt: skip
    if model.lmcache_controller:  # split as CloudAI's script runs it (unquoted ``${cmd}``: quotes stay in the words)
        steps.append(Run(tuple(model.lmcache_controller.cmd.split()), name="lmcache_controller",
                         background=True, output="lmcache_controller.log", node=0, ntasks=1))  # fmt: skip
    return steps


def clients(model: AIDynamoArgs, job_dir: Path) -> list[Step]:
    d, steps = model.dynamo, []
    for workload in model.workload_list:
        if workload == "genai_perf.sh":
            gp = model.genai_perf
            argv = [*shlex.split(gp.cmd), "--model", d.model, "--url", Var(_frontend(model)), "--endpoint", d.endpoint]
            argv += flag_words({**gp.args.model_dump(by_alias=True), **(gp.model_extra or {})})
            argv += ["--artifact-dir", str(job_dir / GENAI_PERF_DIR), "--profile-export-file", "profile.json"]
            steps.append(Run((*argv, *shlex.split(gp.extra_args or "")), name="genai_perf", output="genai_perf.log",
                             node=0, ntasks=1))  # fmt: skip
        else:
            steps.append(Run(("bash", str(job_dir / aiperf_script.SCRIPT)), name="aiperf", output="aiperf.log",
                             node=0, ntasks=1))  # fmt: skip
    accuracy = model.aiperf_accuracy
    if accuracy:
        if accuracy.setup_cmd:
            steps.append(Run(("bash", "-lc", accuracy.setup_cmd), name="accuracy_setup", node=0, ntasks=1))
        values = {"model": d.model, "artifact_dir": str(job_dir / accuracy.artifact_dir_name)}
        words = [Var(w.replace("{url}", _frontend(model))) if "{url}" in w else _filled(w, values)
                 for w in shlex.split(accuracy.cli)]  # fmt: skip
        steps.append(Run((*shlex.split(accuracy.entrypoint), *words), name="accuracy", output="aiperf_accuracy.log",
                         node=0, ntasks=1))  # fmt: skip
    return steps


def _filled(word: str, values: Mapping[str, str]) -> str:
    """``{model}`` / ``{artifact_dir}`` placeholders filled; other braces (JSON) stay."""
    for key, value in values.items():
        word = word.replace(f"{{{key}}}", value)
    return word


class AIDynamo(Workload):
    name = "AIDynamo"
    args_model = AIDynamoArgs
    produces_metrics = True
    metrics = (*profile_export.METRICS, "accuracy")
    units = profile_export.UNITS
    latency_charts = profile_export.LATENCY_CHARTS
    noisy = True

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        """The benchmark the job is about (its first client step), for records."""
        model = AIDynamoArgs.model_validate(args)
        return list(next(step for step in clients(model, job.job_dir.absolute()) if isinstance(step, Run)).argv)

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        model, job_dir = AIDynamoArgs.model_validate(args), job.job_dir.absolute()
        where = layout(model.dynamo, job.num_nodes)
        workers = worker_runs(model.dynamo, where, job.env, cache_config.worker_flags(model, job_dir, job.env))
        d = model.dynamo
        frontend = Run((*shlex.split(d.ingress_cmd), "--http-port", str(d.port)), name="frontend",
                       background=True, output="dynamo_ingress.log", node=0, ntasks=1)  # fmt: skip
        setup = Shell("\n".join(filter(None, (job_lines(job), environment(model, job_dir, job.env)))))
        return [setup, *services(model, job.num_nodes), *workers, Shell(ready_wait(d, workers)), frontend,
                Shell(frontend_wait(model, frontend)), *clients(model, job_dir)]  # fmt: skip

    def job_env(self, args: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
        """``DYNAMO_NODELIST`` given as a command (CloudAI's ``"$(scontrol show hostname $SLURM_JOB_NODELIST | tr -s
        '\\n' ',')"``, which its batch shell runs) is left out: ``job_lines`` exports the job's nodes instead, on any
        system. (Every other value is exported as text: configuration never becomes shell code.)"""
        return {k: v for k, v in env.items() if k != NODELIST or not ("$(" in v or "`" in v)}

    def num_nodes(self, args: Mapping[str, Any]) -> int | None:
        d = AIDynamoArgs.model_validate(args).dynamo
        return d.prefill_worker.num_nodes + d.decode_worker.num_nodes

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return AIDynamoArgs.model_validate(args).docker_image_url or None

    def container_mounts(self, args: Mapping[str, Any], job: JobContext) -> Sequence[str]:
        """CloudAI's: the system's Hugging Face cache at ``/cloudai_install/huggingface``, then the cache dirs."""
        hf = [f"{job.hf_home}:{HF_HOME}"] if job.hf_home else []
        return [*hf, *cache_config.container_mounts(AIDynamoArgs.model_validate(args))]

    def container_env(self, args: Mapping[str, Any], job: JobContext) -> Mapping[str, str]:
        """``HF_HOME`` at that mount, as CloudAI's ``ai_dynamo.sh --hf-home`` exports it for the workers."""
        return {"HF_HOME": HF_HOME} if job.hf_home else {}

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        """CloudAI's rules: prefill tp <= decode tp; a worker's tp*pp GPUs fit a node, both workers' on a
        shared node; the job has nodes for the larger role."""
        d = AIDynamoArgs.model_validate(args).dynamo
        prefill, decode, gpus = d.prefill_worker, d.decode_worker, resources.gpus_per_node
        where = layout(d, resources.num_nodes)
        if prefill.args.tensor_parallel_size > decode.args.tensor_parallel_size:
            return "prefill tensor-parallel-size exceeds decode's (CloudAI's prefill_tp_le_decode_tp)"
        if gpus and max(prefill.gpus, decode.gpus) > gpus:
            return f"a worker's tp*pp exceeds the node's {gpus} GPUs"
        if gpus and where.shared and prefill.gpus + decode.gpus > gpus:
            return f"prefill and decode share nodes but need {prefill.gpus} + {decode.gpus} GPUs of {gpus}"
        if where.nodes_needed > resources.num_nodes:
            return f"needs {where.nodes_needed} nodes for its workers, the job has {resources.num_nodes}"
        return None

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        """aiperf's ``aiperf_report.csv`` (the last phase's export, as CloudAI copies it), else genai-perf's."""
        genai = profile_export.find_export(job_dir / GENAI_PERF_DIR, GENAI_PERF_EXPORT)
        if (job_dir / AIPERF_REPORT).exists() or not genai.exists():
            metrics = profile_export.read_profile(job_dir / AIPERF_REPORT, "aiperf")
        else:
            metrics = profile_export.read_profile(genai, "genai-perf")
        accuracy = read_accuracy(job_dir)  # the aiperf_accuracy run's, when there was one (a 0-1 fraction)
        return write_metrics(job_dir, metrics if accuracy is None else {**metrics, "accuracy": accuracy})
