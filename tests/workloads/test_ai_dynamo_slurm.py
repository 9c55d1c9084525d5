"""An AIDynamo job on the local Slurm, for real: the job script cloudai renders for a GPU cluster (etcd and NATS,
the workers waited on by their ready lines, the frontend, aiperf phases through ``aiperf.sh``), with only the
workers' engine swapped: Dynamo's mocker (``dynamo.mocker``, ai-dynamo 1.6.1) stands in for ``dynamo.vllm``, as this
machine has no GPU (``dynamo_slurm/bin/dynamo_mocker_as_vllm.py``). Everything else is the real thing: Dynamo's
frontend, ``aiperf`` 0.13 under load, NATS (Debian's ``nats-server``, as CloudAI's files start it); Dynamo's
discovery is its file backend, so ``etcd`` is a stand-in that only answers the job's ``/readyz`` wait (Debian's
etcd 3.4 has no ``/readyz``). This catches what a render comparison cannot: the order of the steps, the waits, the
ports, the files and the cleanup. The GPU file (``dynamo_slurm/test/vllm_disagg.toml``) and its mocker twin render
to the same script but for the workers' lines (checked by a dry-run of both).

One job (~80 s on 2 busy cores: each of its two aiperf phases takes ~25 s to start), from the stack
``cloudai install`` put in ``.cache/install`` (``dynamo_stack``: skipped with one reason only when the package
index is unreachable); its stack (the processes carrying its ``DYN_FILE_KV``) must be gone when it ends.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.workloads.conftest import HERE, STACK_CACHE

from cloudai.cli import cli
from cloudai.steps import Run
from cloudai.workloads.ai_dynamo.args import AIDynamoArgs
from cloudai.workloads.ai_dynamo.workload import frontend_wait
from cloudai.workloads.dynamo_mocker.stack import ENV, TINY_MODEL

DYNAMO = HERE / "dynamo_slurm"
GPU_WORKER = "python3 -m dynamo.vllm"
MOCKER_WORKER = f"python3 {DYNAMO / 'bin' / 'dynamo_mocker_as_vllm.py'}"
GPU_READY = "VllmWorker.*has.been.initialized"
MOCKER_READY = "Registered endpoint .dynamo[.](backend|prefill)[.]generate."  # the mocker's line once it serves


def free_port(low: int = 1024, high: int = 65535) -> int:
    """A port nothing listens on, in ``[low, high]`` (Dynamo reads ``DYN_SYSTEM_PORT`` as an i16: below 32768)."""
    for _ in range(200):
        port = random.randint(low, high)
        with socket.socket() as sock:
            try:
                sock.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {low}-{high}")


def swapped(text: str) -> str:
    """The workers' engine swapped: their command and the line that says they are ready."""
    return text.replace(GPU_WORKER, MOCKER_WORKER).replace(GPU_READY, MOCKER_READY)


def write_tests(tests: Path, mocker: bool = True) -> Path:
    """The GPU test file, as it is or with the mocker for its workers (``swapped``)."""
    text = (DYNAMO / "test" / "vllm_disagg.toml").read_text()
    assert text.count(GPU_WORKER) == text.count(GPU_READY) == 2
    tests.mkdir(parents=True)
    (tests / "vllm_disagg.toml").write_text(swapped(text) if mocker else text)
    return tests


def system(tmp_path: Path) -> Path:
    """The local Slurm without containers (``slurm_system.toml``), its install dir (the job's Hugging Face cache)
    under ``tmp_path``."""
    text = (HERE / "slurm_system.toml").read_text().replace('"./install"', f'"{tmp_path / "install"}"')
    path = tmp_path / "system.toml"
    path.write_text(text)
    return path


