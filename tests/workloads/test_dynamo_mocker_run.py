"""CloudAI's DynamoMocker files run for real on the standalone system: Dynamo's frontend and mocker engines
(prefill and decode, KV router) under load from aiperf, installed by ``cloudai install`` (``dynamo_stack``: one
install per machine), with only ``model_path`` changed to the tiny local model. One trial, ~20 s."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from click.testing import CliRunner
from tests.workloads.conftest import MOCKER_CONF, mocker_tests_dir

from cloudai.cli import cli


def stack_pids(marker: str) -> set[int]:
    """Live processes whose environment holds ``marker``: every process a trial starts inherits its ``DYN_FILE_KV``
    (the frontend, the mockers, aiperf and its workers)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "environ").read_bytes():
                    found.add(int(entry.name))
            except OSError:
                continue  # gone meanwhile, or not ours to read
    return found


def test_cloudais_mocker_files_run_and_leave_no_process(dynamo_stack: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    marker = f"DYN_FILE_KV={results}"
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:  # the stack's processes while the trial runs: proof the check below can see them
        while not done.wait(0.5):
            seen.update(stack_pids(marker))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    before = Path.cwd()
    os.chdir(dynamo_stack)  # CloudAI's system file: install_path = "./install"
    try:
        args = ["run", "--system-config", str(MOCKER_CONF / "system" / "standalone_system.toml"),
                "--tests-dir", str(mocker_tests_dir(tmp_path / "test")), "--output-dir", str(results),
                "--test-scenario", str(MOCKER_CONF / "test_scenario" / "dynamo_mocker.toml")]  # fmt: skip
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
    finally:
        os.chdir(before)
        done.set()
        watcher.join()
    [job_dir] = results.glob("*/dynamo_mocker.base/0")
    record = json.loads((job_dir / "job.json").read_text())
    assert result.exit_code == 0 and record["status"] == "ok", (result.output, (job_dir / "stderr.txt").read_text())
    metrics = json.loads((job_dir / "metrics.json").read_text())
    assert metrics["request_count"] == 50  # CloudAI's request_count; the 5 warmup requests are not in this export
    assert metrics["default"] == metrics["output_token_throughput"] > 0 and metrics["request_throughput"] > 0
    assert 0 < metrics["ttft_p50_ms"] <= metrics["ttft_p90_ms"] <= metrics["ttft_p99_ms"]
    assert 0 < metrics["itl_p50_ms"] <= metrics["itl_p90_ms"] <= metrics["itl_p99_ms"]
    assert "Prefill router target activated" in (job_dir / "dynamo_frontend.log").read_text()  # disaggregated
    assert len(seen) >= 4, "the frontend, two mockers and aiperf were running"
    assert stack_pids(marker) == set(), "a process of the trial outlived it"
