"""CloudAI's own command lines work as typed: ``generate-report --system-config S --tests-dir T
--test-scenario F --result-dir R``, ``--log-level`` before or after the command, and every run's
``debug.log`` in its results dir."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import CONF, cloudai

SCENARIO = 'name = "quick"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n  [Tests.cmd_args]\n  seconds = 0\n'


@pytest.fixture
def quick_run(tmp_path: Path, write: Callable[[str, str], Path]) -> tuple[Path, Path, Path]:
    """(scenario file, results root, the run's dir) of a finished one-job run, typed with --log-level after run."""
    scenario = write("s.toml", SCENARIO)
    out = tmp_path / "out"
    done = cloudai("run", "--log-level", "info", "--tests-dir", CONF / "common" / "test", "--test-scenario", scenario,
                   "--output-dir", out, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "INFO cloudai.run.plain: started a.0" in done.stderr  # the console shows INFO
    (run_dir,) = out.iterdir()
    return scenario, out, run_dir


def test_every_run_keeps_debug_log_in_its_results_dir(quick_run: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, _, run_dir = quick_run
    log = (run_dir / "debug.log").read_text()
    assert "INFO cloudai.run.plain: started a.0" in log and "a.0: ok" in log
    assert not (tmp_path / "debug.log").exists()  # not in the cwd, as CloudAI would


def test_generate_report_with_cloudai_flags(quick_run: tuple[Path, Path, Path]) -> None:
    scenario, _, run_dir = quick_run
    (run_dir / "report.html").unlink()
    system = CONF / "common" / "system" / "standalone_system.toml"
    done = cloudai("generate-report", "--system-config", system, "--tests-dir", CONF / "common" / "test",
                   "--test-scenario", scenario, "--result-dir", run_dir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (run_dir / "report.html").is_file()
    assert f"Report: {run_dir / 'report.html'}" in done.stdout


def test_generate_report_needs_a_dir() -> None:
    done = cloudai("generate-report", "--tests-dir", CONF / "common" / "test")
    assert done.returncode == 2
    assert "give the results dir" in done.stderr


def test_log_level_before_the_command_and_bad_values(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    scenario = write("s.toml", SCENARIO)
    base = ["--tests-dir", CONF / "common" / "test", "--test-scenario", scenario, "--output-dir", tmp_path / "o"]
    quiet = cloudai("run", *base)
    loud = cloudai("--log-level", "INFO", "run", *base)
    assert quiet.returncode == loud.returncode == 0
    assert "cloudai.run.plain" not in quiet.stderr  # WARNING by default: nothing to say
    assert "INFO cloudai.run.plain: started a.0" in loud.stderr
    bad = cloudai("--log-level", "LOUD", "dry-run", *base)
    assert bad.returncode == 2
    assert "'LOUD' is not one of" in bad.stderr
