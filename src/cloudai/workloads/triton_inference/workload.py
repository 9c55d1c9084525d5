"""``TritonInference``: CloudAI's ``TritonInferenceCmdArgs`` and the job CloudAI renders, as steps.

On a job of N >= 3 nodes (CloudAI: "2 server and 1 client" at least)::

    (batch shell) NIM exports; start_server_wrapper.sh written into the job dir
    srun -N<N-1> --ntasks=<N-1> --ntasks-per-node=1 <server image, wrapper mounted>
         /opt/nim/start_server_wrapper.sh &
    wait for http://<head node>:<port>/v1/health/ready     (CloudAI: sleep <sleep_seconds>)
    srun -N1 --ntasks=1 <client image> genai-perf profile -m <served_model_name> --endpoint-type chat
         --service-kind openai --streaming -u $SLURM_JOB_MASTER_NODE:<port> --num-prompts 20 ...
         --artifact-dir <job dir> --tokenizer <tokenizer> -- -v --max-threads <concurrency> --request-count 20

CloudAI waits a fixed ``sleep_seconds`` (3300) for the server; here that is the bound of a readiness wait on
NIM's ``/v1/health/ready``, so a server up in 10 minutes is benchmarked after 10 minutes and one that never
comes up fails the job with the URL named. ``extra_env_vars.NIM_MODEL_NAME`` and ``NIM_CACHE_PATH`` (which
CloudAI requires) are mounted at their own paths, read-only and read-write, when set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from cloudai.config.fields import Port, PositiveCount, Seconds
from cloudai.steps import Run, Shell, Step, Var, WaitHttp
from cloudai.workloads import profile_export
from cloudai.workloads.base import ONE_NODE, JobContext, Resources, Workload, write_metrics
from cloudai.workloads.triton_inference.wrapper import CONTAINER_PATH, WRAPPER, setup_shell

EXPORT = "profile_export_genai_perf.csv"
_REQUIRED_ENV = (("NIM_MODEL_NAME", "ro"), ("NIM_CACHE_PATH", "rw"))  # mounted at their own paths


class TritonInferenceArgs(BaseModel):
    """CloudAI's fields and defaults."""

    model_config = ConfigDict(extra="forbid")

    server_docker_image_url: str
    client_docker_image_url: str
    served_model_name: str
    endpoint_type: Literal["chat"] = "chat"
    service_kind: Literal["openai"] = "openai"
    streaming: bool = True
    port: Port = 8000
    num_prompts: PositiveCount = 20
    input_sequence_length: PositiveCount = 128
    output_sequence_length: PositiveCount = 128
    concurrency: PositiveCount = 1
    tokenizer: str
    sleep_seconds: Seconds = 3300


def client_argv(model: TritonInferenceArgs, artifact_dir: Path) -> list[str]:
    """genai-perf's command line, in CloudAI's order."""
    osl = str(model.output_sequence_length)
    argv = ["genai-perf", "profile", "-m", model.served_model_name, "--endpoint-type", model.endpoint_type]
    argv += ["--service-kind", model.service_kind] + (["--streaming"] if model.streaming else [])
    argv += ["-u", Var(f"$SLURM_JOB_MASTER_NODE:{model.port}"), "--num-prompts", str(model.num_prompts)]
    argv += ["--synthetic-input-tokens-mean", str(model.input_sequence_length), "--synthetic-input-tokens-stddev"]
    argv += ["0", "--concurrency", str(model.concurrency), "--output-tokens-mean", osl]
    for extra in (f"max_tokens:{osl}", f"min_tokens:{osl}", "ignore_eos:true"):
        argv += ["--extra-inputs", extra]
    argv += ["--artifact-dir", str(artifact_dir), "--tokenizer", model.tokenizer, "--", "-v"]
    return [*argv, "--max-threads", str(model.concurrency), "--request-count", str(model.num_prompts)]


class TritonInference(Workload):
    name = "TritonInference"
    args_model = TritonInferenceArgs
    mounted_env = tuple(var for var, _ in _REQUIRED_ENV)
    produces_metrics = True
    metrics = profile_export.METRICS
    units = profile_export.UNITS
    latency_charts = profile_export.LATENCY_CHARTS
    noisy = True

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        return client_argv(TritonInferenceArgs.model_validate(args), job.job_dir.absolute())

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        model = TritonInferenceArgs.model_validate(args)
        job_dir = job.job_dir.absolute()
        servers = max(job.num_nodes - 1, 1)
        mounts = [f"{job.env[var]}:{job.env[var]}:{flag}" for var, flag in _REQUIRED_ENV if var in job.env]
        server = Run(
            (CONTAINER_PATH,),
            name="server",
            background=True,
            num_nodes=servers,
            ntasks=servers,
            ntasks_per_node=1,
            image=model.server_docker_image_url,
            mounts=(*mounts, f"{job_dir / WRAPPER}:{CONTAINER_PATH}:ro"),
        )
        ready = Var(f"http://${{CLOUDAI_HEAD_NODE}}:{model.port}/v1/health/ready")
        client = Run(tuple(client_argv(model, job_dir)), name="client", node=job.num_nodes - 1, ntasks=1,
                     image=model.client_docker_image_url)  # fmt: skip
        return (Shell(setup_shell(job_dir, job.env, servers)), server, WaitHttp(ready, model.sleep_seconds, 10), client)

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return TritonInferenceArgs.model_validate(args).server_docker_image_url or None

    def num_nodes(self, args: Mapping[str, Any]) -> int | None:
        return 3  # when the entry sets none: CloudAI's minimum, 2 servers and 1 client

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        if resources.num_nodes < 3:
            return f"TritonInference needs at least 3 nodes (2 servers and 1 client), not {resources.num_nodes}"
        return None

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        path = profile_export.find_export(job_dir, EXPORT)
        return write_metrics(job_dir, profile_export.read_profile(path, "genai-perf"))
