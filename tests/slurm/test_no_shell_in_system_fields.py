"""Issue 29 item 5: system fields reach the batch script as data, never as shell code. On the real local Slurm
a canary file tells whether ``$(...)`` in ``extra_srun_args`` ran; ``distribution`` must match Slurm's grammar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import cloudai
from tests.slurm.conftest import SYSTEM_TOML

from cloudai.config.slurm import DISTRIBUTION

# A workload Slurm runs with srun (a BashCmd runs in the batch shell, as CloudAI's does: no srun to abuse)
ECHO = 'name = "echo"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 0\n'


def _run(tmp_path: Path, system_extra: str, command: str = "run") -> tuple[int, str, Path]:
    system = tmp_path / "system.toml"
    system.write_text(SYSTEM_TOML.read_text().replace('mpi = "none"\n', f'mpi = "none"\n{system_extra}'))
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "echo.toml").write_text(ECHO)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "echo"\n')
    done = cloudai(command, "--system-config", system, "--tests-dir", tmp_path / "tests", "--test-scenario",
                   tmp_path / "s.toml", "--output-dir", tmp_path / "out")  # fmt: skip
    return done.returncode, done.stdout + done.stderr, tmp_path / "out"


@pytest.mark.slurm
@pytest.mark.usefixtures("timeout_job")
def test_a_command_substitution_in_extra_srun_args_never_runs(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    _, output, out = _run(tmp_path, f'extra_srun_args = "--overlap $(touch {canary})"\n')
    script = next(out.glob("*/t/0/sbatch.sh")).read_text()
    assert f"'$(touch' '{canary})'" in script, script
    assert not canary.exists(), "the substitution ran on the node"
    assert json.loads(next(out.glob("*/t/0/job.json")).read_text())["status"] == "failed", output


@pytest.mark.parametrize("value", ["block $(touch /tmp/x)", "block;id", "plane=0", "block:nope", "", "cyclic,Packed"])
def test_a_distribution_slurm_would_not_accept_is_refused_at_load(tmp_path: Path, value: str) -> None:
    code, output, out = _run(tmp_path, f"distribution = {json.dumps(value)}\n", "dry-run")
    assert code == 2 and "distribution" in output and "is not a Slurm distribution" in output, output
    assert not out.exists()


@pytest.mark.parametrize("value", ["block", "cyclic", "arbitrary", "plane=4", "block:cyclic", "*:fcyclic",
                                   "cyclic:block:fcyclic", "block,Pack", "*:*:*,NoPack"])  # fmt: skip
def test_slurms_own_distributions_are_accepted(value: str) -> None:
    assert DISTRIBUTION.fullmatch(value)


@pytest.mark.parametrize("value", ["none; touch /tmp/cloudai-mpi-canary", "$(touch /tmp/cloudai-mpi-canary)"])
def test_an_mpi_that_is_not_a_plugin_name_is_refused_at_load(tmp_path: Path, value: str) -> None:
    """Issue 35: ``mpi`` was written into ``srun --mpi=...`` unquoted, so dry-run wrote a script that ran it."""
    system, out = tmp_path / "system.toml", tmp_path / "out"
    system.write_text(SYSTEM_TOML.read_text().replace('mpi = "none"\n', f"mpi = {json.dumps(value)}\n"))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "echo.toml").write_text(ECHO)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "echo"\n')
    done = cloudai("dry-run", "--system-config", system, "--tests-dir", tmp_path / "tests", "--test-scenario",
                   tmp_path / "s.toml", "--output-dir", out)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{system}: mpi: " in done.stderr and "is not an MPI plugin name" in done.stderr, done.stderr
    assert not out.exists()
