"""Helpers for DSE tests: write a test + scenario, run the CLI, read what a run wrote.

Runs go through the real CLI (in-process with click's ``CliRunner`` where no signal is
involved, a subprocess otherwise) and the real standalone system: every trial is a job.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from cloudai.cli import cli
from cloudai.workloads import WORKLOADS


def synthetic_available() -> bool:
    try:
        WORKLOADS.get("Synthetic")
    except Exception:
        return False
    return True


# A stand-in workload for paths Synthetic does not cover: reads --x=.. --y=.., writes metrics.json.
MODEL = """
import json, sys, time
args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
x, y = float(args.get("x", 0)), float(args.get("y", 0))
time.sleep(float(args.get("sleep", 0)))
if args.get("fail") == "true" or x < 0:
    sys.exit(3)
metrics = {"default": -(x - 2) ** 2 - (y - 1) ** 2 + 10, "bus_bw": x * 10 + y}
if args.get("drop") == "true":
    metrics.pop("bus_bw")
json.dump(metrics, open("metrics.json", "w"))
"""


@dataclass
class Case:
    root: Path

    @property
    def tests(self) -> Path:
        return self.root / "tests"

    @property
    def scenario(self) -> Path:
        return self.root / "scenario.toml"

    @property
    def out(self) -> Path:
        return self.root / "out"

    def args(self, command: str = "run", *extra: str) -> list[str]:
        return [command, "--tests-dir", str(self.tests), "--test-scenario", str(self.scenario),
                "--output-dir", str(self.out), *extra]  # fmt: skip

    def run_dir(self) -> Path:
        (directory,) = [p for p in self.out.iterdir() if p.is_dir()]
        return directory

    def iteration_dir(self, test_id: str = "t", iteration: int = 0) -> Path:
        return self.run_dir() / test_id / str(iteration)

    def trajectory(self, test_id: str = "t", iteration: int = 0) -> pd.DataFrame:
        return pd.read_csv(self.iteration_dir(test_id, iteration) / "trajectory.csv")

    def job_dirs(self, test_id: str = "t", iteration: int = 0) -> list[Path]:
        return sorted(p.parent for p in self.iteration_dir(test_id, iteration).glob("*/job.json"))

    def jobs(self, test_id: str = "t", iteration: int = 0) -> list[dict[str, Any]]:
        return [json.loads((d / "job.json").read_text()) for d in self.job_dirs(test_id, iteration)]


@pytest.fixture
def case(tmp_path: Path) -> Callable[..., Case]:
    """``case(test_toml, scenario_toml)`` writes both (``{model}`` is the stand-in workload's command)."""
    model = tmp_path / "model.py"
    model.write_text(MODEL)

    def _make(test: str, scenario: str = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n') -> Case:
        c = Case(tmp_path)
        c.tests.mkdir(exist_ok=True)
        (c.tests / "x.toml").write_text(test.replace("{model}", f"python3 {model}"))
        c.scenario.write_text(scenario)
        return c

    return _make


def invoke(args: list[str]) -> Result:
    """The CLI in this process (no signals involved)."""
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def observation(cell: str) -> list[float | None]:
    return json.loads(cell)
