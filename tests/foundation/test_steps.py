"""Multi-step jobs (``cloudai.steps``) run for real on both systems: a background server, a wait until it
answers, a client against it, and the server stopped at the end, whichever way the script ends."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import StandaloneSystemConfig, load_system
from cloudai.steps import Run, Shell, Var, WaitHttp
from cloudai.systems.base import Job, JobSpec, JobStatus, System
from cloudai.systems.slurm.render import render_sbatch
from cloudai.systems.slurm.system import SlurmSystem
from cloudai.systems.standalone import StandaloneSystem

SLURM_TOML = Path(__file__).resolve().parents[1] / "slurm" / "slurm_system.toml"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_steps(port: int, client: tuple[str, ...]) -> tuple:
    return (
        Run((sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"), "server", True, "server.log"),
        WaitHttp(Var(f"http://127.0.0.1:{port}/"), timeout_s=30, interval_s=1),
        Shell('echo "$SERVER_PID" > server.pid; echo "$CLOUDAI_HEAD_NODE" > head.txt'),
        Run(client, output="client.log"),
    )


def run_job(system: System, spec: JobSpec) -> Job:
    job = system.submit(spec)
    for _ in range(600):
        if job.done:
            return job
        system.wait([job], timeout=5)
    raise AssertionError(f"job not final: {job.status}")


def check_server_gone(job_dir: Path) -> None:
    pid = int((job_dir / "server.pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_server_wait_client_on_standalone(tmp_path: Path) -> None:
    port = free_port()
    client = ("curl", "-sf", f"http://127.0.0.1:{port}/")
    system = StandaloneSystem(StandaloneSystemConfig(name="local", scheduler="standalone"))
    job = run_job(system, JobSpec("steps", client, tmp_path / "job", {}, 60, steps=server_steps(port, client)))
    assert job.status is JobStatus.OK, (tmp_path / "job" / "stderr.txt").read_text()
    assert "Directory listing" in (tmp_path / "job" / "client.log").read_text()
    assert (tmp_path / "job" / "head.txt").read_text().strip() == socket.gethostname()
    assert "answers" in (tmp_path / "job" / "stdout.txt").read_text()
    check_server_gone(tmp_path / "job")


def test_failed_client_fails_the_job_and_stops_the_server(tmp_path: Path) -> None:
    port = free_port()
    client = ("bash", "-c", "exit 7")
    system = StandaloneSystem(StandaloneSystemConfig(name="local", scheduler="standalone"))
    job = run_job(system, JobSpec("steps", client, tmp_path / "job", {}, 60, steps=server_steps(port, client)))
    assert (job.status, job.returncode) == (JobStatus.FAILED, 7)
    check_server_gone(tmp_path / "job")


def test_a_url_that_never_answers_fails_with_a_reason(tmp_path: Path) -> None:
    steps = (WaitHttp(f"http://127.0.0.1:{free_port()}/health", timeout_s=2, interval_s=1), Run(("true",)))
    system = StandaloneSystem(StandaloneSystemConfig(name="local", scheduler="standalone"))
    job = run_job(system, JobSpec("wait", ("true",), tmp_path / "job", {}, 60, steps=steps))
    assert (job.status, job.returncode) == (JobStatus.FAILED, 1)
    assert "did not answer within 2 s" in (tmp_path / "job" / "stderr.txt").read_text()


def test_var_words_expand_and_plain_words_stay_literal(tmp_path: Path) -> None:
    steps = (Run(("bash", "-c", 'printf "%s|%s" "$1" "$2" > out.txt', "-", Var("${CLOUDAI_HEAD_NODE}:1"), "$HOME")),)
    system = StandaloneSystem(StandaloneSystemConfig(name="local", scheduler="standalone"))
    job = run_job(system, JobSpec("vars", ("x",), tmp_path / "job", {}, 60, steps=steps))
    assert job.status is JobStatus.OK
    assert (tmp_path / "job" / "out.txt").read_text() == f"{socket.gethostname()}:1|$HOME"


@pytest.mark.parametrize("text", ["$(touch /tmp/x)", "`id`", 'a"b', "a\\b", "x\ny"])
def test_var_refuses_anything_but_references(text: str) -> None:
    with pytest.raises(ValueError, match="may hold only"):
        Var(text)


def test_slurm_renders_steps_as_srun_steps(tmp_path: Path) -> None:
    config = load_system(SLURM_TOML)
    assert isinstance(config, SlurmSystemConfig)
    steps = (
        Run(("server", "--port", "1"), "serve", True, "serve.log", ntasks=1, ntasks_per_node=1, node=0),
        WaitHttp(Var("http://${CLOUDAI_HEAD_NODE}:1/health")),
        Run(("launcher.py", "-x"), batch_shell=True, output="launcher.log"),
        Run(("client", "--url", Var("http://${CLOUDAI_HEAD_NODE}:1")), num_nodes=2),
    )
    text = render_sbatch(JobSpec("j", ("client",), tmp_path, {}, 60, steps=steps), config)
    lines = text.splitlines()
    serve = next(line for line in lines if line.startswith("srun") and " server " in line)
    assert "--overlap" in serve and "-N1" in serve and "--job-name=cloudai-serve" in serve
    assert "sed -n '1p'" in serve and serve.endswith("server --port 1 &")
    assert f"--output={tmp_path}/serve.log" in serve
    assert 'cloudai_wait_http "http://${CLOUDAI_HEAD_NODE}:1/health" 300 5 || exit 1' in lines
    assert f"launcher.py -x > {tmp_path}/launcher.log 2>&1 || exit $?" in lines
    client = next(line for line in lines if line.startswith("srun") and " client " in line)
    assert "-N2" in client and client.endswith('client --url "http://${CLOUDAI_HEAD_NODE}:1" || exit $?')
    assert "export CLOUDAI_HEAD_NODE=$(scontrol show hostname" in text


@pytest.mark.slurm
@pytest.mark.usefixtures("timeout_job")
def test_server_wait_client_on_slurm(tmp_path: Path) -> None:
    config = load_system(SLURM_TOML)
    assert isinstance(config, SlurmSystemConfig)
    system = SlurmSystem(config)
    port = free_port()
    client = ("curl", "-sf", f"http://127.0.0.1:{port}/")
    steps = server_steps(port, client)
    job = run_job(system, JobSpec("steps", client, tmp_path / "job", {}, 120, steps=steps))
    assert job.status is JobStatus.OK, (tmp_path / "job" / "stderr.txt").read_text()
    assert "Directory listing" in (tmp_path / "job" / "client.log").read_text()
    check_server_gone(tmp_path / "job")
