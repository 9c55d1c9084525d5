"""The workload command of each job equals the one NVIDIA CloudAI's own ``dry-run`` writes for the same file.

``ref/cloudai_dry_run/<case>.srun`` is the last command line of CloudAI's script (CloudAI 1.6, its
``example_slurm_cluster.toml``, run from CloudAI's repository root; or its ``tests/ref_data``), with its job dir
as ``__JOB_DIR__`` and its install dir as ``__INSTALL_DIR__``. Lines are compared as the words the command receives
(quotes removed; CloudAI's ``$PWD`` is the directory its batch shell starts in, the one the dry-run ran from).
Two normalisations, on purpose:

1. CloudAI runs ``bash -c "source <job>/env_vars.sh; CMD"``; we export the same variables in the script itself,
   so CMD is compared with our command (for BashCmd and SlurmContainer: with the script our ``bash -c`` runs).
2. CloudAI puts ``-N<nodes>`` on its srun line; we render none (the ``#SBATCH -N`` applies to srun).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from tests.workloads.conftest import CONF, HERE
from tests.workloads.test_golden import dry_run, one_entry

REF = HERE / "ref" / "cloudai_dry_run"
SYSTEM = CONF / "system" / "example_slurm_cluster.toml"
COMMON = CONF / "common"


def cloudai_words(case: str, cwd: Path) -> list[str]:
    return words_of((REF / f"{case}.srun").read_text().strip(), cwd)


def words_of(line: str, cwd: Path) -> list[str]:
    """The words of one of CloudAI's lines, normalised as the module docstring says."""
    words = shlex.split(line.replace("$PWD", str(cwd)))
    if words[-3:-1] == ["bash", "-c"] and words[-1].startswith("source "):
        words = words[:-3] + shlex.split(words[-1].partition("; ")[2])  # normalisation 1
    return [w for w in words if not re.fullmatch(r"-N\d+", w)]  # normalisation 2


def our_words(script: Path) -> list[str]:
    text = script.read_text().replace(str(script.parent), "__JOB_DIR__")
    text = re.sub(r",[^,:\s]+:/cloudai_install", ",__INSTALL_DIR__:/cloudai_install", text)
    words = shlex.split(text.rstrip("\n").splitlines()[-1])
    if words[-3:-1] == ["bash", "-c"]:  # a shell command (BashCmd, SlurmContainer): its script (normalisation 1)
        words = words[:-3] + shlex.split(words[-1])
    return words


def scenario_scripts(tmp_path: Path, scenario: Path, tests: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    monkeypatch.chdir(tmp_path)  # CloudAI's $PWD: where the dry-run runs
    return dry_run(tmp_path, SYSTEM, tests, scenario.read_text())


@pytest.mark.parametrize(
    ("case", "scenario", "job", "extra"),
    [
        # fio: num_tasks_per_node as --ntasks-per-node/--ntasks, no --mpi, the scenario's image; ours reads JSON
        ("fio", "fio.toml", "Tests.fio", ["--output-format=json"]),
        ("sleep_scenario_sleep1", "sleep.toml", "Tests.sleep1", []),
        # $PWD/conf/... reaches pyxis as a path, not literally
        ("ucc_generator_test", "ucc_generator_test.toml", "Tests.alltoallv", []),
        ("slurm_container", "slurm_container.toml", "nccl.alltoall", []),
    ],
)
def test_cloudais_scenarios_render_what_cloudai_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, scenario: str, job: str, extra: list[str]
) -> None:
    scripts = scenario_scripts(tmp_path, COMMON / "test_scenario" / scenario, COMMON / "test", monkeypatch)
    [script] = [s for s in scripts if s.parent.parent.name == job]
    assert our_words(script) == cloudai_words(case, tmp_path) + extra


def test_fio_runs_num_tasks_per_node_tasks_without_mpi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [script] = scenario_scripts(tmp_path, COMMON / "test_scenario" / "fio.toml", COMMON / "test", monkeypatch)
    srun = script.read_text().splitlines()[-1]
    assert "--mpi" not in srun and " --ntasks-per-node=2 --ntasks=4 fio " in srun
    assert "#SBATCH --ntasks-per-node=8\n" in script.read_text()  # the header's 8 no longer reach fio


def test_ucc_generator_mount_is_a_path_not_a_literal_pwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = COMMON / "test_scenario" / "ucc_generator_test.toml"
    scripts = scenario_scripts(tmp_path, scenario, COMMON / "test", monkeypatch)
    srun = scripts[0].read_text().splitlines()[-1]
    assert f",{tmp_path}/conf/common/test_scenario/ucc_generator_file.txt:/opt/hpcx/" in srun
    assert "$PWD" not in srun and "'--container-mounts" not in srun


def test_sleep_default_is_cloudais_five_seconds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "sleep.toml").write_text('name = "sleep"\ntest_template_name = "Sleep"\n')  # ref_data's: no seconds
    monkeypatch.chdir(tmp_path)
    [script] = dry_run(tmp_path, SYSTEM, tests, one_entry("sleep"))
    assert our_words(script) == cloudai_words("sleep_default", tmp_path)


def test_bash_cmd_runs_once_in_the_batch_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CloudAI's BashCmd line is its command in the batch shell, never an srun of 8 tasks per node."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "bash.toml").write_text(
        'name = "bash"\ndescription = "d"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "echo hello $HOSTNAME"\n'
    )
    monkeypatch.chdir(tmp_path)
    [script] = dry_run(tmp_path, SYSTEM, tests, one_entry("bash", num_nodes=2))
    assert "srun" not in script.read_text()
    assert our_words(script) == cloudai_words("bash_cmd", tmp_path)


EXPERIMENTAL = CONF / "experimental"
L40S = CONF / "release" / "spcx" / "l40s"


def test_nccl_alltoallv_renders_cloudais_alltoallv_perf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CloudAI's reference was rendered with ``use_deepep_matrix = false`` (with true, CloudAI needs a finished MoE
    benchmark's matrix to render at all; its command is the same)."""
    monkeypatch.chdir(tmp_path)
    [script] = dry_run(tmp_path, SYSTEM, EXPERIMENTAL / "test", one_entry("nccl_test_alltoallv", num_nodes=2))
    assert our_words(script) == cloudai_words("nccl_test_alltoallv", tmp_path)


def test_ucc_use_deepep_matrix_reads_the_matrix_where_cloudai_mounts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    [script] = dry_run(tmp_path, SYSTEM, EXPERIMENTAL / "test", one_entry("ucc_alltoallv_deepep", num_nodes=2))
    assert our_words(script)[-12:] == [
        "/opt/hpcx/ucc/bin/ucc_perftest", "-c", "alltoallv", "-b", "1", "-e", "8M",
        "--gen", "file:name=/opt/hpcx/ucc/tools/perf/generator/input_matrices.txt", "-m", "cuda", "-F",
    ]  # fmt: skip


def test_every_l40s_release_job_renders_what_cloudai_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = L40S / "test_scenario" / "l40s_bc_nccl_test.toml"
    scripts = {s.parent.parent.name: s for s in scenario_scripts(tmp_path, scenario, L40S / "test", monkeypatch)}
    expected = dict(line.split("\t") for line in (REF / "l40s_bc_nccl_test.srun").read_text().splitlines())
    assert sorted(scripts) == sorted(expected) and len(scripts) == 17
    for job, line in expected.items():
        assert our_words(scripts[job]) == words_of(line, tmp_path), job
