"""Small real runs through the real CLI (``python -m cloudai run``), one of each kind, and what tests read back.

Each ``start_*`` writes its test and scenario TOMLs under ``root`` and runs them, so the report under test is
the one ``cloudai run`` itself wrote at the end of the run. Sizes are the smallest that still show every
section: a plain scenario with a failing job, 16 DSE steps over 2 env regimes, 12 live-RL steps in 3 episodes.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import cloudai

from cloudai.reports.background import MODE_VAR, wait_for_report

PLAIN_TESTS = {
    "synthetic": """
name = "synthetic"
test_template_name = "Synthetic"
[cmd_args]
algo = "tree"
duration_s = 0
""",
    "broken": """
name = "broken"
test_template_name = "BashCmd"
[cmd_args]
cmd = "echo going down >&2; exit 3"
""",
}
PLAIN_SCENARIO = """
name = "plain-scenario"
[[Tests]]
id = "Tests.bw"
test_name = "synthetic"
iterations = 2
[[Tests]]
id = "Tests.broken"
test_name = "broken"
"""

DSE_TEST = """
name = "dse"
test_template_name = "Synthetic"
agent = "random_search"
agent_steps = 16
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
agent_config = { seed = 5, confirm = 0 }  # the search itself; confirmation: tests/dse/test_trust.py
[cmd_args]
algo = ["ring", "tree", "nvls"]
chunk_kb = { low = 64, high = 8192, log = true, dtype = "int" }
num_channels = [4, 16]
background_load = [0.0, 0.9]
duration_s = 0
[env_params.background_load]
"""
DSE_SCENARIO = """
name = "dse-scenario"
[[Tests]]
id = "Tests.dse"
test_name = "dse"
"""
# The same test, with far more steps than are ever run: the run is interrupted after a few.
LONG_DSE_SCENARIO = DSE_SCENARIO + "agent_steps = 100000\n"

LIVE_TEST = """
name = "live"
test_template_name = "Synthetic"
agent = "random_search"
agent_steps = 12
agent_config = { seed = 3, confirm = 0 }
[cmd_args]
live_rl_mode = true
env_class = "cloudai.gym.examples.ServingSim"
horizon = 4
max_batch_size = [8, 32, 128]
max_num_seqs = [64, 256]
load_scale = [0.5, 1.5]
[env_params.load_scale]
"""
LIVE_SCENARIO = """
name = "live-scenario"
[[Tests]]
id = "Tests.live"
test_name = "live"
"""
LIVE_HORIZON, LIVE_STEPS = 4, 12


@dataclass(frozen=True)
class RealRun:
    """A finished ``cloudai run``: its exit code, output and results dir."""

    returncode: int
    stdout: str
    stderr: str
    path: Path

    def it_dir(self, test_id: str) -> Path:
        return self.path / test_id / "0"


def _write(root: Path, tests: dict[str, str], scenario: str) -> tuple[Path, Path]:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    for name, text in tests.items():
        (root / "tests" / f"{name}.toml").write_text(text)
    (root / "scenario.toml").write_text(scenario)
    return root / "tests", root / "scenario.toml"


def _args(tests: Path, scenario: Path, out: Path) -> list[str]:
    return ["run", "--tests-dir", str(tests), "--test-scenario", str(scenario), "--output-dir", str(out)]


def _the_run_dir(out: Path) -> Path:
    (run,) = out.iterdir()
    return run


def _background_env() -> dict[str, str]:
    """The opt-in background report: it renders in a detached process after the summary and the exit."""
    return {**os.environ, MODE_VAR: "background"}


def start(root: Path, tests: dict[str, str], scenario: str) -> RealRun:
    tests_dir, scenario_file = _write(root, tests, scenario)
    done = cloudai(*_args(tests_dir, scenario_file, root / "out"), env=_background_env())
    run_dir = _the_run_dir(root / "out")
    wait_for_report(run_dir)  # on the rendering process itself (its flock), not on a timer
    return RealRun(done.returncode, done.stdout, done.stderr, run_dir)


def start_interrupted(root: Path, after_steps: int = 3) -> RealRun:
    """The long DSE run, sent SIGINT (Ctrl-C) once its progress line for step ``after_steps`` is printed."""
    tests_dir, scenario_file = _write(root, {"dse": DSE_TEST}, LONG_DSE_SCENARIO)
    argv = [sys.executable, "-m", "cloudai", *_args(tests_dir, scenario_file, root / "out")]
    env = {**_background_env(), "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:  # the step's row is in trajectory.csv before its progress line is printed
            seen.append(line)
            if f"] step {after_steps} (" in line:
                proc.send_signal(signal.SIGINT)
                break
        out, err = proc.communicate(timeout=120)
    run_dir = _the_run_dir(root / "out")
    wait_for_report(run_dir)
    return RealRun(proc.returncode, "".join(seen) + out, err, run_dir)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def scored(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """trajectory.csv rows whose reward measures their action."""
    return [r for r in rows if r["status"] in ("ok", "cached")]


def canonical(action_json: str) -> str:
    return json.dumps(json.loads(action_json), sort_keys=True)
