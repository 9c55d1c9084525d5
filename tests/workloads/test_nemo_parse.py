"""Metrics and failure reasons from the training tools' real log formats (``tests/workloads/data/``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cloudai.errors import WorkloadError
from cloudai.workloads import training_steps as training_log
from cloudai.workloads.nemo_run import NeMoRun

DATA = Path(__file__).resolve().parent / "data"


def job(tmp_path: Path, stdout: str | None, stderr: str | None, script: str = "") -> Path:
    for name, fixture in (("stdout.txt", stdout), ("stderr.txt", stderr)):
        if fixture is not None:
            shutil.copy(DATA / fixture, tmp_path / name)
    if script:
        (tmp_path / "cmd.sh").write_text(script)
    return tmp_path


def test_nemo_run_metrics_from_a_finished_run(tmp_path: Path) -> None:
    directory = job(tmp_path, "nemo_run_stdout.txt", "nemo_run_stderr.txt", "python x.py data.seq_length=8192\n")
    metrics = NeMoRun().read_metrics(directory)
    assert set(metrics) == {"default", "step-time", "step_time_s", "tflops_per_gpu", "tokens_per_s",
                            "peak_memory_gb", "loss"}  # fmt: skip
    steps = training_log.nemo_steps((DATA / "nemo_run_stdout.txt").read_text())
    assert len(steps) == 20 and steps[0].time_s > 3 * steps[5].time_s * 0.9  # the first step is the slow one
    assert metrics["default"] == pytest.approx(sum(s.time_s for s in steps[1:]) / 19)  # CloudAI's: all but the first
    assert steps[0].time_s > metrics["step_time_s"] > 10  # the median after warm-up leaves the first step out
    assert metrics["tokens_per_s"] == pytest.approx(128 * 8192 / metrics["step_time_s"])
    assert metrics["peak_memory_gb"] == pytest.approx(23.12, abs=0.01)
    assert metrics["loss"] == pytest.approx(10.55)
    assert (directory / "metrics.json").exists()


def test_nemo_run_without_the_command_has_no_tokens_per_second(tmp_path: Path) -> None:
    metrics = NeMoRun().read_metrics(job(tmp_path, "nemo_run_stdout.txt", "nemo_run_stderr.txt"))
    assert "tokens_per_s" not in metrics and "step_time_s" in metrics


def test_cuda_oom_is_out_of_memory(tmp_path: Path) -> None:
    directory = job(tmp_path, None, "nemo_run_oom_stderr.txt")
    (directory / "stdout.txt").write_text("[NeMo I nemo_logging:393] Experiments will be logged at /x\n")
    assert NeMoRun().failure_reason(directory) == "out of memory"
    with pytest.raises(WorkloadError, match=r"^out of memory$"):
        NeMoRun().read_metrics(directory)


def test_nccl_timeout_names_the_collective(tmp_path: Path) -> None:
    directory = job(tmp_path, "nemo_run_truncated_stdout.txt", "nemo_run_nccl_timeout_stderr.txt")
    reason = NeMoRun().failure_reason(directory)
    assert reason is not None and reason.startswith("NCCL timeout: WorkNCCL(SeqNum=2113, OpType=_ALLGATHER_BASE")


def test_a_truncated_log_fails_and_says_where_it_stopped(tmp_path: Path) -> None:
    directory = job(tmp_path, "nemo_run_truncated_stdout.txt", None)
    with pytest.raises(WorkloadError, match=r"stops after 7 steps \(last global_step 6\) without 'max_steps=N"):
        NeMoRun().read_metrics(directory)


def test_no_step_at_all_fails(tmp_path: Path) -> None:
    (tmp_path / "stdout.txt").write_text("[NeMo I nemo_logging:393] Using byte-level tokenization\n")
    with pytest.raises(WorkloadError, match="never logged a step"):
        NeMoRun().read_metrics(tmp_path)


def test_megatron_iteration_lines_and_memory_report() -> None:
    text = (
        " [2025-11-20 10:05:01] iteration        9/     100 | consumed samples:         1152 | elapsed time per "
        "iteration (ms): 5123.4 | throughput per GPU (TFLOP/s/GPU): 494.6 | learning rate: 1.4E-06 | global batch "
        "size:   128 | lm loss: 1.084E+01 | loss scale: 1.0 | grad norm: 12.3 |\n"
        "[Rank 0] (after 10 iterations) memory (MB) | allocated: 21234.5 | max allocated: 45678.9 | reserved: 47000.0"
        " | max reserved: 47000.0\n"
    )
    [step] = training_log.megatron_steps(text)
    assert (step.step, step.tflops_per_gpu, step.loss) == (9, 494.6, 10.84)
    assert step.time_s == pytest.approx(5.1234)
    assert step.peak_memory_bytes == 45678.9 * 2**20


def launcher_job(tmp_path: Path, fixture: str) -> Path:
    shutil.copy(DATA / fixture, tmp_path / "cloudai_megatron_bridge_launcher.log")
    return tmp_path


def test_megatron_bridge_metrics_from_its_launcher_log(tmp_path: Path) -> None:
    from cloudai.workloads.megatron_bridge import MegatronBridge

    metrics = MegatronBridge().read_metrics(launcher_job(tmp_path, "megatron_bridge_launcher.log"))
    steps = training_log.bridge_steps((DATA / "megatron_bridge_launcher.log").read_text())
    assert len(steps) == 20
    assert metrics["default"] == pytest.approx(sum(s.time_s for s in steps[-10:]) / 10)  # CloudAI's: last 10
    assert 4.0 < metrics["step_time_s"] < 4.1  # the 18.9 s first step is warm-up
    assert metrics["peak_memory_gb"] == pytest.approx(61032.8 * 2**20 / 1e9)
    assert metrics["loss"] == pytest.approx(10.7) and metrics["tflops_per_gpu"] > 600


def test_megatron_bridge_oom_and_missing_log(tmp_path: Path) -> None:
    from cloudai.workloads.megatron_bridge import MegatronBridge

    assert MegatronBridge().failure_reason(tmp_path) == "no cloudai_megatron_bridge_launcher.log was written: the " \
        "Megatron-Bridge launcher did not run"  # fmt: skip
    directory = launcher_job(tmp_path, "megatron_bridge_oom.log")
    assert MegatronBridge().failure_reason(directory) == "out of memory"
    with pytest.raises(WorkloadError, match="out of memory"):
        MegatronBridge().read_metrics(directory)


def test_nemo_launcher_metrics_from_its_training_log(tmp_path: Path) -> None:
    from cloudai.workloads.nemo_launcher import NeMoLauncher

    with pytest.raises(WorkloadError, match=r"no run/log-\*\.out"):
        NeMoLauncher().read_metrics(tmp_path)
    (tmp_path / "run").mkdir()
    shutil.copy(DATA / "nemo_launcher_log.out", tmp_path / "run" / "log-nemo-megatron-run_1234.out")
    metrics = NeMoLauncher().read_metrics(tmp_path)
    steps = training_log.nemo_steps((DATA / "nemo_launcher_log.out").read_text())
    assert len(steps) == 100 and steps[0].time_s == 14.2  # the list form: one step per element
    assert metrics["default"] == pytest.approx(sum(s.time_s for s in steps) / 100)  # CloudAI's report average
    assert 2.9 < metrics["step_time_s"] < 3.0


def test_a_caught_exception_in_a_finished_run_is_no_failure(tmp_path: Path) -> None:
    directory = job(tmp_path, "nemo_run_stdout.txt", "nemo_run_stderr.txt")
    with (directory / "stderr.txt").open("a") as f:
        f.write("[rank0]: ModuleNotFoundError: No module named 'apex'\n")  # logged, caught, harmless
    assert "step_time_s" in NeMoRun().read_metrics(directory)
    assert NeMoRun().failure_reason(directory) == "ModuleNotFoundError: No module named 'apex'"  # had it failed


def test_nemo_run_progress_is_the_steps_logged_so_far(tmp_path: Path) -> None:
    directory = job(tmp_path, "nemo_run_truncated_stdout.txt", None)  # 7 whole steps, the 8th cut mid-line
    progress = NeMoRun().progress(directory)
    assert [step for step, _ in progress] == [1, 2, 3, 4, 5, 6] and all(t > 0 for _, t in progress)


def test_nemo_launcher_log_that_is_not_a_file_is_a_workload_error(tmp_path: Path) -> None:
    """A job may make its log ``/dev/zero``: the trial fails with that reason, nothing else escapes (the contract)."""
    from cloudai.workloads.nemo_launcher import NeMoLauncher

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "log-x_1.out").symlink_to("/dev/zero")
    with pytest.raises(WorkloadError, match=r"log-x_1\.out refused: not a regular file"):
        NeMoLauncher().read_metrics(tmp_path)
