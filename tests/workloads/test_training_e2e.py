"""End to end: a MegatronRun parallelism sweep run by ``cloudai run`` on the standalone system.

The run script is a stand-in (``bin/megatron_pretrain.py``: no GPU here) that prints Megatron's log format with
step times from a simple model of the knobs, and dies with PyTorch's CUDA OOM error when the micro-batch does not
fit. The loop under test is ours: the grid skips the points the rule refuses (tp=3 does not split 32 heads) before
they cost a step, the OOM point is ``failed`` with "out of memory", the metrics come from the log, the best is the
fastest.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.workloads.conftest import BIN, HERE

from cloudai.cli import cli

TEST = f"""name = "megatron_dse"
test_template_name = "MegatronRun"
[cmd_args]
docker_image_url = "nvcr.io/nvidia/megatron:24.09"
run_script = "{BIN}/megatron_pretrain.py"
tensor_model_parallel_size = [1, 2, 3]
micro_batch_size = [1, 4]
train_iters = 12
"""
SCENARIO = 'name = "s"\n[[Tests]]\nid = "Tests.1"\ntest_name = "megatron_dse"\nnum_nodes = 1\n'


def sweep(tmp_path: Path, test: str, *system: str) -> tuple[str, Path, dict[tuple[int, int], dict[str, str]]]:
    """Run the sweep; the output, the trial dir and the trajectory rows by (tp, mbs)."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "megatron_dse.toml").write_text(test)
    (tmp_path / "s.toml").write_text(SCENARIO)
    args = ["run", *system, "--tests-dir", str(tests), "--test-scenario", str(tmp_path / "s.toml")]
    result = CliRunner().invoke(cli, [*args, "--output-dir", str(tmp_path / "out")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [trial_dir] = (tmp_path / "out").glob("s_*/Tests.1/0")
    rows = list(csv.DictReader((trial_dir / "trajectory.csv").open()))
    actions = [json.loads(r["action"]) for r in rows]
    points = {(a["tensor_model_parallel_size"], a["micro_batch_size"]): r for a, r in zip(actions, rows, strict=True)}
    return result.output, trial_dir, points


def test_megatron_sweep_skips_invalid_points_records_oom_and_finds_the_fastest(tmp_path: Path) -> None:
    output, trial_dir, by_point = sweep(tmp_path, TEST)
    assert by_point[(1, 4)]["status"] == "failed" and by_point[(1, 4)]["reason"] == "exit code 1: out of memory"
    assert (3, 1) not in by_point and (3, 4) not in by_point and "6 points, 4 valid" in output  # skipped, not run
    assert [by_point[p]["status"] for p in ((1, 1), (2, 1), (2, 4))] == ["ok"] * 3
    step = by_point[(2, 4)]["step"]
    metrics = json.loads((trial_dir / step / "metrics.json").read_text())
    assert metrics["default"] == 1854.4 and metrics["step_time_s"] == 1.8544  # 1500 ms x 1.15 (tp 2) x 1.075 (mbs 4)
    assert metrics["tokens_per_s"] == 16 * 4096 / 1.8544
    assert "Best of Tests.1: " in output and '"tensor_model_parallel_size": 2' in output
    assert "micro_batch_size = 4" in (trial_dir / "best.toml").read_text()
    assert f"is step {step}: iteration-time 1854.4 ms (reward 0.000539258) (a single measurement)" in output
    table = output[output.index("┏") :]  # the best in step time, not as 1/x
    assert f"1854 ms (step {step})" in table and "best reward" not in table and "0.000539" not in table


@pytest.mark.slurm
def test_megatron_sweep_on_the_local_slurm(tmp_path: Path) -> None:
    test = TEST.replace("[1, 2, 3]", "[1, 3]")
    _, trial_dir, by_point = sweep(tmp_path, test, "--system-config", str(HERE / "slurm_system.toml"))
    assert by_point[(1, 4)]["status"] == "failed" and by_point[(1, 4)]["reason"].endswith("out of memory")
    assert by_point[(1, 1)]["status"] == "ok" and (3, 1) not in by_point and len(by_point) == 2
    script = (trial_dir / by_point[(1, 1)]["step"] / "sbatch.sh").read_text()
    assert f"python {BIN}/megatron_pretrain.py --global-batch-size 16 " in script
