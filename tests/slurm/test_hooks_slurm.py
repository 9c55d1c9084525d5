"""``pre_test``/``post_test`` hooks on the real local Slurm: each hook entry is its own sbatch job,
queued behind (or ahead of) the tests with Slurm's own ``--dependency``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import CONF, cloudai
from tests.slurm.conftest import SYSTEM_TOML

pytestmark = pytest.mark.slurm


def test_hooks_run_as_slurm_jobs_around_the_tests(tmp_path: Path) -> None:
    scenario = CONF / "common" / "test_scenario" / "sleep_with_hooks.toml"
    done = cloudai("run", "--system-config", SYSTEM_TOML, "--tests-dir", CONF / "common" / "test",
                   "--test-scenario", scenario, "--output-dir", tmp_path, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    jobs = {p.parent.parent.name: json.loads(p.read_text()) for p in run.glob("*/0/job.json")}
    assert {k: v["status"] for k, v in jobs.items()} == dict.fromkeys(
        ["pre_test.Tests.1", "Tests.1", "Tests.2", "post_test.Tests.1"], "ok"
    )
    pre = jobs["pre_test.Tests.1"]["job_id"]
    script = (run / "Tests.1" / "0" / "sbatch.sh").read_text()
    assert f"#SBATCH --dependency=afterany:{pre}" in script
    post = (run / "post_test.Tests.1" / "0" / "sbatch.sh").read_text()
    assert f"afterany:{jobs['Tests.1']['job_id']}" in post and f"{jobs['Tests.2']['job_id']}" in post
    assert jobs["pre_test.Tests.1"]["ended_at"] <= jobs["Tests.1"]["started_at"]
    assert (run / "post_test.Tests.1" / "0" / "stdout.txt").read_text().startswith("node_check on ")
