"""Pruning on the real local Slurm: the pruned trial's job is scancel'ed (gone from squeue) and recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from tests.slurm.conftest import SYSTEM_TOML, squeue_ids

from cloudai.cli import cli
from cloudai.workloads.synthetic import Synthetic

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("slurm_ready")]

TEST = """name = "x"
test_template_name = "Synthetic"
agent = "optuna"
agent_steps = 5
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
[agent_config]
seed = 0
n_startup_trials = 2
pruner = { type = "percentile", percentile = 10.0, n_startup_trials = 2, poll_s = 0.2 }
[cmd_args]
duration_s = 2
progress_chunks = 8
message_size = [1048576, 268435456]
num_channels = [1, 2, 4, 8, 16]
algo = ["ring", "tree"]
"""


def test_pruned_job_is_scancelled_and_recorded(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "x.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n')
    args = ["run", "--system-config", str(SYSTEM_TOML), "--tests-dir", str(tmp_path / "tests"),
            "--test-scenario", str(tmp_path / "s.toml"), "--output-dir", str(tmp_path / "out")]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out").iterdir()
    frame = pd.read_csv(run_dir / "t" / "0" / "trajectory.csv")
    pruned = frame[frame.status == "pruned"]
    assert len(frame[frame.status != "cached"]) == 5 and len(pruned) >= 1, frame[["step", "status"]]
    queued = squeue_ids(tmp_path)
    for step in pruned.step:
        job = json.loads((run_dir / "t" / "0" / str(step) / "job.json").read_text())
        assert job["status"] == "cancelled" and job["reason"] == "pruned"
        assert job["job_id"] and job["job_id"] not in queued  # scancel'ed: Slurm no longer runs it
        assert not (run_dir / "t" / "0" / str(step) / "metrics.json").exists()
        assert len(Synthetic().progress(run_dir / "t" / "0" / str(step))) < 8  # it stopped before its last chunk
