"""MegatronRun and JaxToolbox (GPT, Grok) as ``cloudai dry-run`` writes them, against CloudAI's references.

1. CloudAI's ``ref/{gpt,grok}.run`` (the ``run.sh`` it writes for JaxToolbox) equal, byte for byte, the ``run.sh``
   our script writes into the job dir, with no normalisation: same entry points, flags, XLA flags, env and order.
2. The workload command of CloudAI's ``ref/megatron-run.sbatch`` ends our ``srun`` line, after two
   normalisations, on purpose:

   * CloudAI wraps the command as ``bash -c "source <job>/env_vars.sh; CMD"``; we export the same variables in the
     script and ``srun --export=ALL`` carries them, so our line ends with ``CMD``;
   * CloudAI joins ``flag value`` pairs with a space even when the value of a switch is empty, which leaves two
     spaces after ``--log-throughput``; we pass words, so one.

   The container image and the ``--container-mounts`` entries are compared as they are (JaxToolbox's job dir at
   ``/opt/paxml/workspace/`` included). Our ``srun`` flags differ where our system differs (``test_golden``).
3. CloudAI's conf-style test files (``training_conf/``) on CloudAI's ``example_slurm_cluster.toml``: whole
   scripts pinned as golden files (``CLOUDAI_UPDATE_GOLDEN=1`` rewrites them), and the pre-test variants.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from tests.workloads.test_golden import (
    GOLDEN,
    REF,
    SLURM_EXAMPLE,
    check_golden,
    dry_run,
    one_entry,
    placeholders,
    ref_system,
)

from cloudai.workloads.heredoc import written_files

CONF = Path(__file__).resolve().parent / "training_conf"
HOOKS = CONF / "hook"  # CloudAI's conf/hook files (a copy of cloudai_conf/hook), beside the scenario as in CloudAI
JAX_TESTS = {"gpt": "jax_gpt.toml", "grok": "jax_grok.toml"}


def container_parts(text: str) -> tuple[str, list[str]]:
    """The first image and the last mount entries of ``text``, as the shell reads the words (quoting aside)."""
    images = re.findall(r"--container-image=(\S+)", text)
    mounts = re.findall(r"\S*--container-mounts=\S+", text)
    assert images and mounts, text
    return images[0], shlex.split(mounts[-1])[0].removeprefix("--container-mounts=").split(",")


def normalised_megatron_command() -> str:
    line = [s for s in (REF / "megatron-run.sbatch").read_text().splitlines() if s.startswith("srun")][-1]
    command = re.search(r'bash -c "source \S+/env_vars\.sh; (.*)"$', line)
    assert command
    return command.group(1).replace("  ", " ")


def test_megatron_command_is_the_one_cloudai_renders(tmp_path: Path) -> None:
    system, install = ref_system(tmp_path)
    work = tmp_path / "work"
    tests = tmp_path / "tests"
    tests.mkdir()
    text = (CONF / "test" / "megatron_run.toml").read_text().replace("/workspace", str(work))
    (tests / "megatron_run.toml").write_text(text)
    [script] = dry_run(tmp_path, system, tests, one_entry("megatron_run"))
    ours = placeholders(script, install).replace(str(work), "__CLOUDAI_DIR__").splitlines()[-1]
    assert ours.endswith(" " + normalised_megatron_command())
    cloudai = [s for s in (REF / "megatron-run.sbatch").read_text().splitlines() if s.startswith("srun")][-1]
    assert container_parts(ours) == container_parts(cloudai)
    # CloudAI's $PWD mount: the directory cloudai runs in, where CloudAI's batch shell runs (ours cds to the job dir)
    assert f",{Path.cwd()}" in script.read_text()


@pytest.mark.parametrize("name", sorted(JAX_TESTS))
def test_jax_run_sh_and_its_srun_are_cloudais(tmp_path: Path, name: str) -> None:
    system, install = ref_system(tmp_path)
    [script] = dry_run(tmp_path, system, CONF / "test", one_entry(name))
    text = placeholders(script, install)
    assert written_files(text)["run.sh"] == (REF / f"{name}.run").read_text()
    ours = text.splitlines()[-1]
    assert container_parts(ours) == container_parts((REF / f"{name}-no-hook.sbatch").read_text())
    assert ours.endswith(" /opt/paxml/workspace/run.sh || exit $?")
    assert "export COMBINE_THRESHOLD=1\n" in text  # the test's extra_env_vars, as CloudAI exports them


@pytest.mark.parametrize(
    ("golden", "test_name"),
    [("megatron_run.sbatch", "megatron_run"), ("jax_gpt.sbatch", "gpt"), ("jax_grok.sbatch", "grok")],
)
def test_training_files_on_cloudais_example_cluster(tmp_path: Path, golden: str, test_name: str) -> None:
    [script] = dry_run(tmp_path, SLURM_EXAMPLE, CONF / "test", one_entry(test_name, num_nodes=2))
    text = placeholders(script, Path("install").absolute())
    check_golden(text, GOLDEN / golden)


def test_per_gpu_combine_threshold_divides_by_the_jobs_gpus() -> None:
    from cloudai.workloads.base import JobContext
    from cloudai.workloads.jax_toolbox import JaxToolboxGrok

    args = {"docker_image_url": "img"}
    for nodes, per_gpu in ((1, 134217728), (2, 67108864)):
        job = JobContext(Path("/j"), nodes, env={"COMBINE_THRESHOLD": "1073741824"})
        assert JaxToolboxGrok().run_script(args, job).count(f"export PER_GPU_COMBINE_THRESHOLD={per_gpu}\n") == 2
    assert "--job_log_dir=/opt/paxml/workspace/" in (GOLDEN / "jax_grok.sbatch").read_text()


def test_pre_test_hook_runs_first_and_leaves_the_job_as_without_hook(tmp_path: Path) -> None:
    """CloudAI's ``{gpt,grok}-pre-test`` references, on CloudAI's example cluster: an NCCL test first, then the
    same ``run.sh`` as without the hook (the system's global variables reach it through ``--export=ALL``)."""
    from click.testing import CliRunner

    from cloudai.cli import cli

    out = tmp_path / "results"
    scenario = str(CONF / "test_scenario" / "jax_pre_test.toml")
    args = ["dry-run", "--system-config", str(SLURM_EXAMPLE), "--tests-dir", str(CONF / "test"), "--hook-dir"]
    result = CliRunner().invoke(cli, [*args, str(HOOKS), "--test-scenario", scenario, "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    assert re.search(
        r"Tests\.1\.0: /opt/paxml/workspace/run\.sh +\[after: start_post_comp:pre_test\.Tests\.1\]", result.output
    )
    (hook,) = out.glob("*/pre_test.Tests.1/0/sbatch.sh")
    assert "_perf_mpi" in hook.read_text()
    for test_id, name in (("Tests.1", "gpt"), ("Tests.2", "grok")):
        (script,) = out.glob(f"*/{test_id}/0/sbatch.sh")
        assert written_files(script.read_text())["run.sh"] == (REF / f"{name}.run").read_text()
        assert "export NCCL_IB_GID_INDEX=3\n" in script.read_text()  # global_env_vars, in the script itself


def test_training_files_verify_and_a_missing_combine_threshold_is_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cloudai.cli import cli

    tests = str(CONF / "test")
    result = CliRunner().invoke(cli, ["verify-configs", "--tests-dir", tests, str(CONF / "test_scenario")])
    assert result.exit_code == 0 and "0 problem(s)" in result.output, result.output
    (tmp_path / "gpt.toml").write_text((CONF / "test" / "jax_gpt.toml").read_text().split("[extra_env_vars]")[0])
    result = CliRunner().invoke(cli, ["verify-configs", str(tmp_path / "gpt.toml")])
    assert result.exit_code == 2
    assert "extra_env_vars.COMBINE_THRESHOLD: is missing" in result.output


def test_the_scripts_first_step_writes_cloudais_run_sh(tmp_path: Path) -> None:
    """The heredoc step, run by bash as the batch script runs it, leaves CloudAI's ``grok.run`` in the job dir."""
    from cloudai.steps import Shell
    from cloudai.workloads.base import JobContext
    from cloudai.workloads.jax_toolbox import JaxToolboxGrok

    args = {"docker_image_url": "https://docker/url", "fdl_config": "fdl/config"}
    write = JaxToolboxGrok().steps(args, JobContext(tmp_path, 1, env={"COMBINE_THRESHOLD": "1"}))[0]
    assert isinstance(write, Shell)
    subprocess.run(["bash", "-c", write.text], check=True)
    assert (tmp_path / "run.sh").read_text() == (REF / "grok.run").read_text() + "\n"
    assert os.access(tmp_path / "run.sh", os.X_OK)
