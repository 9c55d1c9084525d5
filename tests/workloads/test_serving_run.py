"""End to end on the standalone system: a ``vllm`` test runs its steps for real — the server in the background
(a real HTTP server on this machine, ``bin/vllm``: the only fake, as there is no GPU), a health wait, the
benchmark client asking the server over HTTP and printing vLLM's result format — and its metrics are parsed."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner

from cloudai.cli import cli

SCENARIO = 'name = "serving"\n[[Tests]]\nid = "v"\ntest_name = "v"\ntime_limit = "00:02:00"\n'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "v.toml").write_text(
        f'name = "v"\ntest_template_name = "vllm"\n{extra}[cmd_args]\ndocker_image_url = "img"\n'
        f"port = {free_port()}\nserve_wait_seconds = 30\n[bench_cmd_args]\nmax_concurrency = 8\n"
    )
    (tmp_path / "system.toml").write_text(
        f'name = "local"\nscheduler = "standalone"\ninstall_path = "{tmp_path}/install"\n'
        f'output_path = "{tmp_path}/results"\n'
    )
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    args = ["run", "--system-config", str(tmp_path / "system.toml"), "--tests-dir", str(tmp_path / "tests")]
    result = CliRunner().invoke(cli, [*args, "--test-scenario", str(tmp_path / "scenario.toml")])
    [job_dir] = (tmp_path / "results").glob("serving_*/v/0")
    assert result.exit_code == 0 or (job_dir / "job.json").exists(), result.output
    return job_dir


def test_server_health_wait_and_client_run_for_real(tmp_path: Path, standins: Path) -> None:
    job_dir = run(tmp_path)
    metrics = json.loads((job_dir / "metrics.json").read_text())
    assert metrics["default"] == metrics["output_throughput"] == 1641.1748
    assert metrics["tps-per-user"] == 1641.1748 / 16  # the client's own max_concurrency, as it reported it
    saved = json.loads((job_dir / "vllm-bench.json").read_text())
    assert saved["model_id"] == "Qwen/Qwen3-0.6B"  # the client asked the server, which answered its model
    assert "vllm serve Qwen/Qwen3-0.6B --host 0.0.0.0" in (job_dir / "vllm-serve.log").read_text()
    assert "--max-concurrency 8 --num-prompts 30" in (job_dir / "vllm-bench.log").read_text()
    assert "answers" in (job_dir / "stdout.txt").read_text()


def test_failed_requests_fail_the_job_with_the_clients_reason(tmp_path: Path, standins: Path, monkeypatch) -> None:
    monkeypatch.setenv("CLOUDAI_STANDIN_OUTPUT", "vllm_bench_failed.json")
    job_dir = run(tmp_path)
    record = json.loads((job_dir / "job.json").read_text())
    assert record["status"] == "failed"
    assert "3 of 30 requests failed; first error: aiohttp.client_exceptions.ServerDisconnectedError" in record["reason"]
