"""Parsers on outputs in each tool's documented format (``data/``): good, ``#wrong``, cut short, NaN cells.

Each case goes through the workload's ``read_metrics`` on a job dir holding the output as
``stdout.txt``, the way a finished job is read: metrics returned and written, the per-size CSV
kept, or a ``WorkloadError`` whose message is the trial's reason.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest

from cloudai.errors import WorkloadError
from cloudai.workloads.base import Workload
from cloudai.workloads.nccl_test import NcclTest
from cloudai.workloads.nccl_test import parse as nccl_parse
from cloudai.workloads.osu_bench import OSUBench
from cloudai.workloads.ucc_test import UCCTest

DATA = Path(__file__).resolve().parent / "data"


def job_with(tmp_path: Path, output: str | None) -> Path:
    job = tmp_path / "job"
    job.mkdir()
    if output is not None:
        shutil.copy(DATA / output, job / "stdout.txt")
    return job


def read(workload: Workload, tmp_path: Path, output: str) -> tuple[dict[str, float], Path]:
    job = job_with(tmp_path, output)
    return workload.read_metrics(job), job


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


# -- nccl-tests ------------------------------------------------------------------------------


def test_nccl_metrics_are_cloudais_means_and_the_tools_avg_busbw(tmp_path: Path) -> None:
    metrics, job = read(NcclTest(), tmp_path, "nccl_all_reduce.txt")
    rows = csv_rows(job / "nccl.csv")
    assert len(rows) == 26 and rows[0]["Size (B)"] == "128" and rows[-1]["Size (B)"] == "4294967296"
    in_place = [float(r["Time (us) In-place"]) for r in rows]
    out_of_place = [float(r["Time (us) Out-of-place"]) for r in rows]
    assert metrics["default"] == metrics["latency-in-place"] == pytest.approx(sum(in_place) / 26)
    assert metrics["latency-out-of-place"] == pytest.approx(sum(out_of_place) / 26)
    assert metrics["busbw"] == 136.5532  # "# Avg bus bandwidth    : 136.5532"
    algbw = [float(r[c]) for r in rows for c in ("Algbw (GB/s) Out-of-place", "Algbw (GB/s) In-place")]
    assert metrics["algbw"] == pytest.approx(sum(algbw) / len(algbw))
    assert json.loads((job / "metrics.json").read_text()) == metrics
    assert set(metrics) == set(NcclTest.metrics)


def test_nccl_wrong_values_fail_the_trial_naming_size_and_placement(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"3 wrong values \(#wrong\) at size 4096 B \(in-place\)"):
        read(NcclTest(), tmp_path, "nccl_wrong.txt")
    assert len(csv_rows(tmp_path / "job" / "nccl.csv")) == 8  # the table is kept to look at
    assert not (tmp_path / "job" / "metrics.json").exists()


def test_nccl_out_of_bounds_alone_fails_the_trial() -> None:
    good = (DATA / "nccl_all_reduce.txt").read_text()
    text = good.replace("Out of bounds values : 0 OK", "Out of bounds values : 2 FAILED")
    assert nccl_parse.verdict(nccl_parse.parse(text)) == "nccl-tests reported Out of bounds values: 2"


def test_nccl_truncated_table_fails_with_the_last_size_and_the_cut_line(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError) as caught:
        read(NcclTest(), tmp_path, "nccl_truncated.txt")
    message = str(caught.value)
    assert "stops after 12 rows (last size 262144 B)" in message
    assert "killed or crashed" in message and "1048576" in message


def test_nccl_nan_and_na_cells_are_kept_in_the_table_but_left_out_of_the_means(tmp_path: Path) -> None:
    metrics, job = read(NcclTest(), tmp_path, "nccl_nan.txt")
    rows = csv_rows(job / "nccl.csv")
    assert len(rows) == 6 and math.isnan(float(rows[2]["Algbw (GB/s) Out-of-place"]))
    assert rows[0]["#Wrong In-place"] == "N/A"  # validation off: kept as printed, not an error
    complete = [r for i, r in enumerate(rows) if i != 2]
    assert metrics["default"] == pytest.approx(sum(float(r["Time (us) In-place"]) for r in complete) / 5)
    assert all(math.isfinite(v) for v in metrics.values())


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "printed nothing"),
        ("NCCL failure common.cu:1017 'unhandled cuda error'\n", "no nccl-tests results table"),
        ("# Avg bus bandwidth    : 1.0\n", "no nccl-tests results table"),
    ],
)
def test_nccl_output_without_a_table_is_a_failure_not_a_crash(tmp_path: Path, text: str, reason: str) -> None:
    job = job_with(tmp_path, None)
    (job / "stdout.txt").write_text(text)
    with pytest.raises(WorkloadError, match=reason):
        NcclTest().read_metrics(job)


def test_nccl_missing_stdout_is_a_failure(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"no stdout\.txt"):
        NcclTest().read_metrics(job_with(tmp_path, None))


def test_nccl_parse_survives_any_line() -> None:
    junk = "1 2 3\n99999999999999999999 x y z w v u t s r q p o\n12 abc float sum -1 1 2 3 0 4 5 6 0\n\x00\n"
    result = nccl_parse.parse(junk)
    assert result.rows == [] and result.partial_line  # nothing usable, nothing raised


# -- ucc_perftest ----------------------------------------------------------------------------


def test_ucc_metrics_are_the_first_sizes_values(tmp_path: Path) -> None:
    metrics, job = read(UCCTest(), tmp_path, "ucc_alltoall.txt")
    assert metrics == {
        "default": 11.5, "time-avg": 11.5, "time-min": 10.7, "time-max": 12.42,
        "bw-avg": 0.01, "bw-max": 0.01, "bw-min": 0.01,
    }  # fmt: skip
    rows = csv_rows(job / "ucc.csv")
    assert len(rows) == 22 and rows[-1]["Size (B)"] == str(8 * 1024 * 1024 * 16)


def test_ucc_nan_first_row_is_skipped(tmp_path: Path) -> None:
    metrics, _ = read(UCCTest(), tmp_path, "ucc_nan.txt")
    assert metrics["time-avg"] == 11.5 and metrics["bw-avg"] == 0.01  # the 128 B row, the first complete one


def test_ucc_truncated_output_fails(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="cut short after 5 rows"):
        read(UCCTest(), tmp_path, "ucc_truncated.txt")


# -- OSU -------------------------------------------------------------------------------------


def test_osu_full_latency_table_metrics_come_from_the_largest_size(tmp_path: Path) -> None:
    metrics, job = read(OSUBench(), tmp_path, "osu_allreduce.txt")
    assert metrics == {"default": 2.94, "avg_lat": 2.94, "min_lat": 2.64, "max_lat": 3.23}
    rows = csv_rows(job / "osu_bench.csv")
    assert list(rows[0]) == ["size", "avg_lat", "min_lat", "max_lat", "iterations"]
    assert [r["size"] for r in rows] == [str(2**i) for i in range(11)]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("osu_bw.txt", {"default": 24500.0, "mb_sec": 24500.0}),
        ("osu_mbw_mr.txt", {"default": 16793.6, "mb_sec": 16793.6, "messages_sec": 4100000.0}),
    ],
)
def test_osu_bandwidth_tables(tmp_path: Path, output: str, expected: dict[str, float]) -> None:
    metrics, _ = read(OSUBench(), tmp_path, output)
    assert metrics == expected


def test_osu_truncated_output_fails(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="cut short after 6 rows: '64'"):
        read(OSUBench(), tmp_path, "osu_truncated.txt")


def test_osu_output_without_header_fails(tmp_path: Path) -> None:
    job = job_with(tmp_path, None)
    (job / "stdout.txt").write_text("[node-001:12345] *** An error occurred in MPI_Init\n")
    with pytest.raises(WorkloadError, match=r"no OSU results table \('# Size"):
        OSUBench().read_metrics(job)
