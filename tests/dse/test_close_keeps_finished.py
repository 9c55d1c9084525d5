"""``close()`` while a trial's job has already succeeded: the measurement is recorded, not thrown away."""

from __future__ import annotations

import csv
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from tests.gym_adapter.tomls import write_synthetic

from cloudai.envs.offline import CloudAIGymEnv
from cloudai.gym.from_toml import make
from cloudai.jobs.spec import finish_job
from cloudai.systems.base import Job
from cloudai.workloads.base import Workload


def _exited(pid: int) -> bool:
    """The job's process has exited (a zombie until its parent, the system, reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_trial_that_succeeded_before_close_is_recorded(tmp_path: Path) -> None:
    tests, scenario = write_synthetic(tmp_path)
    env = make(tests, scenario, output_dir=tmp_path / "out").cloudai_env
    assert isinstance(env, CloudAIGymEnv)
    step = env.step_async({"algo": "ring", "num_channels": 4})
    (trial,) = env._pending.values()
    assert trial.job is not None
    deadline = time.monotonic() + 60
    while not _exited(int(trial.job.job_id)):  # done, but the env has not looked yet
        assert time.monotonic() < deadline, "the trial never ended"
        time.sleep(0.01)
    env.close()
    with (env.setup.out_dir / "trajectory.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(int(r["step"]), r["status"]) for r in rows] == [(step, "ok")]


def test_an_interrupt_while_a_trial_is_recorded_loses_no_measurement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT right after job.json says ``ok`` (the instant before the row is buffered): the step is still
    recorded, so ``--resume`` does not run that point a second time (seen as a 13th ``ok`` job in a 12-point
    grid under load)."""
    from cloudai.envs import offline

    def finish_then_interrupt(job: Job, workload: Workload, *rest: Any) -> dict[str, float]:
        metrics = finish_job(job, workload, *rest)
        os.kill(os.getpid(), signal.SIGINT)  # delivered at the next bytecode: inside the env's bookkeeping
        return metrics

    monkeypatch.setattr(offline, "finish_job", finish_then_interrupt)
    tests, scenario = write_synthetic(tmp_path)
    env = make(tests, scenario, output_dir=tmp_path / "out").cloudai_env
    assert isinstance(env, CloudAIGymEnv)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, whatever ran here before
    try:
        with pytest.raises(KeyboardInterrupt):
            env.step({"algo": "ring", "num_channels": 4})
    finally:
        signal.signal(signal.SIGINT, previous)
    env.close()
    with (env.setup.out_dir / "trajectory.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(int(r["step"]), r["status"]) for r in rows] == [(1, "ok")]
    assert json.loads((env.setup.out_dir / "1" / "job.json").read_text())["status"] == "ok"
