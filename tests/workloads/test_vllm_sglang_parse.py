"""Metrics of ``vllm`` and ``sglang`` jobs from their benchmark clients' real output formats (``data/serving/``):
the JSON result first, the printed block as fallback; a truncated run or failed requests fail the trial."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cloudai.errors import WorkloadError
from cloudai.workloads.base import METRICS_FILE
from cloudai.workloads.serving.results import GPUS_FILE
from cloudai.workloads.sglang import Sglang
from cloudai.workloads.vllm import Vllm

DATA = Path(__file__).resolve().parent / "data" / "serving"


def job(tmp_path: Path, **files: str) -> Path:
    """A job dir holding fixtures: ``name=fixture`` copies ``data/serving/<fixture>`` as ``name``."""
    for name, fixture in files.items():
        shutil.copy(DATA / fixture, tmp_path / name.replace("_", "-").replace("-bench-", "-bench."))
    return tmp_path


def test_vllm_json_result_gives_throughput_and_latency_percentiles(tmp_path: Path) -> None:
    job_dir = job(tmp_path, vllm_bench_json="vllm_bench.json")
    (job_dir / GPUS_FILE).write_text("4\n")
    metrics = Vllm().read_metrics(job_dir)
    assert metrics["default"] == metrics["throughput"] == metrics["output_throughput"] == 1641.1748
    assert metrics["request_throughput"] == 12.8216
    assert (metrics["mean_ttft_ms"], metrics["median_ttft_ms"], metrics["p99_ttft_ms"]) == (25.4719, 24.6125, 40.1187)
    assert (metrics["mean_tpot_ms"], metrics["p99_itl_ms"]) == (8.5034, 12.3377)
    assert metrics["tps-per-user"] == pytest.approx(1641.1748 / 16)
    assert metrics["tps-per-gpu"] == pytest.approx(1641.1748 / 4)
    assert json.loads((job_dir / METRICS_FILE).read_text()) == metrics
    assert set(metrics) <= set(Vllm.metrics)


def test_vllm_printed_block_is_the_fallback(tmp_path: Path) -> None:
    metrics = Vllm().read_metrics(job(tmp_path, vllm_bench_log="vllm_bench.log"))
    assert metrics["default"] == 1641.17
    assert (metrics["median_ttft_ms"], metrics["p99_tpot_ms"], metrics["median_itl_ms"]) == (24.61, 9.80, 8.20)
    assert metrics["tps-per-user"] == pytest.approx(1641.17 / 16)
    assert "tps-per-gpu" not in metrics  # no GPU count recorded by the job


def test_vllm_truncated_block_fails_the_trial(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="truncated"):
        Vllm().read_metrics(job(tmp_path, vllm_bench_log="vllm_bench_truncated.log"))


def test_vllm_failed_requests_fail_the_trial_with_the_clients_error(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"3 of 30 requests failed; first error: .*ServerDisconnectedError"):
        Vllm().read_metrics(job(tmp_path, vllm_bench_json="vllm_bench_failed.json"))
    assert not (tmp_path / METRICS_FILE).exists()


def test_vllm_without_output_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="vllm bench serve did not run"):
        Vllm().read_metrics(tmp_path)


def test_sglang_jsonl_result_default_is_request_throughput(tmp_path: Path) -> None:
    metrics = Sglang().read_metrics(job(tmp_path, sglang_bench_jsonl="sglang_bench.jsonl"))
    assert metrics["default"] == metrics["request_throughput"] == 15.0936
    assert metrics["output_throughput"] == 1931.9863
    assert (metrics["mean_e2el_ms"], metrics["p99_e2el_ms"]) == (1032.5521, 1060.3302)  # SGLang's e2e_latency
    assert metrics["p99_ttft_ms"] == 45.6611
    assert set(metrics) <= set(Sglang.metrics)


def test_sglang_jsonl_last_complete_line_wins(tmp_path: Path) -> None:
    good = (DATA / "sglang_bench.jsonl").read_text()
    (tmp_path / "sglang-bench.jsonl").write_text(good.replace('"completed": 30', '"completed": 29') + good + '{"torn')
    assert Sglang().read_metrics(tmp_path)["completed"] == 30


def test_sglang_printed_block_and_its_truncation(tmp_path: Path) -> None:
    metrics = Sglang().read_metrics(job(tmp_path, sglang_bench_log="sglang_bench.log"))
    assert (metrics["default"], metrics["total_token_throughput"]) == (15.09, 2173.48)
    assert metrics["median_e2el_ms"] == 1030.12
    (tmp_path / "sglang-bench.log").write_text((DATA / "sglang_bench_truncated.log").read_text())
    with pytest.raises(WorkloadError, match="truncated"):
        Sglang().read_metrics(tmp_path)


def test_sglang_failed_requests_counted_from_the_detailed_output(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"4 of 30 requests failed; first error: Bad Request: prompt too long"):
        Sglang().read_metrics(job(tmp_path, sglang_bench_jsonl="sglang_bench_failed.jsonl"))


def test_no_successful_request_is_a_failure(tmp_path: Path) -> None:
    data = json.loads((DATA / "vllm_bench.json").read_text()) | {"completed": 0, "failed": 30}
    (tmp_path / "vllm-bench.json").write_text(json.dumps(data))
    with pytest.raises(WorkloadError, match="no request succeeded"):
        Vllm().read_metrics(tmp_path)


def test_semantic_accuracy_is_a_metric(tmp_path: Path) -> None:
    job(tmp_path, sglang_bench_jsonl="sglang_bench.jsonl")
    (tmp_path / "sglang-semantic-eval.log").write_text("Writing report to /tmp/gsm8k.html\nScore: 0.915\n")
    assert Sglang().read_metrics(tmp_path)["accuracy"] == 0.915
    other = tmp_path / "v"
    other.mkdir()
    job(other, vllm_bench_json="vllm_bench.json")
    (other / "vllm-gsm8k.json").write_text('{"accuracy": 0.87, "invalid_rate": 0.0}')
    assert Vllm().read_metrics(other)["accuracy"] == 0.87


def test_failure_reason_quotes_the_clients_last_error(tmp_path: Path) -> None:
    (tmp_path / "vllm-bench.log").write_text("Traceback (most recent call last):\nValueError: model not served\n")
    assert Vllm().failure_reason(tmp_path) == "vllm-bench.log: ValueError: model not served"
    assert Sglang().failure_reason(tmp_path / "nothing") is None
