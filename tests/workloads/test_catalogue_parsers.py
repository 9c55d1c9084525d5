"""The parsers of the catalogue's workloads on their tools' real output (``data/``): complete, truncated, failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudai.errors import WorkloadError
from cloudai.workloads.ddlb import DDLBTest

DATA = Path(__file__).resolve().parent / "data"


def job(tmp_path: Path, fixture: str, text: str | None = None) -> Path:
    (tmp_path / "stdout.txt").write_text(text if text is not None else (DATA / fixture).read_text())
    return tmp_path


def test_ddlb_results_table_gives_throughput_and_times(tmp_path: Path) -> None:
    metrics = DDLBTest().read_metrics(job(tmp_path, "ddlb_tp_columnwise.txt"))
    assert metrics == {"default": 12.345678, "throughput_tflops": 12.345678, "mean_time_ms": 0.021745,
                       "min_time_ms": 0.0215, "max_time_ms": 0.0223}  # fmt: skip
    row = (tmp_path / "ddlb.csv").read_text().splitlines()[1]
    assert row.startswith('1024,128,1024,"pytorch_0 (backend=nccl, order=AG_before)",12.345678,')


def test_ddlb_cut_short_and_error_runs_fail_with_why(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="no complete row"):
        DDLBTest().read_metrics(job(tmp_path, "ddlb_truncated.txt"))
    error = (DATA / "ddlb_truncated.txt").read_text() + "RuntimeError: NCCL Error 6: remote process exited\n"
    with pytest.raises(WorkloadError, match="ddlb: RuntimeError: NCCL Error 6"):
        DDLBTest().read_metrics(job(tmp_path, "", error))
    assert DDLBTest().failure_reason(job(tmp_path, "", "Running tp_columnwise\n")) == (
        "ddlb printed no 'Benchmark Results' (the run did not finish; see stderr.txt)"
    )


def test_nixlbench_table_gives_cloudais_latency_and_the_bandwidth(tmp_path: Path) -> None:
    from cloudai.workloads.nixl_bench import NIXLBench

    metrics = NIXLBench().read_metrics(job(tmp_path, "nixlbench_ucx.txt"))  # UCX log lines inside the table
    assert metrics["default"] == metrics["latency"] == pytest.approx((4.5 + 5.5 + 47.9 + 2843.5) / 4)
    assert metrics["bw_gb_sec_max"] == 23.60124
    assert (tmp_path / "nixlbench.csv").read_text().splitlines()[1] == "4096,1,4.5,0.912233"


def test_nixlbench_without_rows_fails_and_kvbench_reads_the_legacy_layout(tmp_path: Path) -> None:
    from cloudai.workloads.nixl_bench import NIXLBench
    from cloudai.workloads.nixl_kvbench import NIXLKVBench

    with pytest.raises(WorkloadError, match="no nixlbench results table"):
        NIXLBench().read_metrics(job(tmp_path, "nixlbench_truncated.txt"))
    metrics = NIXLKVBench().read_metrics(job(tmp_path, "nixl_kvbench_profile.txt"))
    assert metrics["default"] == pytest.approx((180.213 + 351.884) / 2)
    assert metrics["bw_gb_sec"] == pytest.approx((23.2933 + 23.8411) / 2)


def test_moe_benchmark_reads_every_backends_results_json(tmp_path: Path) -> None:
    from cloudai.workloads.moe_benchmark import MoEBenchmark

    good = tmp_path / "results" / "benchmark_16_ranks_20261127_101500_standard"
    good.mkdir(parents=True)
    (good / "results.json").write_text((DATA / "moe_benchmark_results.json").read_text())
    torn = tmp_path / "benchmark_16_ranks_20261127_101700_standard"  # the job was killed while writing it
    torn.mkdir()
    (torn / "results.json").write_text((DATA / "moe_benchmark_truncated.json").read_text())
    metrics = MoEBenchmark().read_metrics(tmp_path)
    assert metrics == {"default": 40.1, "bus_bw_avg": 40.1, "bus_bw_max": 41.9, "global_bw": 329.6,
                       "time_s": pytest.approx(0.001272)}  # fmt: skip


def test_moe_benchmark_without_results_says_what_it_found(tmp_path: Path) -> None:
    from cloudai.workloads.moe_benchmark import MoEBenchmark

    torn = tmp_path / "benchmark_16_ranks_20261127_101700_standard"
    torn.mkdir()
    (torn / "results.json").write_text((DATA / "moe_benchmark_truncated.json").read_text())
    with pytest.raises(WorkloadError, match=r"1 results\.json file"):
        MoEBenchmark().read_metrics(tmp_path)


def test_chakra_replay_latency_summary_per_collective(tmp_path: Path) -> None:
    from cloudai.workloads.chakra_replay import ChakraReplay

    metrics = ChakraReplay().read_metrics(job(tmp_path, "chakra_replay.txt"))
    assert metrics == {"default": pytest.approx(92.59), "latency_avg_us": pytest.approx(92.59),
                       "latency_p95_us": 201.7, "latency_max_us": 310.2}  # fmt: skip
    assert (tmp_path / "chakra_replay.csv").read_text().splitlines()[1:] == [
        "all_reduce,120,12345.6,310.2,48.1,102.88,98.4,201.7",
        "all_gather,120,9876.0,250.0,40.0,82.3,80.1,150.2",
    ]
    with pytest.raises(WorkloadError, match="no 'Replayed N op' latency summary"):
        ChakraReplay().read_metrics(job(tmp_path, "chakra_replay_truncated.txt"))


def test_chakra_replay_command_and_trace_mount() -> None:
    from cloudai.workloads.base import JobContext
    from cloudai.workloads.chakra_replay import ChakraReplay

    args = {"docker_image_url": "img", "trace_path": "/traces", "comm_type": "pytorch-dist"}
    context = JobContext(Path("/j"), extra_cmd_args={"--profiler": ""})
    assert ChakraReplay().argv(args, context) == [
        "comm_replay", "--trace-type", "et", "--trace-path", "/traces", "--num-replays", "1",
        "--comm-type", "pytorch-dist", "--profiler",
    ]  # fmt: skip
    assert ChakraReplay().container_mounts(args, context) == ("/traces:/traces",)


def test_nixl_ep_bandwidth_over_every_node_log(tmp_path: Path) -> None:
    from cloudai.workloads.nixl_ep import NixlEP

    (tmp_path / "nixl-ep-node-0.log").write_text((DATA / "nixl_ep_node_0.log").read_text())
    (tmp_path / "nixl-ep-node-1-phase-1.log").write_text((DATA / "nixl_ep_node_1_truncated.log").read_text())
    metrics = NixlEP().read_metrics(tmp_path)  # the cut-short line of node 1 is not a sample
    assert metrics == {"default": pytest.approx(40.1666667), "avg_t_us": pytest.approx(834.8), "min_t_us": 790.1,
                       "max_t_us": 910.0}  # fmt: skip
    (tmp_path / "nixl-ep-node-0.log").unlink()
    with pytest.raises(WorkloadError, match="no 'Dispatch \\+ combine bandwidth' line"):
        NixlEP().read_metrics(tmp_path)


def test_nixl_ep_plan_that_does_not_fit_is_a_constraint() -> None:
    from cloudai.workloads.base import Resources
    from cloudai.workloads.nixl_ep import NixlEP

    args = {"docker_image_url": "img", "plan": "[[0, 1], [0, 1, 2, 3, 4]]", "num_processes_per_node": 2}
    assert NixlEP().constraint(args, Resources(num_nodes=2)) == "the plan needs 5 workers; 2 node(s) x 2 hold 4"
    assert NixlEP().constraint(args, Resources(num_nodes=3)) is None
