"""NVIDIA CloudAI's whole ``conf/`` tree, copied verbatim (``conf/``, from CloudAI commit 5b5c0f72): every file
verifies, every scenario dry-runs on CloudAI's ``example_slurm_cluster.toml`` with CloudAI's hook dir.

A scenario's tests are those of the ``test`` directory beside its ``test_scenario`` directory, as CloudAI's README
runs them (``--tests-dir conf/common/test --test-scenario conf/common/test_scenario/...``; a hook scenario's are in
``hook/test``); Megatron-Bridge keeps one test directory per GPU (``test/<gpu>/``) and its scenarios are dry-run
against each. Megatron-Bridge's files need a Hugging Face token, in CloudAI as here: ``HF_TOKEN`` is set to a dummy
one, as a user sets theirs.

The counts of files and of workloads are asserted: a new CloudAI file, or a new workload, is added on purpose
(copy the file verbatim, keep its licence header; ``EXPECTED_*`` below say what does not load, and why).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cloudai.cli import cli

CONF = Path(__file__).resolve().parent / "conf"
SLURM = CONF / "common" / "system" / "example_slurm_cluster.toml"
HOOKS = CONF / "hook"
FILES = sorted(p.relative_to(CONF).as_posix() for p in CONF.rglob("*.toml"))

# Systems whose scheduler cloudai does not implement: they are refused with one error saying so (exit 2).
UNSUPPORTED_SYSTEMS = {
    "common/system/example_runai_cluster.toml": "runai",
    "common/system/kubernetes_cluster.toml": "kubernetes",
}
# CloudAI features cloudai does not implement: one "not supported by cloudai" error naming the field (exit 2).
# None at this commit (AIDynamo's lmcache / hicache, the last ones, are implemented).
NOT_SUPPORTED: dict[str, str] = {}
# Scenarios CloudAI itself cannot run as shipped: they name tests that its conf/ tree does not hold.
BROKEN_UPSTREAM = {
    "experimental/test_scenario/moe_benchmark_low_latency.toml": "ucc_alltoallv_deepep_nonvlink",
}
# Scenarios for a system other than Slurm (dry-run on their own system, or refused with their scheduler).
NOT_SLURM = {
    "experimental/ai_dynamo/test_scenario/vllm_k8s.toml",
    "experimental/dynamo_mocker/test_scenario/dynamo_mocker.toml",
}


def is_scenario(path: Path) -> bool:
    return "[[Tests]]" in path.read_text()


def dirs_of(scenario: Path) -> list[Path]:
    """The test directories a scenario is run with (one per GPU kind for Megatron-Bridge)."""
    tests = (scenario.parent.parent if scenario.parent.name == "test_scenario" else scenario.parent) / "test"
    per_gpu = sorted(p for p in tests.iterdir() if p.is_dir()) if tests.is_dir() else []
    return per_gpu or [tests]


SCENARIOS = [
    (f, d.relative_to(CONF).as_posix())
    for f in FILES
    if is_scenario(CONF / f) and f not in {**BROKEN_UPSTREAM, **NOT_SUPPORTED} and f not in NOT_SLURM
    for d in dirs_of(CONF / f)
]


@pytest.fixture(autouse=True)
def hf_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_dummy")


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_the_tree_is_complete() -> None:
    """CloudAI's conf/ at that commit: 119 TOML files (and the generator file one UCC scenario reads)."""
    assert len(FILES) == 119
    assert (CONF / "common" / "test_scenario" / "ucc_generator_file.txt").is_file()


@pytest.mark.parametrize("name", FILES)
def test_every_file_verifies(name: str) -> None:
    path = CONF / name
    args = ["verify-configs", "--hook-dir", str(HOOKS), str(path)]
    if is_scenario(path):
        args[1:1] = ["--tests-dir", str(dirs_of(path)[0])]
    code, output = invoke(*args)
    if name in UNSUPPORTED_SYSTEMS:
        assert code == 2, output
        assert f"'{UNSUPPORTED_SYSTEMS[name]}'" in output and "not supported" in output, output
    elif name in NOT_SUPPORTED:
        assert code == 2 and f"{NOT_SUPPORTED[name]}: CloudAI field not supported by cloudai" in output, output
    elif name in BROKEN_UPSTREAM:
        assert code == 2 and BROKEN_UPSTREAM[name] in output, output
    else:
        assert code == 0, output


@pytest.mark.parametrize(("name", "tests_dir"), SCENARIOS)
def test_every_scenario_dry_runs_on_slurm(name: str, tests_dir: str, tmp_path: Path) -> None:
    out = tmp_path / "results"
    code, output = invoke(
        "dry-run",
        *("--system-config", str(SLURM), "--tests-dir", str(CONF / tests_dir), "--hook-dir", str(HOOKS)),
        *("--test-scenario", str(CONF / name), "--output-dir", str(out)),
    )
    assert code == 0, output
    scripts = list(out.rglob("sbatch.sh"))
    assert scripts, f"{name}: dry-run wrote no sbatch script\n{output}"


def errors(output: str) -> list[str]:
    return [
        line.removeprefix("error: ").replace(f"{CONF}/", "")
        for line in output.splitlines()
        if line.startswith("error: ")
    ]


def test_the_whole_tree_verifies_with_only_its_true_problems() -> None:
    """``verify-configs conf/`` as a CloudAI user runs it: each scenario is checked against the tests of its own tree
    (``sglang`` is a test of ``ai_dynamo/test`` and of ``sglang/test``: the SGLang scenarios are not checked against
    AIDynamo's, which made ten "unknown field" errors), the names several files use are noted once each, and the
    problems left are the true ones: two schedulers cloudai does not run on, two tests CloudAI's tree lacks."""
    code, output = invoke("verify-configs", "--hook-dir", str(HOOKS), str(CONF))
    assert code == 2
    expected = {f"{name}: scheduler: scheduler '{kind}'" for name, kind in UNSUPPORTED_SYSTEMS.items()}
    expected |= {f"{name}: Tests[{i}].test_name: unknown test '{test}'" for name, test in BROKEN_UPSTREAM.items()
                 for i, test in ((1, test), (2, "nccl_test_alltoallv_nonvlink"))}  # fmt: skip
    assert {e.split(" is not supported")[0].split("\n")[0] for e in errors(output)} == expected, output
    notes = [line for line in output.splitlines() if line.startswith("note: test name 'sglang' ")]
    assert len(notes) == 1 and "ai_dynamo/test/sglang.toml" in notes[0] and "sglang/test/sglang.toml" in notes[0]
    assert "unknown field" not in output


def test_a_megatron_bridge_scenario_without_a_token_says_only_that(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked against each GPU's variant of its test (``test/<gpu>/``), the scenario reports the missing token
    once, and nothing else."""
    monkeypatch.delenv("HF_TOKEN")
    root = CONF / "experimental" / "megatron_bridge"
    for scenario in sorted((root / "test_scenario").glob("*.toml")):
        code, output = invoke("verify-configs", str(root / "test"), str(scenario))
        assert code == 2
        about = [e for e in errors(output) if f"of {scenario.relative_to(CONF)}]" in e]
        assert len(about) == 1 and "cmd_args.hf_token: a Hugging Face token is required" in about[0], output
        assert all("a Hugging Face token is required" in e for e in errors(output)), output
