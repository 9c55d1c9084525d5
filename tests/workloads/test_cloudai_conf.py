"""CloudAI's own files for these workloads (``cloudai_conf/``, verbatim) load, verify, dry-run and run unchanged.

CloudAI's ``nccl_test`` and ``dse_nccl_all_gather`` scenarios name the ``pre_test``/``post_test``
hook scenario ``nccl_test``: ``cloudai_conf/hook/`` holds CloudAI's hook files, found next to the
scenario's dir as CloudAI's ``conf/hook`` is. Around the DSE the hooks are plain jobs before and
after the sweep, and a failed pre-test keeps the sweep from starting (``cloudai.run.hooks``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.workloads.conftest import CONF, HERE

from cloudai.cli import cli

TESTS = CONF / "test"
SYSTEM = CONF / "system" / "example_slurm_cluster.toml"
SCENARIOS = CONF / "test_scenario"
WITH_HOOKS = ("nccl_test.toml", "dse_nccl_all_gather.toml")


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def test_every_test_file_verifies() -> None:
    code, output = invoke("verify-configs", TESTS)
    assert code == 0, output
    assert f"{len(list(TESTS.glob('*.toml')))} file(s) checked, 0 problem(s)" in output


def test_cloudais_example_slurm_cluster_loads_every_field() -> None:
    from cloudai.config.slurm import SlurmSystemConfig
    from cloudai.config.system import load_system

    config = load_system(SYSTEM)
    assert isinstance(config, SlurmSystemConfig)
    assert (config.default_partition, config.mpi, config.gpus_per_node, config.ntasks_per_node) == (
        "partition_1", "pmix", 8, 8
    )  # fmt: skip
    assert [len(p.groups) for p in config.partitions] == [4, 0]
    assert config.global_env_vars["MELLANOX_VISIBLE_DEVICES"] == "0,3,4,5,6,9,10,11"


@pytest.mark.parametrize(("name", "scripts"), [("nccl_test.toml", 24), ("ucc_test.toml", 5), ("osu_test.toml", 1)])
def test_scenario_verifies_and_dry_runs_on_the_example_cluster(tmp_path: Path, name: str, scripts: int) -> None:
    scenario = SCENARIOS / name
    code, output = invoke("verify-configs", "--tests-dir", TESTS, scenario)
    assert code == 0, output
    out = tmp_path / "results"
    code, output = invoke("dry-run", "--system-config", SYSTEM, "--tests-dir", TESTS, "--test-scenario", scenario,
                          "--output-dir", out)  # fmt: skip
    assert code == 0, output
    hooks = sorted(out.glob("*/*_test.Tests.1/0/sbatch.sh"))
    assert [p.parent.parent.name for p in hooks] == (["post_test.Tests.1", "pre_test.Tests.1"] if name in WITH_HOOKS
                                                     else [])  # fmt: skip
    written = sorted(set(out.glob("*/*/0/sbatch.sh")) - set(hooks))
    assert len(written) == scripts
    assert all("#SBATCH -N 2\n" in p.read_text() for p in written)  # num_nodes = "2"


def test_dse_scenario_dry_runs_its_grid_between_its_hooks(tmp_path: Path) -> None:
    out = tmp_path / "results"
    code, output = invoke("dry-run", "--system-config", SYSTEM, "--tests-dir", TESTS, "--test-scenario",
                          SCENARIOS / "dse_nccl_all_gather.toml", "--output-dir", out)  # fmt: skip
    assert code == 0, output
    assert "extra_env_vars.NCCL_TESTS_SPLIT_MASK: 2 choices ['0x7', '0x0']" in output
    masks = [p.read_text().count("export NCCL_TESTS_SPLIT_MASK=") for p in sorted(out.glob("*/Tests.1/0/*/sbatch.sh"))]
    assert masks == [1, 1]
    pre, grid, post = (output.index(s) for s in ("pre_test 'nccl_test'", "Tests.1: agent", "post_test 'nccl_test'"))
    assert pre < grid < post
    (hook,) = out.glob("*/pre_test.Tests.1/0/sbatch.sh")
    assert "all_gather_perf_mpi" in hook.read_text() and "--stepfactor 2" in hook.read_text()  # CloudAI's hook test


@pytest.mark.parametrize("name", WITH_HOOKS)
def test_scenarios_with_hooks_verify_unchanged(name: str) -> None:
    code, output = invoke("verify-configs", "--tests-dir", TESTS, SCENARIOS / name)
    assert code == 0, output


def test_hook_files_verify() -> None:
    code, output = invoke("verify-configs", CONF / "hook" / "test")
    assert code == 0, output
    assert "2 file(s) checked, 0 problem(s)" in output


@pytest.mark.usefixtures("standins")
def test_dse_scenario_runs_its_pre_test_first_then_the_sweep_then_its_post_test(tmp_path: Path) -> None:
    code, output = invoke("run", "--tests-dir", TESTS, "--test-scenario", SCENARIOS / "dse_nccl_all_gather.toml",
                          "--output-dir", tmp_path)  # fmt: skip
    assert code == 0, output
    (run,) = tmp_path.iterdir()
    jobs = {str(p.parent.relative_to(run)): json.loads(p.read_text()) for p in run.glob("**/job.json")}
    # nccl-tests is noisy: the 2-point sweep, then both points re-run 3 times each (confirmation), all between
    # the hooks
    assert {k: v["status"] for k, v in jobs.items()} == dict.fromkeys(
        ["pre_test.Tests.1/0", *(f"Tests.1/0/{n}" for n in range(1, 9)), "post_test.Tests.1/0"], "ok"
    )
    steps = [jobs[f"Tests.1/0/{n}"] for n in range(1, 9)]
    assert jobs["pre_test.Tests.1/0"]["ended_at"] <= min(s["started_at"] for s in steps)
    assert jobs["post_test.Tests.1/0"]["started_at"] >= max(s["ended_at"] for s in steps)
    assert "all_gather_perf_mpi" in (run / "pre_test.Tests.1" / "0" / "stdout.txt").read_text()
    assert [e["id"] for e in json.loads((run / "run.json").read_text())["entries"]] == [
        "pre_test.Tests.1", "Tests.1", "post_test.Tests.1"
    ]  # fmt: skip
    assert (run / "Tests.1" / "0" / "best.toml").is_file()


@pytest.mark.usefixtures("standins")
def test_a_failed_pre_test_keeps_the_sweep_from_starting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDAI_STANDIN_OUTPUT", "no_such_output.txt")  # the stand-in exits 1: the hook job fails
    code, output = invoke("run", "--tests-dir", TESTS, "--test-scenario", SCENARIOS / "dse_nccl_all_gather.toml",
                          "--output-dir", tmp_path)  # fmt: skip
    assert code == 1, output
    assert "pre_test 'nccl_test' failed, so the agent-driven tests were not started" in output
    assert "pre_test.Tests.1.0: failed: exit code 1: cat: " in output and "No such file or directory (see " in output
    (run,) = tmp_path.iterdir()
    assert [str(p.parent.relative_to(run)) for p in run.glob("**/job.json")] == ["pre_test.Tests.1/0"]
    assert not (run / "Tests.1").exists() and not (run / "post_test.Tests.1").exists()


@pytest.mark.slurm
@pytest.mark.usefixtures("standins")
def test_dse_with_cloudais_hooks_on_the_local_slurm(tmp_path: Path) -> None:
    """CloudAI's DSE scenario without its ``num_nodes = "2"`` (this Slurm has one node): each hook an sbatch job."""
    scenario = tmp_path / "dse_hooks.toml"
    scenario.write_text(
        'name = "dse-hooks"\npre_test = "nccl_test"\npost_test = "nccl_test"\n'
        '[[Tests]]\nid = "Tests.1"\ntest_name = "dse_nccl_all_gather"\n'
        "agent_config = { confirm = 0 }\n"
    )  # the hooks are tested here, not the confirmation
    code, output = invoke("run", "--system-config", HERE / "slurm_system.toml", "--tests-dir", TESTS,
                          "--test-scenario", scenario, "--output-dir", tmp_path / "results")  # fmt: skip
    assert code == 0, output
    (run,) = (tmp_path / "results").iterdir()
    jobs = {str(p.parent.relative_to(run)): json.loads(p.read_text()) for p in run.glob("**/job.json")}
    assert {k: v["status"] for k, v in jobs.items()} == dict.fromkeys(
        ["pre_test.Tests.1/0", "Tests.1/0/1", "Tests.1/0/2", "post_test.Tests.1/0"], "ok"
    )
    assert jobs["pre_test.Tests.1/0"]["ended_at"] <= min(jobs[f"Tests.1/0/{n}"]["started_at"] for n in (1, 2))
    assert jobs["post_test.Tests.1/0"]["started_at"] >= max(jobs[f"Tests.1/0/{n}"]["ended_at"] for n in (1, 2))
    assert (run / "pre_test.Tests.1" / "0" / "sbatch.sh").is_file()
