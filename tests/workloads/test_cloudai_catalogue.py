"""CloudAI's files beyond nccl/ucc/osu (``cloudai_conf/common``, ``experimental``, ``release``, verbatim) verify; its
systems on schedulers cloudai does not run on (``kubernetes``, ``runai``) are one exit-2 error that says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.workloads.conftest import CONF

from cloudai.cli import cli

SYSTEMS = CONF / "common" / "system"


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("tests", "scenarios", "files"),
    [
        (CONF / "common" / "test", CONF / "common" / "test_scenario", 6),
        (CONF / "experimental" / "test", CONF / "experimental" / "test_scenario", 12),
        (CONF / "release" / "spcx" / "l40s" / "test", CONF / "release" / "spcx" / "l40s" / "test_scenario", 18),
    ],
)
def test_cloudais_tests_and_scenarios_verify(tests: Path, scenarios: Path, files: int) -> None:
    code, output = invoke("verify-configs", "--tests-dir", tests, tests, scenarios)
    assert code == 0, output
    assert f"{files} file(s) checked, 0 problem(s)" in output


@pytest.mark.parametrize(("file", "scheduler"), [("kubernetes_cluster.toml", "kubernetes"),
                                                 ("example_runai_cluster.toml", "runai")])  # fmt: skip
def test_a_scheduler_cloudai_does_not_run_on_is_one_clear_error(tmp_path: Path, file: str, scheduler: str) -> None:
    system = SYSTEMS / file
    code, output = invoke("verify-configs", system)
    assert code == 2
    assert output.count("error:") == 1, output
    assert f"{system}: scheduler: scheduler '{scheduler}'" in output
    assert "cloudai runs on: slurm, standalone" in output
    sleep = CONF / "common" / "test_scenario" / "sleep.toml"
    code, output = invoke("dry-run", "--system-config", system, "--tests-dir", CONF / "common" / "test",
                          "--test-scenario", sleep, "--output-dir", tmp_path / "out")  # fmt: skip
    assert code == 2 and f"scheduler '{scheduler}'" in output and "Traceback" not in output
    assert not (tmp_path / "out").exists()


def test_lsf_is_named_too(tmp_path: Path) -> None:
    system = tmp_path / "lsf.toml"
    system.write_text('name = "lsf"\nscheduler = "lsf"\ninstall_path = "i"\noutput_path = "o"\n')
    code, output = invoke("verify-configs", system)
    assert code == 2 and "scheduler 'lsf' is not supported by cloudai: IBM LSF is one of NVIDIA CloudAI's" in output


@pytest.mark.parametrize(("scenario", "scripts"), [("ddlb_test.toml", 4), ("deepep_official.toml", 1),
                                                   ("moe_benchmark_HT.toml", 3)])  # fmt: skip
def test_cloudais_experimental_scenarios_dry_run(tmp_path: Path, scenario: str, scripts: int) -> None:
    """ddlb_test sweeps m and impl (4 trials, one script each); moe_benchmark_HT chains the MoE benchmark, UCC's
    and nccl-tests' alltoallv with DeepEP's matrix."""
    experimental = CONF / "experimental"
    code, output = invoke("dry-run", "--system-config", CONF / "system" / "example_slurm_cluster.toml",
                          "--tests-dir", experimental / "test", "--test-scenario",
                          experimental / "test_scenario" / scenario, "--output-dir", tmp_path / "out")  # fmt: skip
    assert code == 0, output
    assert len(list((tmp_path / "out").rglob("sbatch.sh"))) == scripts