def scenario(tmp_path: Path, model: Path) -> Path:
    """One entry on one node (prefill and decode share it, as on a cluster's shared-node layout), the model, free
    ports and Dynamo's file discovery under the job's own dirs."""
    system_port = free_port(20000, 32000)
    path = tmp_path / "scenario.toml"
    path.write_text(f"""name = "dynamo-slurm"
[[Tests]]
id = "dynamo"
test_name = "dynamo-vllm-disagg"
num_nodes = 1
time_limit = "00:05:00"
  [Tests.cmd_args.dynamo]
  model = "{model}"
  port = {free_port()}
  etcd-port = {free_port()}
  nats-port = {free_port()}
  [Tests.extra_env_vars]
  DYN_SYSTEM_PORT = "{system_port}"
  DYN_DISCOVERY_BACKEND = "file"
  DYN_FILE_KV = "{tmp_path / "kv"}"
  DYN_TCP_RPC_HOST = "127.0.0.1"
  DYN_EVENT_PLANE_HOST = "127.0.0.1"
  HOME = "{tmp_path / "home"}"
""")
    return path


def stack_processes(marker: str) -> list[str]:
    """Command lines of the processes whose environment holds ``marker`` (every process of the job's stack)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return found


@pytest.fixture(scope="session")
def nats_server() -> None:
    """Debian's ``nats-server`` (CloudAI's files start NATS): installed with apt-get when missing and root (as the
    suite installs Slurm's packages); skipped, saying so, only when apt's package index is unreachable."""
    if shutil.which("nats-server"):
        return
    if os.geteuid() != 0:
        pytest.fail("nats-server is not installed: apt-get install nats-server (.ci/run does)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    update = subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True, env=env, timeout=300)
    install = subprocess.run(["apt-get", "install", "-y", "-qq", "nats-server"], capture_output=True, text=True,
                             env=env, timeout=300)  # fmt: skip
    if install.returncode != 0 or not shutil.which("nats-server"):
        if update.returncode != 0:
            pytest.skip(f"nats-server cannot be installed: apt's package index is unreachable ({update.stderr[-300:]})")
        pytest.fail(f"apt-get install nats-server failed: {install.stderr[-600:]}")


@pytest.fixture
def on_path(dynamo_stack: Path, nats_server: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed stack's ``python3``/``aiperf`` and the etcd stand-in first on PATH (sbatch's jobs inherit
    it), as a Dynamo image has them."""
    stack = ENV.python(STACK_CACHE).parent
    monkeypatch.setenv("PATH", f"{stack}{os.pathsep}{DYNAMO / 'bin'}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.slurm
@pytest.mark.usefixtures("on_path")
def test_aidynamo_job_runs_on_the_local_slurm_and_parses(tmp_path: Path) -> None:
    tests = write_tests(tmp_path / "tests")
    out = tmp_path / "results"
    args = ["run", "--system-config", str(system(tmp_path)), "--tests-dir", str(tests)]
    result = CliRunner().invoke(cli, [*args, "--test-scenario", str(scenario(tmp_path, TINY_MODEL.path(STACK_CACHE))),
                                      "--output-dir", str(out)])  # fmt: skip
    [job_dir] = out.glob("*/dynamo/0")
    record = json.loads((job_dir / "job.json").read_text())
    assert (result.exit_code, record["status"]) == (0, "ok"), (result.output, record["reason"])
    metrics = record["metrics"]
    assert metrics["request_count"] == 24  # the last phase's (round_2) export, as CloudAI copies it
    assert metrics["request_throughput"] > 0 and metrics["output_token_throughput"] > 0
    assert 0 < metrics["ttft_p50_ms"] <= metrics["ttft_p90_ms"] and metrics["itl_ms"] > 0
    assert "Request Count,12.00" in (job_dir / "aiperf_round_1_report.csv").read_text()
    waits = [re.sub(r"http://[^/]+", "", line) for line in (job_dir / "stdout.txt").read_text().splitlines()]
    assert waits == ["cloudai: /readyz answers", "cloudai: worker decode_0 is ready",
                     "cloudai: worker prefill_0 is ready", "cloudai: the frontend answers a chat request"]  # fmt: skip
    assert stack_processes(str(tmp_path / "kv")) == []


def rendered(tmp_path: Path, kinds: tuple[str, ...] = ("gpu", "mocker")) -> dict[str, list[str]]:
    """The job script of the GPU file and of its mocker twin (``dry-run``, one scenario), job dir as ``JOB``."""
    args = ["dry-run", "--system-config", str(system(tmp_path)), "--test-scenario",
            str(scenario(tmp_path, tmp_path / "model"))]  # fmt: skip
    scripts = {}
    for kind in kinds:
        tests, out = write_tests(tmp_path / kind / "tests", kind == "mocker"), tmp_path / kind / "out"
        result = CliRunner().invoke(cli, [*args, "--tests-dir", str(tests), "--output-dir", str(out)])
        assert result.exit_code == 0, result.output
        [script] = out.glob("*/dynamo/0/sbatch.sh")
        scripts[kind] = script.read_text().replace(str(script.parent), "JOB").splitlines()
    return scripts


def test_the_mocker_job_script_is_the_gpu_jobs_but_for_its_workers(tmp_path: Path) -> None:
    """What the Slurm test runs is the script cloudai renders for the GPU file: the same lines, in the same order,
    except the two workers' commands and their two ready waits."""
    scripts = rendered(tmp_path)
    gpu, mocker = scripts["gpu"], scripts["mocker"]
    assert len(gpu) == len(mocker)
    changed = [(a, b) for a, b in zip(gpu, mocker, strict=True) if a != b]
    assert len(changed) == 4 and all(swapped(a) == b for a, b in changed)
    assert sum("srun" in a and GPU_WORKER in a for a, _ in changed) == 2


def test_aiperf_endpoint_is_not_exported_to_aiperf(tmp_path: Path) -> None:
    """aiperf reads ``AIPERF_*`` variables as its settings: an exported ``AIPERF_ENDPOINT=v1/chat/completions``
    (CloudAI's) made aiperf 0.13 fail every phase ("error parsing value for field ENDPOINT"). ``aiperf.sh`` still
    sets it, unexported, for its probe between phases."""
    [script] = rendered(tmp_path, ("gpu",)).values()
    assert not [line for line in script if line.startswith("export AIPERF_ENDPOINT")]
    assert ': "${AIPERF_ENDPOINT:=v1/chat/completions}"' in script
    assert f"export AIPERF_MODEL={tmp_path / 'model'}" in script  # the others stay


class Frontend(BaseHTTPRequestHandler):
    """A frontend that answers chat requests 503 ("not ready") ``not_ready`` times, then 200."""

    def do_POST(self) -> None:
        server: Any = self.server
        server.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(503 if len(server.bodies) <= server.not_ready else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def wait_for(not_ready: int, frontend_alive: bool) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    """The job's frontend wait (``frontend_wait``) run by bash against a real HTTP server on 127.0.0.1."""
    model = AIDynamoArgs.model_validate({"docker_image_url": "img", "dynamo": {"model": "m"}})
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), Frontend)
    server.bodies, server.not_ready = [], not_ready
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pid = "$$" if frontend_alive else "$(sh -c 'echo $$')"  # an exited process's id
    lines = frontend_wait(model, Run(("frontend",), name="frontend"), timeout_s=60, interval_s=0)
    script = f"FRONTEND_URL=http://127.0.0.1:{server.server_address[1]}\nFRONTEND_PID={pid}\n{lines}"
    try:
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60), server.bodies
    finally:
        server.shutdown()


def test_the_frontend_wait_holds_until_a_chat_request_is_answered() -> None:
    """``/v1/models`` answers 200 (an empty list) before any worker registers, and a disaggregated model is listed
    before its prefill router is active (chat requests get 503 then): the job waits for a chat answer, as CloudAI's
    ``wait_for_router`` does, and ends when the frontend exits first."""
    done, bodies = wait_for(not_ready=2, frontend_alive=True)
    assert (done.returncode, done.stdout) == (0, "cloudai: the frontend answers a chat request\n")
    assert len(bodies) == 3 and bodies[0]["model"] == "m" and bodies[0]["max_tokens"] == 1
    gone, _ = wait_for(not_ready=10**6, frontend_alive=False)
    assert (gone.returncode, gone.stderr) == (1, "cloudai: the frontend exited before it answered\n")
