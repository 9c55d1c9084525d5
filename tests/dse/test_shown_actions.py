"""Actions as a person reads them (issue 39 item 4): no binary float noise where shown, every bit where recorded."""

from __future__ import annotations

from collections.abc import Callable

from tests.dse.conftest import Case, invoke
from tests.dse.test_trust import GRID


def test_a_run_shows_actions_without_float_noise_and_records_them_exactly(case: Callable[..., Case]) -> None:
    """``1.2000000000000002`` (what 3 * 0.4 is in binary) reads 1.2 on the terminal, in the report and in
    best.toml's comments; trajectory.csv and best.toml's values keep every bit."""
    c = case(GRID.replace("x = [0, 1, 2]", "x = [1.2000000000000002, 0.5]"))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    assert 'Best of t: {"x": 1.2}' in result.output and "1.2000000000000002" not in result.output
    best = (c.iteration_dir() / "best.toml").read_text()
    assert "# Action: x=1.2\n" in best and "x = 1.2000000000000002" in best  # the comment reads, the value runs
    report = (c.run_dir() / "report.html").read_text()
    assert "action {&quot;x&quot;: 1.2}" in report and "1.2000000000000002" not in report
    assert "1.2000000000000002" in (c.iteration_dir() / "trajectory.csv").read_text()
