"""CloudAI's own training files (``cloudai_conf_training/``, verbatim, CloudAI's ``conf/`` layout) verify and
dry-run unchanged on CloudAI's ``example_slurm_cluster.toml``, hooks included (``--hook-dir``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.workloads.conftest import CONF

from cloudai.cli import cli

TRAINING = Path(__file__).resolve().parent / "cloudai_conf_training"
SYSTEM = CONF / "system" / "example_slurm_cluster.toml"
HOOKS = CONF / "hook"  # CloudAI's conf/hook: nccl_test


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("tests_dir", ["common/test", "release/nemo_acceptance/test"])
def test_every_training_test_file_verifies(tests_dir: str) -> None:
    code, output = invoke("verify-configs", TRAINING / tests_dir)
    assert code == 0, output
    assert " 0 problem(s)" in output


def test_cloudais_nemo_run_dse_scenario_dry_runs_on_the_example_cluster(tmp_path: Path) -> None:
    """Tests inline in the scenario, ``time_limit = "00:60:00"``, micro_batch_size swept, NUMA control on."""
    scenario = TRAINING / "common" / "test_scenario" / "dse_nemo_run_llama3_8b.toml"
    code, output = invoke("dry-run", "--system-config", SYSTEM, "--test-scenario", scenario, "--output-dir", tmp_path)
    assert code == 0, output
    assert "data.micro_batch_size: 2 choices [1, 2]" in output
    scripts = sorted(tmp_path.glob("*/dse_nemo_run_llama3_8b/0/*/sbatch.sh"))
    assert len(scripts) == 2 and "#SBATCH --time=01:00:00\n" in scripts[0].read_text()
    srun = scripts[1].read_text().splitlines()[-1]
    assert " bash -c 'exec numactl --cpunodebind=$((SLURM_LOCALID/4)) --membind=$((SLURM_LOCALID/4)) \"$@\"' " in srun
    assert " trainer.plugins.fp8=hybrid " in srun and " data.micro_batch_size=2 " in srun


def test_nemo_acceptance_scenario_with_a_pre_test_hook(tmp_path: Path) -> None:
    """CloudAI's release scenario (``num_nodes = "1"``) with CloudAI's ``nccl_test`` hook from ``--hook-dir``."""
    text = (TRAINING / "release" / "nemo_acceptance" / "test_scenario" / "nemo_run_llama3_8b.toml").read_text()
    scenario = tmp_path / "nemo_run_llama3_8b.toml"
    scenario.write_text(
        text.replace('name = "nemo_run_llama3_8b"', 'name = "nemo_run_llama3_8b"\npre_test = "nccl_test"', 1)
    )
    out = tmp_path / "results"
    tests = TRAINING / "release" / "nemo_acceptance" / "test"
    code, output = invoke("dry-run", "--system-config", SYSTEM, "--tests-dir", tests, "--hook-dir", HOOKS,
                          "--test-scenario", scenario, "--output-dir", out)  # fmt: skip
    assert code == 0, output
    [hook] = out.glob("*/pre_test.Tests.1/0/sbatch.sh")
    assert "all_gather_perf_mpi" in hook.read_text()
    [main] = out.glob("*/nemo_run_llama3_8b/0/sbatch.sh")
    assert "trainer.strategy.context_parallel_size=2 " in main.read_text()
