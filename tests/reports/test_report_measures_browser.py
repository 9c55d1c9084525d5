"""A multi-objective run's report in headless Chromium: metric names with units, log axes, the Pareto plot."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.reports.test_report_browser import CHROMIUM, check

from cloudai.cli import cli

pytestmark = pytest.mark.browser

TEST = """name = "x"
test_template_name = "Synthetic"
agent = "optuna"
agent_steps = 10
agent_objectives = { bus_bw = "max", latency_us = "min" }
agent_config = { seed = 4, n_startup_trials = 4 }
[cmd_args]
duration_s = 0
message_size = [1048576, 268435456]
chunk_kb = { low = 64, high = 8192, log = true, dtype = "int" }
num_channels = [1, 4, 8]
"""


def dom_text(page: Path, tmp: Path) -> str:
    """The page's text as Chromium rendered it (``--dump-dom``), tags stripped."""
    if CHROMIUM is None:
        pytest.skip("headless Chromium not installed: apt-get install -y chromium (Debian package 'chromium')")
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={tmp / 'dom-profile'}", "--dump-dom", page.resolve().as_uri()]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_report_names_metrics_log_axes_and_the_pareto_front(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "x.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n')
    args = ["run", "--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(tmp_path / "s.toml"),
            "--output-dir", str(tmp_path / "out")]  # fmt: skip
    assert CliRunner().invoke(cli, args, catch_exceptions=False).exit_code == 0
    (run_dir,) = (tmp_path / "out").iterdir()
    report = run_dir / "report.html"
    check(report, tmp_path)  # offline, no console errors, every chart drawn
    dom = dom_text(report, tmp_path)
    text = re.sub(r"<[^>]+>", " ", dom)
    assert "reward = identity(bus_bw [GB/s])" in text  # the reward says which metric, with its unit
    assert "latency_us [us]" in text and "bus_bw [GB/s]" in text  # every observation named
    assert "Log axes: chunk_kb" in text
    pareto = dom.split('id="t-0--pareto"')[1].split("</section>")[0]
    assert 'aria-label="Pareto front of bus_bw vs latency_us"' in pareto and "Pareto-optimal" in pareto
    assert "Time spent" in text and "Trials that did not succeed" in text
