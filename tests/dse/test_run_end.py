"""The end of a DSE run: the summary and the exit never wait for the report, and nothing heavy is imported.

The run goes through the real CLI in a fresh interpreter (``CliRunner`` inside it, so the test can list
the modules the run imported); the report is then rendered by the background process, which the test
waits on through its lock (``wait_for_report``), not on a timer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cloudai.reports.background import MODE_VAR, PID_FILE, wait_for_report

SCRIPT = """
import sys
from click.testing import CliRunner
from cloudai.cli import cli
result = CliRunner().invoke(cli, sys.argv[1:])
print(result.output)
print("exit", result.exit_code, "heavy", [m for m in ("matplotlib", "optuna", "pandas") if m in sys.modules])
"""
TEST = 'name = "t"\ntest_template_name = "Synthetic"\n[cmd_args]\nduration_s = 0\nnum_channels = [1, 2, 4, 8, 16]\n'


def test_opted_in_a_small_dse_imports_no_plotting_and_leaves_the_report_to_a_background_process(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    args = ["run", "--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(tmp_path / "s.toml"),
            "--output-dir", str(tmp_path / "out")]  # fmt: skip
    env = {**os.environ, MODE_VAR: "background"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "exit 0 heavy []" in done.stdout
    (run_dir,) = (tmp_path / "out").iterdir()
    assert f"Report: {run_dir / 'report.html'} (being written in the background by process" in done.stdout
    wait_for_report(run_dir)
    page = (run_dir / "report.html").read_text()
    assert page.rstrip().endswith("</html>") and "5 steps: 5 ok" in page
    assert (run_dir / "summary.csv").exists() and not (run_dir / PID_FILE).exists()


def test_a_background_report_that_fails_says_why_in_report_error_txt(tmp_path: Path) -> None:
    """Nobody watches the background process: its failure is written down, and waiting on it still returns."""
    from cloudai.reports.background import ERROR_FILE, start_report

    start_report(tmp_path)  # not a results dir: no run.json
    wait_for_report(tmp_path)
    assert "could not be written: ConfigError" in (tmp_path / ERROR_FILE).read_text()
    assert not (tmp_path / PID_FILE).exists() and not (tmp_path / "report.html").exists()


def test_by_default_every_output_exists_when_run_exits(tmp_path: Path) -> None:
    """No background process: a script that archives or opens the results right after the exit gets them."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    args = ["run", "--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(tmp_path / "s.toml"),
            "--output-dir", str(tmp_path / "out")]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != MODE_VAR}
    done = subprocess.run([sys.executable, "-m", "cloudai", *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "out").iterdir()
    assert (run_dir / "report.html").read_text().rstrip().endswith("</html>")
    assert (run_dir / "summary.csv").exists() and not (run_dir / PID_FILE).exists()
    assert "being written in the background" not in done.stdout
