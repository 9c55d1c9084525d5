"""The system's Hugging Face cache (CloudAI's ``hf_home_path``) in serving jobs: where a system sets it, that
directory is what the job mounts and makes; a cluster without containers gets neither the mounts nor their
``HF_HOME``; a test's own ``HF_HOME`` wins; a path that would split the mounts is refused."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cloudai.cli import cli

HERE = Path(__file__).resolve().parent
SERVING = HERE / "cloudai_conf_serving" / "vllm" / "test"
DYNAMO = HERE / "cloudai_conf_dynamo" / "ai_dynamo" / "test"


def system(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "system.toml"
    path.write_text(
        f'name = "c"\nscheduler = "slurm"\ninstall_path = "{tmp_path / "install"}"\ndefault_partition = "p"\n'
        f'gpus_per_node = 8\n{extra}\n[[partitions]]\nname = "p"\n'
    )
    return path


def dry_run(tmp_path: Path, system_toml: Path, tests: Path, test_name: str, env: str = "") -> tuple[int, str]:
    """(exit code, the first script or the output) of one entry of ``test_name``."""
    tmp_path.mkdir(exist_ok=True)
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(f'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "{test_name}"\nnum_nodes = 2\n{env}')
    out = tmp_path / "out"
    args = ["dry-run", "--system-config", str(system_toml), "--tests-dir", str(tests), "--test-scenario"]
    result = CliRunner().invoke(cli, [*args, str(scenario), "--output-dir", str(out)])
    scripts = sorted(out.glob("*/*/*/sbatch.sh"))
    return result.exit_code, scripts[0].read_text() if scripts else result.output


def test_the_systems_hf_home_path_is_mounted_and_made(tmp_path: Path) -> None:
    hf = tmp_path / "shared hf"  # a space: one word on the mkdir line
    toml = system(tmp_path, f'hf_home_path = "{hf}"')
    code, vllm = dry_run(tmp_path / "a", toml, SERVING, "vllm")
    assert code == 0, vllm
    assert f",{hf}:/root/.cache/huggingface" in vllm and f"\nmkdir -p '{hf}'\n" in vllm
    assert "/install/huggingface" not in vllm
    code, dynamo = dry_run(tmp_path / "b", toml, DYNAMO, "vLLM")
    assert code == 0, dynamo
    assert f",{hf}:/cloudai_install/huggingface" in dynamo
    assert "\nexport HF_HOME=/cloudai_install/huggingface\n" in dynamo


def test_no_container_no_mount_and_a_tests_own_hf_home_wins(tmp_path: Path) -> None:
    code, host = dry_run(tmp_path / "a", system(tmp_path, 'container_runtime = "none"'), SERVING, "vllm")
    assert code == 0, host
    assert "--container-mounts" not in host and "HF_HOME" not in host  # runs on the host: its own cache
    env = '[Tests.extra_env_vars]\nHF_HOME = "/data/hf"\n'
    code, own = dry_run(tmp_path / "b", system(tmp_path), SERVING, "vllm", env)
    assert code == 0, own
    assert [line for line in own.splitlines() if "HF_HOME" in line] == ["export HF_HOME=/data/hf"]


def test_a_hf_home_path_with_a_comma_is_refused(tmp_path: Path) -> None:
    code, output = dry_run(tmp_path, system(tmp_path, 'hf_home_path = "/a,/:/host"'), SERVING, "vllm")
    assert code == 2 and "hf_home_path" in output and "'/a,/:/host'" in output, output
