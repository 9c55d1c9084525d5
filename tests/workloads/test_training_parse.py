"""MegatronRun's and JaxToolbox's metrics and failures, from logs in the tools' own formats (``data/``).

Megatron: ``megatron_{good,oom,nccl_timeout,truncated}.txt`` (the job's stdout). Paxml: ``jax_*_error-0.txt``
(one rank's stderr, as CloudAI's ``error-%j-%n-%t.txt``). A failed job gets the log's fatal line as its reason
(``finish_job``): "out of memory" for CUDA and XLA OOM, so an agent learns the point is too big.
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from cloudai.errors import WorkloadError
from cloudai.jobs.spec import finish_job
from cloudai.systems.base import Job, JobSpec, JobStatus
from cloudai.workloads.base import Resources
from cloudai.workloads.jax_toolbox import JaxToolboxGPT, JaxToolboxGrok
from cloudai.workloads.megatron_run import MegatronRun
from cloudai.workloads.training_log import OUT_OF_MEMORY, fatal_error, median_after_warmup, steady

DATA = Path(__file__).resolve().parent / "data"
TIMES_MS = [4102.7, 1650.3, 1512.8, 1498.1, 1503.6, 1495.2, 1501.9, 1497.4, 1499.8, 1502.1, 1496.5, 1500.7, 1498.9,
            1503.3, 1497.6]  # fmt: skip
PAX_STEPS = [
    58.913204,
    2.704113,
    1.193882,
    1.190275,
    1.191406,
    1.189911,
    1.190733,
    1.192046,
    1.190118,
    1.191502,
    1.188907,
    1.190561,
    1.189742,
    1.191083,
    1.190267,
    1.189615,
    1.190904,
    1.190022,
    1.191377,
    1.189858,
]


def megatron_job(tmp_path: Path, fixture: str) -> Path:
    shutil.copy(DATA / fixture, tmp_path / "stdout.txt")
    return tmp_path


def jax_job(tmp_path: Path, fixture: str) -> Path:
    shutil.copy(DATA / fixture, tmp_path / "error-41-node-001-0.txt")
    return tmp_path


def test_megatron_metrics_from_a_good_log(tmp_path: Path) -> None:
    metrics = MegatronRun().read_metrics(megatron_job(tmp_path, "megatron_good.txt"))
    assert metrics["default"] == pytest.approx(statistics.fmean(TIMES_MS[-10:]))  # CloudAI's: mean of the last 10
    assert metrics["iteration-time"] == metrics["default"]
    step_s = statistics.median(TIMES_MS[7:]) / 1000  # 15 iterations: the first 7 are warm-up (at most half)
    assert metrics["step_time_s"] == pytest.approx(step_s)
    assert metrics["tokens_per_s"] == pytest.approx(16 * 4096 / step_s)  # global batch x seq_length / step
    assert metrics["tflops_per_gpu"] == pytest.approx(
        statistics.median([501.9, 501.1, 500.3, 502.2, 500.8, 501.4, 499.9, 501.8])
    )
    assert metrics["peak_memory_gb"] == pytest.approx(63488 * 2**20 / 1e9)  # the largest "max reserved", MiB
    assert metrics["loss"] == pytest.approx(8.2871)
    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics
    assert set(metrics) == set(MegatronRun.metrics)


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [
        ("megatron_oom.txt", OUT_OF_MEMORY),
        ("megatron_nccl_timeout.txt", "NCCL timeout"),
        ("megatron_truncated.txt", "the log stops at iteration 7/15 (truncated)"),
    ],
)
def test_megatron_failed_logs_say_why(tmp_path: Path, fixture: str, reason: str) -> None:
    with pytest.raises(WorkloadError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        MegatronRun().read_metrics(megatron_job(tmp_path, fixture))


def test_megatron_without_iterations_fails(tmp_path: Path) -> None:
    (tmp_path / "stdout.txt").write_text("Some random log output without iteration metrics\nStarting training...\n")
    with pytest.raises(WorkloadError, match="no Megatron iteration line"):
        MegatronRun().read_metrics(tmp_path)


@pytest.mark.parametrize(
    ("workload", "fixture", "place"),
    [
        (MegatronRun(), "megatron_oom.txt", megatron_job),
        (JaxToolboxGPT(), "jax_oom_error-0.txt", jax_job),
    ],
)
def test_an_oom_job_fails_with_out_of_memory(tmp_path: Path, workload, fixture: str, place) -> None:
    job_dir = place(tmp_path, fixture)
    job = Job(JobSpec("t", ("x",), job_dir), "1", JobStatus.FAILED, returncode=1)
    finish_job(job, workload)
    assert job.status is JobStatus.FAILED and job.reason == OUT_OF_MEMORY
    assert json.loads((job_dir / "job.json").read_text())["reason"] == OUT_OF_MEMORY


def test_jax_metrics_from_a_good_log(tmp_path: Path) -> None:
    metrics = JaxToolboxGPT().read_metrics(jax_job(tmp_path, "jax_gpt_error-0.txt"))
    assert metrics["default"] == metrics["step_time_s"] == pytest.approx(statistics.median(PAX_STEPS[10:]))  # 10
    assert metrics["loss"] == pytest.approx(10.8 - 0.12 * 20)


def test_jax_reads_the_jobs_own_stderr_without_cloudais_per_task_files(tmp_path: Path) -> None:
    shutil.copy(DATA / "jax_gpt_error-0.txt", tmp_path / "stderr.txt")
    assert JaxToolboxGrok().read_metrics(tmp_path)["step_time_s"] == pytest.approx(statistics.median(PAX_STEPS[10:]))


@pytest.mark.parametrize(
    ("fixture", "reason"),
    [
        ("jax_oom_error-0.txt", OUT_OF_MEMORY),
        ("jax_heartbeat_error-0.txt", "a peer process died (missing heartbeats)"),
        ("jax_nccl_error-0.txt", "NCCL error"),
        ("jax_truncated_error-0.txt", "stops before '[PAX STATUS]: E2E time' (truncated)"),
    ],
)
def test_jax_failed_logs_say_why(tmp_path: Path, fixture: str, reason: str) -> None:
    with pytest.raises(WorkloadError) as info:
        JaxToolboxGPT().read_metrics(jax_job(tmp_path, fixture))
    assert reason in str(info.value)


def test_jax_profile_stage_oom_is_the_failure_reason(tmp_path: Path) -> None:
    shutil.copy(DATA / "jax_oom_error-0.txt", tmp_path / "profile_stderr_0.txt")
    assert JaxToolboxGPT().failure_reason(tmp_path) == OUT_OF_MEMORY
    assert JaxToolboxGPT().failure_reason(tmp_path / "missing") is None


def test_training_log_helpers() -> None:
    assert steady([9.0, 1.0, 1.0]) == [1.0, 1.0]  # at most half is warm-up
    assert len(steady(list(range(100)))) == 90
    assert median_after_warmup([]) is None
    assert fatal_error("RuntimeError: CUDA error: out of memory\nNCCL error: unhandled") == OUT_OF_MEMORY
    assert fatal_error("iteration 1/ 10 | lm loss: 1.0 |") is None


@pytest.mark.parametrize(
    ("args", "nodes", "reason"),
    [
        ({}, 1, None),  # tp 2 x pp 1 on 8 GPUs, gbs 16 over dp 4
        (
            {"tensor_model_parallel_size": 3, "num_attention_heads": 33},
            1,
            "tp*pp*cp = 3*1*1 = 3 does not divide the 8 GPUs",
        ),
        ({"pipeline_model_parallel_size": 3}, 1, "num_layers (32) is not divisible by pipeline_model_parallel_size"),
        ({"num_attention_heads": 30, "tensor_model_parallel_size": 4}, 1, "num_attention_heads (30)"),
        ({"global_batch_size": 12, "micro_batch_size": 2}, 2, "global_batch_size (12) is not divisible by"),
        ({"context_parallel_size": 2, "tensor_model_parallel_size": 8}, 1, "= 16 does not divide the 8 GPUs"),
    ],
)
def test_megatron_constraint(args: dict, nodes: int, reason: str | None) -> None:
    full = {"docker_image_url": "img", "run_script": "/w/run.py", **args}
    got = MegatronRun().constraint(full, Resources(nodes, 8))
    assert got is None if reason is None else reason in (got or "")


def test_jax_constraint_is_the_device_mesh() -> None:
    grok = JaxToolboxGrok()
    assert grok.constraint({"docker_image_url": "i"}, Resources(8, 8)) is None  # ici 8 x dcn 8 = 64 GPUs
    assert "holds 64 devices, the job has 16 GPUs" in (
        grok.constraint({"docker_image_url": "i"}, Resources(2, 8)) or ""
    )
    gpt = {"docker_image_url": "i", "fdl_config": "c", "fdl": {"ici_mesh_shape": "'[1, 4, 2]'"}}
    assert JaxToolboxGPT().constraint(gpt, Resources(1, 8)) is None
    assert JaxToolboxGPT().constraint(gpt, Resources(1, None)) is None  # GPUs unknown: no rule


def test_megatron_progress_is_the_headline_metric_as_the_run_goes(tmp_path: Path) -> None:
    job = megatron_job(tmp_path, "megatron_truncated.txt")  # 7 iterations and a line torn by the kill
    points = MegatronRun().progress(job)
    assert [step for step, _ in points] == list(range(1, 8))
    assert points[-1][1] == pytest.approx(statistics.fmean(TIMES_MS[:7]))
    shutil.copy(DATA / "megatron_good.txt", job / "stdout.txt")
    assert MegatronRun().progress(job)[-1][1] == pytest.approx(MegatronRun().read_metrics(job)["default"])
    assert MegatronRun().progress(tmp_path / "nothing") == []


def test_run_sh_heredoc_cannot_be_ended_by_an_argument(tmp_path: Path) -> None:
    from cloudai.steps import Shell
    from cloudai.workloads.base import JobContext

    extra = "'--x=1\nCLOUDAI_RUN_SH\ntouch pwned'"
    job = JobContext(tmp_path, 1, extra_cmd_args=extra, env={"COMBINE_THRESHOLD": "8"})
    write = JaxToolboxGPT().steps({"docker_image_url": "i", "fdl_config": "c"}, job)[0]
    assert isinstance(write, Shell)
    assert write.text.splitlines()[0].endswith("<<'CLOUDAI_RUN_SH_'") and "\nCLOUDAI_RUN_SH_\nchmod" in write.text
