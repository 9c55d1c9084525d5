"""fio's JSON output to metrics, on real fio 3.33 output (tests/workloads/fio_json/, written by fio itself)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cloudai.errors import WorkloadError
from cloudai.workloads.fio.results import METRIC_NAMES, MetricChoice, error_line, metrics, parse, read_metrics

SAMPLES = Path(__file__).parent / "fio_json"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def jobs(name: str) -> list[dict[str, Any]]:
    return json.loads(sample(name))["jobs"]


def of(text: str, **choice: str) -> dict[str, float]:
    return metrics(parse(text), MetricChoice(**choice))


def test_one_job_randwrite_gives_write_metrics_in_mib_s_and_us() -> None:
    (job,) = jobs("one_job_randwrite.json")
    got = of(sample("one_job_randwrite.json"))
    write = job["write"]
    assert got["write_bw"] == pytest.approx(write["bw"] / 1024)
    assert got["write_iops"] == pytest.approx(write["iops"])
    assert got["write_latency"] == pytest.approx(write["lat_ns"]["mean"] / 1000)
    assert got["write_clat_mean"] == pytest.approx(write["clat_ns"]["mean"] / 1000)
    assert got["write_clat_p99"] == pytest.approx(write["clat_ns"]["percentile"]["99.000000"] / 1000)
    assert got["default"] == got["write_bw"]  # CloudAI's default: bw of all operations, summed
    assert not any(name.startswith(("read_", "trim_")) for name in got)  # no I/O, no metric (as CloudAI)
    assert set(got) <= set(METRIC_NAMES)


def test_several_jobs_are_summed_and_default_follows_the_aggregate() -> None:
    text = sample("three_jobs_read.json")
    bws = [job["read"]["bw"] / 1024 for job in jobs("three_jobs_read.json")]
    assert len(bws) == 3 and len(set(bws)) > 1  # distinct jobs, distinct numbers: the aggregates differ
    got = of(text)
    assert got["read_bw"] == pytest.approx(sum(bws))
    assert got["read_iops"] == pytest.approx(sum(j["read"]["iops"] for j in jobs("three_jobs_read.json")))
    assert got["default"] == pytest.approx(sum(bws))
    assert of(text, aggregate="mean")["default"] == pytest.approx(sum(bws) / 3)
    assert of(text, aggregate="min")["default"] == pytest.approx(min(bws))
    assert of(text, aggregate="max")["default"] == pytest.approx(max(bws))
    assert of(text, operation="first")["default"] == pytest.approx(bws[0])
    p99s = [j["read"]["clat_ns"]["percentile"]["99.000000"] / 1000 for j in jobs("three_jobs_read.json")]
    assert got["read_clat_p99"] == pytest.approx(max(p99s))


def test_randrw_mix_reports_both_operations() -> None:
    (job,) = jobs("randrw_group.json")
    text = sample("randrw_group.json")
    got = of(text)
    assert got["read_bw"] == pytest.approx(job["read"]["bw"] / 1024)
    assert got["write_bw"] == pytest.approx(job["write"]["bw"] / 1024)
    assert got["default"] == pytest.approx(got["read_bw"] + got["write_bw"])
    assert of(text, operation="write")["default"] == pytest.approx(got["write_bw"])
    assert of(text, operation="read", name="iops")["default"] == pytest.approx(job["read"]["iops"])
    assert of(text, operation="read", name="latency")["default"] == pytest.approx(job["read"]["lat_ns"]["mean"] / 1e3)
    assert of(text, name="clat_p99", aggregate="max")["default"] == pytest.approx(
        max(got["read_clat_p99"], got["write_clat_p99"])
    )


@pytest.mark.parametrize(("name", "start"), [("note_before_json.txt", "note: "), ("normal_then_json.txt", "x: (g=0)")])
def test_text_fio_prints_before_its_json_is_skipped(name: str, start: str) -> None:
    text = sample(name)
    assert text.startswith(start)
    assert of(text)["read_iops"] > 0


@pytest.mark.parametrize("cut", [0.5, 0.99])
def test_truncated_json_is_a_workload_error_not_a_crash(cut: float) -> None:
    text = sample("three_jobs_read.json")
    with pytest.raises(WorkloadError, match="truncated or malformed"):
        parse(text[: int(len(text) * cut)])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "holds no JSON output .it is empty"),
        ("fio: engine bogus not loadable\n", "holds no JSON output .it starts with: 'fio: engine bogus"),
        ('{"fio version": "fio-3.33", "jobs": []}', "has no jobs"),
        ('{"jobs": [{"jobname": "x", "read": {"total_ios": 1, "bw": "fast"}}]}', r"no number at read\.bw"),
    ],
)
def test_output_without_results_says_what_is_missing(text: str, message: str) -> None:
    with pytest.raises(WorkloadError, match=message):
        parse(text)


def test_a_job_with_an_error_fails_the_trial() -> None:
    data = json.loads(sample("one_job_randwrite.json"))
    data["jobs"][0]["error"] = 28
    with pytest.raises(WorkloadError, match="fio job 'fio-smoke' ended with error 28"):
        parse(json.dumps(data))


def test_no_io_at_all_and_a_default_over_an_idle_operation_are_errors() -> None:
    data = json.loads(sample("one_job_randwrite.json"))
    data["jobs"][0]["write"]["total_ios"] = 0
    with pytest.raises(WorkloadError, match="did no I/O"):
        parse(json.dumps(data))
    with pytest.raises(WorkloadError, match=r"metric_operation = 'read' did no I/O .operations with I/O: write"):
        of(sample("one_job_randwrite.json"), operation="read")


def test_read_metrics_and_error_line_read_the_job_dir(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"fio wrote no stdout\.txt"):
        read_metrics(tmp_path)
    (tmp_path / "stdout.txt").write_text(sample("randrw_group.json"))
    assert read_metrics(tmp_path, MetricChoice("write", "iops", "sum"))["default"] == pytest.approx(
        jobs("randrw_group.json")[0]["write"]["iops"]
    )
    assert error_line(tmp_path) is None
    (tmp_path / "stderr.txt").write_text("fio: engine bogus not loadable\nfio: failed to load engine\n")
    assert error_line(tmp_path) == "fio: engine bogus not loadable"
