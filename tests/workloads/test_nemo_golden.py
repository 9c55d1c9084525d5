"""The scripts ``cloudai dry-run`` writes for the training workloads (NeMoRun, MegatronBridge, NeMoLauncher).

1. Against CloudAI's reference (``ref/nemo-run.srun``: the last ``srun`` line of CloudAI's
   ``tests/ref_data/nemo-run-no-hook.sbatch``, commit 5b5c0f72), from ``--container-image=`` on (the flags
   before it are our Slurm system's, pinned by ``test_golden.py``). Two differences are normalised:

   * CloudAI wraps the command as ``bash -c "source <job>/env_vars.sh; CMD"``; we export the same variables in
     the script itself (``--export=ALL`` carries them), so our line ends with ``CMD``;
   * CloudAI's reference mounts its recipe file's *source* dir at ``/cloudai_workspace`` (the test never
     installed it); an installed recipe file lies in ``install_path``, which is what we mount.

   For MegatronBridge (``ref/megatron-bridge.launch``: the launcher line of CloudAI's ``megatron-bridge.sbatch``)
   the launcher's words are compared (after ``NEMORUN_HOME=...``, before the redirection into its log). One
   difference is normalised: CloudAI's ``-p main`` (its system's partition) is ours ``-p "${SLURM_JOB_PARTITION}"``
   (the launcher's job goes where the batch job runs); the paths are placeholders (``__INSTALL_DIR__``, ...).

   For NeMoLauncher (``ref/nemo-launcher.launch``: CloudAI's ``nemo-launcher.sbatch`` from its launcher line on)
   the launcher's argv is compared as words (``shlex.split`` of both: CloudAI's one-override-per-line
   continuations and its quoting are how it writes them, not what the launcher receives), after CloudAI's
   ``VAR=...`` prefix (ours exports the test's variables in the script). One difference is normalised: the two
   values CloudAI takes from its system, ``cluster.partition=main`` and ``cluster.job_name_prefix=
   test_account-cloudai.nemo:``, are ours from the allocation (``$SLURM_JOB_PARTITION``, ``$SLURM_JOB_ID``).

2. CloudAI's conf files (``cloudai_conf_training/``) on CloudAI's ``example_slurm_cluster.toml``: whole scripts
   pinned as golden files (``CLOUDAI_UPDATE_GOLDEN=1`` rewrites them; review the diff).
"""

from __future__ import annotations

import re
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

HERE = Path(__file__).resolve().parent
TRAINING = HERE / "cloudai_conf_training"
CLOUDAI_REF_TESTS = {  # CloudAI's acceptance-test inputs of each reference script
    "nemo-run": 'name = "nemo-run"\ntest_template_name = "NeMoRun"\n[cmd_args]\n'
    'docker_image_url = "nvcr.io/nvidia/nemo:24.09"\ntask = "pretrain"\nrecipe_name = "llama_3b"\n',
    "nemo-launcher": 'name = "nemo-launcher"\ntest_template_name = "NeMoLauncher"\n'
    '[extra_env_vars]\nVAR = "$(scontrol show hostname \\"${SLURM_STEP_NODELIST}\\" | head -n1)"\n',
    "megatron-bridge": 'name = "megatron-bridge"\ntest_template_name = "MegatronBridge"\nextra_container_mounts = []\n'
    '[[git_repos]]\nurl = "https://github.com/NVIDIA-NeMo/Megatron-Bridge.git"\ncommit = "main"\n'
    'mount_as = "/opt/Megatron-Bridge"\n[cmd_args]\ncontainer_image = "{image}"\nhf_token = "dummy_token"\n'
    'model_family_name = "qwen3"\nmodel_recipe_name = "30b_a3b"\nnum_gpus = 8\n'
    '[extra_env_vars]\nCUDA_VISIBLE_DEVICES = "0,1,2,3"\nNCCL_DEBUG = "INFO"\n',
}


def cloudai_command(name: str) -> str:
    """CloudAI's reference srun line from ``--container-image=`` on, normalised as the module docstring says."""
    line = (REF / f"{name}.srun").read_text().strip()
    line = re.sub(r'bash -c "source \S+/env_vars\.sh; (.*)"$', r"\1", line)
    line = line.replace("__CLOUDAI_DIR__/src/cloudai/workloads/nemo_run:", "__OUTPUT_DIR__/install:")
    return line[line.index("--container-image=") :]


