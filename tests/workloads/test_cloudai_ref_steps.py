"""Each step of a job equals the step of CloudAI's reference script (``ref/cloudai_dry_run/<name>.sbatch``, NVIDIA
CloudAI's ``tests/ref_data`` with its output and install dirs as ``__JOB_DIR__``/``__INSTALL_DIR__``) for the same
test (the definitions of CloudAI's ``tests/test_acceptance.py``), on a system like CloudAI's reference one.

A step is an ``srun`` line of the workload (CloudAI's rank-mapping and metadata sruns are CloudAI's own): its
command's words (in order) and its task flags (``--ntasks``, ``--ntasks-per-node``, in any order: CloudAI's own
order differs between its workloads) must be equal, and the steps come in the same order. Two
normalisations, on purpose (as ``test_cloudai_rendering.py``):

1. CloudAI runs ``bash -c "source <job>/env_vars.sh; CMD"``; we export the variables in the script, so CMD is
   compared with our command (with the script our ``bash -c`` runs, for a command that needs a task's shell).
2. Node counts (``-N<n>``, ``--nodes=<n>``) are left out: ours says ``-N<n>`` where CloudAI says ``--nodes``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from tests.workloads.test_golden import dry_run, one_entry, ref_system

from cloudai.workloads import WORKLOADS

REF = Path(__file__).resolve().parent / "ref" / "cloudai_dry_run"

CASES = {  # CloudAI's acceptance-test definitions: (workload, cmd_args TOML, nodes)
    "ddlb": ("DDLBTest", 'docker_image_url = "docker/image:url"\nprimitive = "tp_columnwise"\ndtype = "float16"\n', 1),
    "deepep-benchmark": ("DeepEP", 'docker_image_url = "docker/image:url"\nsubtest_name = "test_internode"\n', 2),
    "moe-benchmark": (
        "MoEBenchmark",
        'docker_image_url = "docker/image:url"\n'
        'deepep_versions = ["legacy", "elastic", "nixl_ep", "uccl_ep", "nccl_ep", "deepep_hybrid"]\n',
        2,
    ),
    "nixl_bench": (
        "NIXLBench",
        'docker_image_url = "url.com/docker:2"\npath_to_benchmark = "./nixlbench"\nbackend = "UCX"\n',
        2,
    ),
    "nixl-perftest": (
        "NixlPerftest",
        'docker_image_url = "url.com/docker:tag"\nsubtest = "sequential-ct-perftest"\netcd_path = "etcd"\n'
        'num_user_requests = 2\nbatch_size = 1\nnum_prefill_nodes = 1\nnum_decode_nodes = 1\nmodel = "model-name"\n',
        1,
    ),
    "nixl-kvbench": (
        "NIXLKVBench",
        'docker_image_url = "url.com/docker:tag"\nbackend = "UCX"\nkvbench_script = "path/to/kvbench_script.sh"\n'
        'python_executable = "path/to/python"\n',
        2,
    ),
}


def steps(text: str) -> list[tuple[list[str], list[str]]]:
    """(task flags, command words) of every workload ``srun`` line of a script."""
    found = []
    for line in text.splitlines():
        if not line.startswith("srun ") or "mapping-stdout.txt" in line or "slurm-metadata.sh" in line:
            continue
        words = shlex.split(re.sub(r"\$\([^()]*\)", "SUBST", line.removesuffix(" || exit $?").rstrip(" &")))
        start = next(i for i, w in enumerate(words[1:], 1) if not w.startswith("-"))
        flags = sorted(w for w in words[1:start] if re.match(r"--ntasks(-per-node)?=", w))
        command = words[start:]
        if command[:2] == ["bash", "-c"]:  # normalisation 1
            command = shlex.split(command[2].split("; ", 1)[1] if command[2].startswith("source ") else command[2])
        found.append((flags, command))
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_steps_match_cloudais_reference(tmp_path: Path, name: str) -> None:
    workload, cmd_args, nodes = CASES[name]
    system, install = ref_system(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(f'name = "t"\ntest_template_name = "{workload}"\n[cmd_args]\n{cmd_args}')
    [script] = dry_run(tmp_path, system, tmp_path / "tests", one_entry("t", num_nodes=nodes))
    ours = steps(script.read_text().replace(str(script.parent), "__JOB_DIR__").replace(str(install), "__INSTALL_DIR__"))
    assert ours == steps((REF / f"{name}.sbatch").read_text())
    assert ours, "no workload step found"


def test_every_case_is_a_registered_workload() -> None:
    assert {workload for workload, _, _ in CASES.values()} <= set(WORKLOADS.names())


def test_nixl_ep_launches_match_cloudais_launch_script(tmp_path: Path) -> None:
    """CloudAI's launcher (``nixl-ep-launch.sh``): the same launches, nodes and order. Its ``$master_ip`` (the head
    node's address, from an extra ``srun hostname --ip-address``, left out here) is our ``$CLOUDAI_HEAD_NODE``."""
    plan = "[[0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, -6, 7], [0, 1, 2, 3, 4, 5, 6, 7]]"
    args = (f"docker_image_url = \"docker.io/nvidia/nixl-ep:latest\"\nplan = '{plan}'\nnum_processes_per_node = 4\n"
            "service_startup_timeout_seconds = 90\nnum_tokens = 256\nnum_experts_per_rank = 4\nhidden_dim = 8192\n"
            "num_topk = 6\ndisable_ll_nvlink = true\nkineto = true\n")  # fmt: skip
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(f'name = "t"\ntest_template_name = "NixlEP"\n[cmd_args]\n{args}')
    system = Path(__file__).resolve().parent / "cloudai_conf" / "system" / "example_slurm_cluster.toml"
    [script] = dry_run(tmp_path, system, tmp_path / "tests", one_entry("t", num_nodes=3))
    ours = steps(script.read_text().replace(str(script.parent), "__JOB_DIR__"))
    theirs = (REF / "nixl-ep-launch.sh").read_text().replace("$master_ip", "$CLOUDAI_HEAD_NODE")
    assert ours == [s for s in steps(theirs) if s[1][:2] != ["hostname", "--ip-address"]]
    text = script.read_text()
    assert text.index("end phase 0") < text.index("--job-name=cloudai-ep1_1") < text.index("end phase 2")
    assert '[ "$code" -eq 143 ] && continue' in text  # the plan removes rank 6 on purpose
