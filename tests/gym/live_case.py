"""A live-RL run as a user makes one: a test TOML, a scenario, ``cloudai run`` in a subprocess, the files it wrote."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import REPO, cloudai

SCENARIO = 'name = "live"\n[[Tests]]\nid = "t"\ntest_name = "x"\n'


@dataclass
class LiveCase:
    root: Path

    @property
    def out(self) -> Path:
        return self.root / "out"

    def write(self, test: str, scenario: str = SCENARIO) -> LiveCase:
        (self.root / "tests").mkdir(parents=True, exist_ok=True)
        (self.root / "tests" / "x.toml").write_text('name = "x"\ntest_template_name = "LiveRL"\n' + test)
        (self.root / "scenario.toml").write_text(scenario)
        return self

    def run(self, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``cloudai run`` from the repo root (so ``tests.gym.live_envs`` imports), into ``out``."""
        args = ["run", "--tests-dir", self.root / "tests", "--test-scenario", self.root / "scenario.toml"]
        if "--resume" not in extra:
            args += ["--output-dir", self.out]
        return cloudai(*args, *extra, cwd=REPO, env={**os.environ, **(env or {})})

    def run_dir(self) -> Path:
        (directory,) = [p for p in self.out.iterdir() if p.is_dir()]
        return directory

    @property
    def trial_dir(self) -> Path:
        return self.run_dir() / "t" / "0"

    def rows(self, name: str = "trajectory.csv") -> list[dict[str, Any]]:
        with (self.trial_dir / name).open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            for key in ("action", "observation"):
                if key in row:
                    row[key] = json.loads(row[key])
        return rows


def episodes(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Rows grouped by episode, in order."""
    grouped: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(int(row["episode"]), []).append(row)
    return grouped