def ref_script(tmp_path: Path, name: str, entry: str = "") -> str:
    system, install = ref_system(tmp_path)
    (tmp_path / "tests").mkdir()
    image = tmp_path / "output" / "megatron_bridge_image.sqsh"
    (tmp_path / "tests" / f"{name}.toml").write_text(CLOUDAI_REF_TESTS[name].replace("{image}", str(image)))
    [script] = dry_run(tmp_path, system, tmp_path / "tests", one_entry(name) + entry)
    return placeholders(script, install).replace(str(tmp_path / "output"), "__OUTPUT_DIR__/output")


def test_nemo_run_command_matches_cloudais_reference(tmp_path: Path) -> None:
    text = ref_script(tmp_path, "nemo-run")
    srun = text.splitlines()[-1]
    assert srun[srun.index("--container-image=") :] == cloudai_command("nemo-run")
    exports = [line for line in text.splitlines() if line.startswith("export ")]
    assert exports == ["export CLOUDAI_NEMO_TASK=pretrain", "export CLOUDAI_NEMO_RECIPE=llama_3b",
                       "export NEMO_LOG_MEMORY_USAGE=1"]  # fmt: skip  # CloudAI's, in its order


@pytest.mark.parametrize(
    ("golden", "tests_dir", "test_name", "nodes"),
    [
        ("nemo_run_llama3_8b.sbatch", "common/test", "nemo_run_llama3_8b", 2),
        ("nemo_acceptance_nemo_run_llama3_8b.sbatch", "release/nemo_acceptance/test", "nemo_run_llama3_8b", 1),
        (
            "megatron_bridge_qwen_30b_h100.sbatch",
            "experimental/megatron_bridge/test/h100",
            "megatron_bridge_qwen_30b",
            2,
        ),
    ],
)
def test_cloudai_training_files_on_cloudais_example_cluster(
    tmp_path: Path, golden: str, tests_dir: str, test_name: str, nodes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    [script] = dry_run(tmp_path, SLURM_EXAMPLE, TRAINING / tests_dir, one_entry(test_name, num_nodes=nodes))
    text = placeholders(script, Path("install").absolute())
    check_golden(text, GOLDEN / golden)


def test_nemo_run_derived_values_follow_the_job() -> None:
    """``trainer.num_nodes`` is the job's, ``trainer.devices`` the system's, ``num_train_samples`` gbs x steps."""
    srun = (GOLDEN / "nemo_run_llama3_8b.sbatch").read_text().splitlines()[-1]
    assert " trainer.num_nodes=2 " in srun and " trainer.devices=8 " in srun
    assert srun.endswith(" data.global_batch_size=128 data.num_train_samples=1280")


def test_megatron_bridge_launcher_matches_cloudais_reference(tmp_path: Path) -> None:
    text = ref_script(tmp_path, "megatron-bridge", 'time_limit = "00:20:00"\n').replace(
        "__OUTPUT_DIR__/install", "__INSTALL_DIR__"
    )
    [line] = [x for x in text.splitlines() if "setup_experiment.py" in x]
    assert line.startswith("NEMORUN_HOME=__OUTPUT_DIR__/output __INSTALL_DIR__/Run__main-venv/bin/python ")
    assert line.endswith(" > __OUTPUT_DIR__/output/cloudai_megatron_bridge_launcher.log 2>&1 || exit $?")
    ours = line.split(" ", 1)[1].split(" > __OUTPUT_DIR__/output/cloudai_megatron_bridge_launcher.log")[0]
    ref = (REF / "megatron-bridge.launch").read_text().strip()
    ref = ref.split(" ", 1)[1].split(' >>"$LOG" 2>&1')[0].replace(" -p main ", ' -p "${SLURM_JOB_PARTITION}" ')
    assert ours == ref
    assert "srun" not in text  # the launcher runs in the batch shell and submits its own job


def test_nemo_launcher_command_matches_cloudais_reference(tmp_path: Path) -> None:
    import shlex

    text = ref_script(tmp_path, "nemo-launcher").replace("__OUTPUT_DIR__/install", "__OUTPUT_DIR__/install")
    [line] = [x for x in text.splitlines() if "launcher_scripts/main.py" in x]
    ours = shlex.split(line.removesuffix(" || exit $?"))
    ref = shlex.split((REF / "nemo-launcher.launch").read_text().replace("\\\n", " "))[1:]  # after VAR=...
    ref = [w.replace("cluster.partition=main", "cluster.partition=${SLURM_JOB_PARTITION}") for w in ref]
    ref = [w.replace("prefix=test_account-cloudai.nemo:", "prefix=cloudai.nemo_${SLURM_JOB_ID}:") for w in ref]
    assert ours == ref
