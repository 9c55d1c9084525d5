"""The sbatch scripts ``cloudai dry-run`` writes for ``vllm`` and ``sglang`` on Slurm.

1. Against CloudAI's own references (``ref/{vllm,sglang}*.sbatch``, verbatim from CloudAI's ``tests/ref_data``):
   the same tests (CloudAI's acceptance-test definitions, below) give the same steps in the same order — each
   workload command (server, router, benchmark client; after the ``srun`` flags) and each health URL waited
   for. Our ``srun`` flags and the script around the steps are our Slurm system's (node placement by index,
   one cleanup trap; CloudAI's cleanup function, which also stops Ray, is not a workload step). One
   normalisation, on purpose: commands are compared as shell words (``shlex.split``), because CloudAI quotes a
   value (``VAR="${NODE}"``) where we quote a word (``"VAR=${NODE}"``); the script of a ``bash -c``/``bash -lc``
   step is compared as its words too. (CloudAI starts the Ray workers of a multi-node role in one loop over the
   nodes, we start one step per worker node: on the reference's two nodes that is the same one command.)

2. CloudAI's conf files (``cloudai_conf_serving/``, verbatim) on CloudAI's ``example_slurm_cluster.toml``: whole
   scripts pinned as golden files (``CLOUDAI_UPDATE_GOLDEN=1`` rewrites them; review the diff).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from tests.workloads.test_golden import SLURM_EXAMPLE, check_golden, dry_run, placeholders

HERE = Path(__file__).resolve().parent
REF = HERE / "ref"
GOLDEN = HERE / "golden" / "serving"
CONF = HERE / "cloudai_conf_serving"

_HEAD = 'name = "{{name}}"\ntest_template_name = "{kind}"\n[cmd_args]\ndocker_image_url = "{image}"\n'
_VLLM = _HEAD.format(kind="vllm", image="nvcr.io/nvidia/vllm:latest")
_SGLANG = _HEAD.format(kind="sglang", image="docker.io/lmsysorg/sglang:dev")
_RAY = "num_gpus = 4\nnum_cpus = 64\ndisable_usage_stats = true\n"
_ONE_GPU = '[extra_env_vars]\nCUDA_VISIBLE_DEVICES = "0"\n'
_FOUR_GPUS = '[extra_env_vars]\nCUDA_VISIBLE_DEVICES = "0,1,2,3"\n'
# CloudAI's tests/test_acceptance.py definitions of its reference scripts: (test TOML, nodes).
CLOUDAI_REF_TESTS: dict[str, tuple[str, int]] = {
    "vllm": (_VLLM + 'model = "Qwen/Qwen3-0.6B"\n' + _ONE_GPU, 1),
    "vllm-multinode": (
        _VLLM + 'model = "Qwen/Qwen3-0.6B"\n[cmd_args.decode]\ntensor_parallel_size = 8\n'
        f"[cmd_args.decode.ray_head]\n{_RAY}[cmd_args.decode.ray_worker]\n{_RAY}" + _FOUR_GPUS,
        2,
    ),
    "vllm-disagg": (_VLLM + 'model = "Qwen/Qwen3-0.6B"\n[cmd_args.prefill]\n' + _FOUR_GPUS, 1),
    "vllm-disagg-2nodes": (_VLLM + 'model = "Qwen/Qwen3-0.6B"\n[cmd_args.prefill]\n' + _FOUR_GPUS, 2),
    "sglang": (_SGLANG + 'model = "Qwen/Qwen3-8B"\n' + _ONE_GPU, 1),
    "sglang-multinode": (_SGLANG + 'model = "Qwen/Qwen3-8B"\n[cmd_args.decode]\ntp = 8\n' + _FOUR_GPUS, 2),
    "sglang-disagg": (_SGLANG + 'model = "Qwen/Qwen3-8B"\n[cmd_args.prefill]\n' + _FOUR_GPUS, 1),
    "sglang-disagg-2nodes": (_SGLANG + 'model = "Qwen/Qwen3-8B"\n[cmd_args.prefill]\n' + _FOUR_GPUS, 2),
}
_SRUN = re.compile(r"^[ \t]*srun(?: +(?:--nodelist=\$\([^)]*\)|-\S+))* +", re.M)
_WAIT = re.compile(r'^(?:wait_for_health|cloudai_wait_http) "([^"]+)"', re.M)
_TAIL = (["&"], ["||", "exit", "$?"])


def steps_of(script: str) -> list[tuple[str, list[str]]]:
    """The script's workload commands (after srun's flags) and health URLs, in order, as shell words."""
    text = script.replace("\\\n", " ")
    events: list[tuple[int, str, list[str]]] = [(m.start(), "wait", [m.group(1)]) for m in _WAIT.finditer(text)]
    cleanup = re.search(r"^cleanup\(\) \{\n.*?^\}$", text, re.M | re.S)  # CloudAI's: it stops Ray clusters too
    for match in _SRUN.finditer(text):
        if cleanup and cleanup.start() <= match.start() < cleanup.end():
            continue
        words = _command_at(text[match.end() :])
        if any(w.endswith("slurm-metadata.sh") for w in words):
            continue
        if words[:2] == ["bash", "-c"] and "$(hostname):node" in words:
            continue  # CloudAI's rank-mapping step
        events.append((match.start(), "run", words))
    return [(kind, words) for _, kind, words in sorted(events, key=lambda e: e[0])]


def _command_at(text: str) -> list[str]:
    lines = text.split("\n")
    for end in range(1, len(lines) + 1):
        try:
            words = shlex.split("\n".join(lines[:end]))
        except ValueError:  # a quoted script spans more lines
            continue
        for tail in _TAIL:
            if words[-len(tail) :] == tail:
                words = words[: -len(tail)]
        if words[:2] in (["bash", "-c"], ["bash", "-lc"]):
            words = words[:2] + shlex.split(words[2])
        return words
    raise AssertionError(f"unterminated command: {text[:200]}")


def ref_system(tmp_path: Path, install: Path) -> Path:
    system = tmp_path / "system.toml"
    system.write_text(
        f'name = "ref"\nscheduler = "slurm"\ninstall_path = "{install}"\ndefault_partition = "main"\n'
        'gpus_per_node = 8\n[[partitions]]\nname = "main"\n'
    )
    return system


def one_entry(test_name: str, num_nodes: int) -> str:
    return f'name = "s"\n[[Tests]]\nid = "Tests.1"\ntest_name = "{test_name}"\nnum_nodes = {num_nodes}\n'


def render_ref(tmp_path: Path, name: str) -> tuple[str, str]:
    """(our script for CloudAI's reference test ``name``, CloudAI's reference), both with CloudAI's placeholders
    (CloudAI's ``__INSTALL_DIR__`` is its reference system's install path, ``__OUTPUT_DIR__/install``)."""
    install = tmp_path / "install"
    tests = tmp_path / "tests"
    tests.mkdir()
    toml, nodes = CLOUDAI_REF_TESTS[name]
    (tests / "t.toml").write_text(toml.format(name=name))
    [script] = dry_run(tmp_path, ref_system(tmp_path, install), tests, one_entry(name, nodes))
    ref = (REF / f"{name}.sbatch").read_text().replace("__INSTALL_DIR__", "__OUTPUT_DIR__/install")
    return placeholders(script, install), ref


@pytest.mark.parametrize("name", sorted(CLOUDAI_REF_TESTS))
def test_steps_match_cloudais_reference(tmp_path: Path, name: str) -> None:
    script, ref = render_ref(tmp_path, name)
    ours = steps_of(script)
    theirs = steps_of(ref)
    assert [k for k, _ in ours] == [k for k, _ in theirs]
    for (_, mine), (_, cloudai) in zip(ours, theirs, strict=True):
        assert mine == cloudai


_MOUNTS = re.compile(r"--container-mounts=(\S+)")
HF_MOUNT = "__OUTPUT_DIR__/install/huggingface:/root/.cache/huggingface"


@pytest.mark.parametrize("name", sorted(CLOUDAI_REF_TESTS))
def test_every_step_mounts_what_cloudais_reference_mounts(tmp_path: Path, name: str) -> None:
    """CloudAI's Hugging Face cache (the system's ``hf_home_path``, ``<install_path>/huggingface`` by default) at
    ``/root/.cache/huggingface`` in every step: without it each job downloads the weights again, and a node that
    cannot reach the hub fails. The directory is made before the first step (a mount's source must exist), and
    ``HF_HOME`` points at the mount (pyxis runs the image as the submitting user, whose cache is not root's)."""
    script, ref = render_ref(tmp_path, name)
    theirs = set(_MOUNTS.findall(ref))
    assert len(theirs) == 1 and next(iter(theirs)).endswith(f",{HF_MOUNT}")
    assert set(_MOUNTS.findall(script)) == theirs
    assert script.index("mkdir -p __OUTPUT_DIR__/install/huggingface\n") < script.index("srun ")
    assert "\nexport HF_HOME=/root/.cache/huggingface\n" in script


SCENARIOS = [
    ("sglang", "sglang"),
    ("sglang", "sglang-heavy"),
    ("vllm", "vllm"),
    ("vllm", "vllm-heavy"),
]


@pytest.mark.parametrize(("workload", "scenario"), SCENARIOS)
def test_cloudai_conf_files_on_cloudais_example_cluster(tmp_path: Path, workload: str, scenario: str) -> None:
    scenario_text = (CONF / workload / "test_scenario" / f"{scenario}.toml").read_text()
    scripts = dry_run(tmp_path, SLURM_EXAMPLE, CONF / workload / "test", scenario_text)
    assert scripts
    for script in scripts:
        entry = script.parent.parent.name
        text = placeholders(script, Path("install").absolute())
        text = text.replace(str(script.parent.parent.parent), "__RUN_DIR__")
        check_golden(text, GOLDEN / f"{entry}.sbatch")
