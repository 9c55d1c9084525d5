"""The shipped DSE examples run as documented, and their best.toml runs unchanged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from tests.conftest import CONF
from tests.dse.conftest import invoke

TESTS = CONF / "common" / "test"
SCENARIOS = CONF / "common" / "test_scenario"


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "steps"), [("dse_synthetic.toml", 40), ("dse_synthetic_grid.toml", 174)])
def test_shipped_example_and_its_best_toml(tmp_path: Path, scenario: str, steps: int) -> None:
    args = [
        "--tests-dir",
        str(TESTS),
        "--test-scenario",
        str(SCENARIOS / scenario),
        "--output-dir",
        str(tmp_path / "a"),
    ]
    result = invoke(["run", *args])
    assert result.exit_code == 0, result.output
    (iteration,) = (tmp_path / "a").glob("*/synthetic/0")
    frame = pd.read_csv(iteration / "trajectory.csv")
    assert set(frame.status) <= {"ok", "cached", "constraint", "infeasible"}
    # agent_steps counts measurements: a cache hit is free, and so is a draw the workload's rule refused
    assert len(frame[~frame.status.isin(["cached", "infeasible"])]) == steps
    best = frame[frame.status == "ok"].reward.max()
    assert f"bus_bw {best:.6g} GB/s (a single measurement)" in result.output  # the metric and its unit

    tests = tmp_path / "best_tests"
    tests.mkdir()
    shutil.copy(iteration / "best.toml", tests)
    assert "# num_nodes = 4" in (tests / "best.toml").read_text()
    name = _best_name(tests)
    (tmp_path / "s.toml").write_text(f'name = "best"\n[[Tests]]\nid = "b"\ntest_name = "{name}"\nnum_nodes = 4\n')
    rerun = invoke(["run", "--tests-dir", str(tests), "--test-scenario", str(tmp_path / "s.toml"),
                    "--output-dir", str(tmp_path / "b")])  # fmt: skip
    assert rerun.exit_code == 0, rerun.output
    (metrics,) = (tmp_path / "b").glob("*/b/0/metrics.json")
    assert json.loads(metrics.read_text())["bus_bw"] == pytest.approx(best)


@pytest.mark.slow
def test_shipped_pruning_example_prunes_through_the_system(tmp_path: Path) -> None:
    """conf/ has an example of agent_config.pruner: hopeless trials are cancelled while they run."""
    scenario = SCENARIOS / "dse_pruning.toml"
    result = invoke(["run", "--tests-dir", str(TESTS), "--test-scenario", str(scenario),
                     "--output-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    (iteration,) = tmp_path.glob("*/synthetic/0")
    frame = pd.read_csv(iteration / "trajectory.csv")
    assert len(frame[~frame.status.isin(["cached", "infeasible"])]) == 24
    pruned = frame[frame.status == "pruned"]
    assert len(pruned) >= 6 and pruned.reason.str.startswith("pruned at progress step ").all()
    assert (frame.status == "ok").any() and (iteration / "best.toml").exists()
    at = pruned.reason.str.extract(r"progress step (\d+)")[0].astype(int)
    assert (at < 10).all()  # cut short: before the trial's last (10th) progress line


def _best_name(tests: Path) -> str:
    from cloudai.config.test import load_test

    return load_test(tests / "best.toml").name


def test_dry_run_of_the_shipped_example(tmp_path: Path) -> None:
    result = invoke(["dry-run", "--tests-dir", str(TESTS), "--test-scenario", str(SCENARIOS / "dse_synthetic.toml"),
                     "--output-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "agent optuna, 40 step(s), 3 dimension(s), continuous" in result.output
    assert "chunk_kb: range [64, 8192] int log" in result.output
    assert len(list(tmp_path.glob("*/synthetic/0/*/cmd.sh"))) == 5


def test_the_grid_example_is_the_optuna_example_with_grid_search(tmp_path: Path) -> None:
    """The issue's promise: the same file with agent = "grid_search" sweeps the full grid."""
    import toml

    optuna, grid = (
        toml.loads((TESTS / name).read_text()) for name in ("dse_synthetic.toml", "dse_synthetic_grid.toml")
    )
    assert optuna["agent"] == "optuna" and optuna["agent_steps"] == 40
    assert grid["agent"] == "grid_search" and "agent_steps" not in grid
    assert grid["cmd_args"] == optuna["cmd_args"]
    assert grid["agent_metrics"] == optuna["agent_metrics"]
    scenario = SCENARIOS / "dse_synthetic_grid.toml"
    result = invoke(
        ["dry-run", "--tests-dir", str(TESTS), "--test-scenario", str(scenario), "--output-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "agent grid_search, 174 step(s), 3 dimension(s), 192 grid points" in result.output
    assert "space: 192 points, 174 valid" in result.output  # the grid skips the 18 the workload's rule refuses
