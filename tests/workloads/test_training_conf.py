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


@pytest.mark.parametrize("gpu", ["b200", "gb200", "gb300", "h100"])
def test_megatron_bridge_test_files_verify(gpu: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_test")  # CloudAI's files leave hf_token empty: the environment gives it
    code, output = invoke("verify-configs", TRAINING / "experimental" / "megatron_bridge" / "test" / gpu)
    assert code == 0, output


def test_megatron_bridge_needs_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    code, output = invoke("verify-configs", TRAINING / "experimental" / "megatron_bridge" / "test" / "h100")
    assert code == 2 and "HF_TOKEN" in output


def test_megatron_bridge_scenario_with_its_own_git_repo_dry_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CloudAI's r0.3.0 scenario: the entry's ``[[Tests.git_repos]]`` replaces the test's (v0.3.0)."""
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    root = TRAINING / "experimental" / "megatron_bridge"
    scenario = root / "test_scenario" / "megatron_bridge_r0.3.0_qwen_30b.toml"
    code, output = invoke("dry-run", "--system-config", SYSTEM, "--tests-dir", root / "test" / "h100",
                          "--test-scenario", scenario, "--output-dir", tmp_path)  # fmt: skip
    assert code == 0, output
    [script] = tmp_path.glob("*/megatron_bridge_qwen_30b/0/sbatch.sh")
    text = script.read_text()
    assert "/Megatron-Bridge__r0.3.0/scripts/performance/setup_experiment.py " in text
    assert "-cb 'export PYTHONPATH=/opt/Megatron-Bridge/3rdparty/Megatron-LM:${PYTHONPATH}'" in text
    assert " -ng 16 -gn 8 " in text and " -vb true -m qwen -mr qwen3_30b_a3b " in text


def test_nemo_launcher_scenario_dry_runs_each_node_count(tmp_path: Path) -> None:
    """CloudAI's bf16 scenario: one test at 2..256 nodes, the larger ones with their own global batch."""
    root = TRAINING / "experimental"
    scenario = root / "test_scenario" / "nemo_launcher_nemotron_15b_bf16.toml"
    code, output = invoke("dry-run", "--system-config", SYSTEM, "--tests-dir", root / "test",
                          "--test-scenario", scenario, "--output-dir", tmp_path)  # fmt: skip
    assert code == 0, output
    scripts = {p.parent.parent.name: p.read_text() for p in tmp_path.glob("*/*/0/sbatch.sh")}
    assert len(scripts) == 6
    four = scripts["nemo_launcher_nemotron_15b_bf16_4_node"]
    assert " training.model.global_batch_size=128 " in four and " training.trainer.num_nodes=4 " in four
    assert " training=nemotron/nemotron_15b " in four and " env_vars.NVTE_FUSED_ATTN=1" in four
    assert """'container_mounts=["/path/to/nemotron_2_256k.model:/path/to/nemotron_2_256k.model"]'""" in four
    assert "srun" not in four  # the launcher runs in the batch shell and submits its own job


def test_megatron_bridge_token_from_the_environment_is_written_nowhere(tmp_path: Path) -> None:
    """``hf_token = ""`` with ``HF_TOKEN`` set: the script says ``-hf "${HF_TOKEN}"`` (the job inherits it); the
    token is in no file of the results dir (sbatch.sh, debug.log, run.json) and not on the terminal."""
    import os
    import subprocess
    import sys

    secret = "hf_SECRET_0f9e8d7c6b5a"
    root = TRAINING / "experimental" / "megatron_bridge"
    scenario = root / "test_scenario" / "megatron_bridge_r0.3.0_qwen_30b.toml"
    done = subprocess.run(
        [sys.executable, "-m", "cloudai", "dry-run", "-v", "--system-config", str(SYSTEM), "--tests-dir",
         str(root / "test" / "h100"), "--test-scenario", str(scenario), "--output-dir", str(tmp_path)],
        env={**os.environ, "HF_TOKEN": secret}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout + done.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "debug.log" for p in files)
    assert [p for p in files if secret in p.read_text(errors="replace")] == []
    [script] = tmp_path.glob("*/megatron_bridge_qwen_30b/0/sbatch.sh")
    assert ' -hf "${HF_TOKEN}" ' in script.read_text()
