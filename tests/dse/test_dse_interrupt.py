"""Ctrl-C mid-run, then ``--resume``: the same rows as an uninterrupted run, no completed step run twice."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from tests.dse.conftest import Case

from cloudai.config.test import EnvParamSpec
from cloudai.envs.env_params import EnvParamSampler
from cloudai.space import Categorical, Space

TEST = """name = "x"
test_template_name = "Synthetic"
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
agent_config = { max_parallel = 3 }
[cmd_args]
duration_s = 0.2
algo = ["ring", "tree"]
num_channels = [1, 2, 4, 8, 16, 32]
"""


def _default_sigint() -> None:
    """Python ignores SIGINT when started with it ignored (pytest run in the background by a shell)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _rows(path: Path) -> int:
    return max(0, len(path.read_text().splitlines()) - 1) if path.exists() else 0


def _wait_rows(path: Path, n: int, proc: subprocess.Popen[str], limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while _rows(path) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never reached {n} rows"
        time.sleep(0.01)


SPACE = Space({}, (Categorical("background_load", (0.0, 0.2, 0.5)),))
ENV_PARAMS = """background_load = [0.0, 0.2, 0.5]
[env_params.background_load]
weights = [0.5, 0.3, 0.2]
"""


@pytest.mark.slow
def test_sigint_then_resume_runs_each_point_once(case: Callable[..., Case]) -> None:
    """random_search with env_params and 3 trials in flight: the resume paths of issues 4 and 5 at once.

    (How each agent resumes, gaps left by parallel trials included, is tested in tests/agents.)
    """
    agent = "random_search"
    test = TEST.replace("max_parallel = 3", "max_parallel = 3, confirm = 0")  # no re-runs: each point once
    c = case(test.replace("agent_metrics", f'agent = "{agent}"\nagent_metrics') + ENV_PARAMS)
    proc = subprocess.Popen([sys.executable, "-m", "cloudai", *c.args()], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)  # fmt: skip
    while not c.out.exists() or not any(c.out.iterdir()):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    trajectory = c.iteration_dir() / "trajectory.csv"
    _wait_rows(trajectory, 4, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    first = pd.read_csv(trajectory)
    assert 4 <= len(first) < 12 and list(first.step) == sorted(first.step)
    recorded = {str(s): (c.iteration_dir() / str(s) / "job.json").read_text() for s in first.step}

    command = stderr.split("resume with: ", 1)[1].strip().splitlines()[0]
    argv = shlex.split(command)
    assert argv[:2] == ["cloudai", "run"] and argv[-2:] == ["--resume", str(c.run_dir().resolve())]
    resumed = subprocess.run([sys.executable, "-m", "cloudai", *argv[1:]], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr

    final = pd.read_csv(trajectory)
    assert len(final) == 12  # an uninterrupted run records the 12 grid points
    assert list(final.step) == sorted(final.step) and final.step.is_unique
    actions = sorted(json.dumps(json.loads(a), sort_keys=True) for a in final.action)
    grid = [{"algo": a, "num_channels": n} for a in ("ring", "tree") for n in (1, 2, 4, 8, 16, 32)]
    assert actions == sorted(json.dumps(point, sort_keys=True) for point in grid)
    for step, record in recorded.items():  # completed steps were not run again
        assert (c.iteration_dir() / step / "job.json").read_text() == record
    statuses = [json.loads(p.read_text())["status"] for p in c.iteration_dir().glob("*/job.json")]
    assert statuses.count("ok") == 12  # each grid point ran to completion exactly once
    assert set(statuses) <= {"ok", "cancelled"}
    env = pd.read_csv(c.iteration_dir() / "env.csv")  # env.csv stays step-aligned and deterministic
    assert list(env.step) == list(final.step)
    sampler = EnvParamSampler({"background_load": EnvParamSpec(weights=[0.5, 0.3, 0.2])}, SPACE, 0)
    assert list(env.background_load) == [sampler.sample(s)["background_load"] for s in final.step]
    # the numbers of an uninterrupted run (cancelled trials' numbers reused): env.csv is the uninterrupted one's
    assert list(final.step) == list(range(1, 13))
