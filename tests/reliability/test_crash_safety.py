"""SIGKILL ``cloudai run`` at seeded random points of one DSE run, resuming after each kill.

One Synthetic run (env_params too, so env.csv is covered; one trial in flight at a time) is
killed once per entry of ``PLAN``, at a seeded random row count: right after that many rows were
recorded (nothing in flight), or while the next trial's job is running (its files set aside on
resume). After some kills a torn last line (and an env row without its trajectory row) is appended
by hand, as a kill in the middle of a write would leave them. ``PLAN`` covers each kind of kill,
each followed by a clean and a torn record, and resumes of resumed and repaired runs; every kill
costs a process start, so it holds those paths once or twice rather than 22 random draws.
After every kill the records must parse and stay step-aligned; the final ``--resume``
must finish with exactly ``STEPS`` rows, leave no step dir but the ones that were in flight,
and never touch the job dir of a step that had been recorded.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import signal
from pathlib import Path

import pandas as pd
import pytest
import toml
from tests.reliability.procs import kill_all, start_cli, wait_until, working_in

from cloudai.recordfiles import COLUMNS

STEPS, SEED = 20, 20261123
# (kind of kill, tear the record afterwards): each kind after a clean and after a torn record, twice in a row.
PLAN = [
    ("after_row", False),
    ("job_running", False),
    ("job_running", True),
    ("after_row", True),
    ("after_row", False),
    ("job_running", True),
    ("job_running", False),
    ("after_row", False),
]
TEST = f"""name = "crash"
test_template_name = "Synthetic"
agent = "random_search"
agent_steps = {STEPS}
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
agent_config = {{ seed = 5, max_parallel = 1, confirm = 0 }}
[cmd_args]
algo = ["ring", "tree", "nvls", "collnet"]
message_size = 1048576
chunk_kb = {{ low = 64, high = 8192, log = true, dtype = "int" }}
num_channels = [1, 2, 4, 8]
background_load = [0.0, 0.5, 0.9]
jitter = {{ low = 0.0, high = 0.2 }}
duration_s = 0.05
[env_params.background_load]
weights = [0.5, 0.3, 0.2]
[env_params.jitter]
distribution = "uniform"
"""
NO_JOB = ("cached", "constraint")  # statuses recorded without launching a job


def _complete_rows(path: Path) -> tuple[list[list[str]], bool]:
    """The committed rows (header first) and whether a torn last line follows them."""
    text = path.read_text() if path.exists() else ""
    lines = text.split("\n")
    torn = lines.pop() != ""
    return list(csv.reader(io.StringIO("".join(f"{line}\n" for line in lines)))), torn


def _recorded_steps(iteration: Path) -> list[int]:
    rows, _ = _complete_rows(iteration / "trajectory.csv")
    return [int(r[0]) for r in rows[1:]]


def _step_dirs(iteration: Path) -> set[int]:
    return {int(p.name) for p in iteration.iterdir() if p.name.isdigit()} if iteration.exists() else set()


def _check_records(iteration: Path) -> list[list[str]]:
    """Both files parse, every committed trajectory row is well formed and has its env row."""
    traj, _ = _complete_rows(iteration / "trajectory.csv")
    env, _ = _complete_rows(iteration / "env.csv")
    assert tuple(traj[0]) == COLUMNS
    assert env[0] == ["step", "background_load", "jitter"]
    steps = [int(r[0]) for r in traj[1:]]
    assert steps == sorted(set(steps)), steps
    for row in traj[1:]:
        assert len(row) == len(COLUMNS), row
        assert isinstance(json.loads(row[2]), dict) and isinstance(json.loads(row[4]), list)
    env_steps = [int(r[0]) for r in env[1:]]
    assert env_steps[: len(steps)] == steps and len(env_steps) - len(steps) in (0, 1), (steps, env_steps)
    return traj[1:]


def _tear(iteration: Path, rng: random.Random) -> bool:
    """What a kill in the middle of the two writes leaves: an env row alone, a torn trajectory line."""
    steps = _recorded_steps(iteration)
    traj, env = iteration / "trajectory.csv", iteration / "env.csv"
    if traj.read_text().endswith("\n") and len(_complete_rows(env)[0]) - 1 == len(steps):
        nxt = max([*steps, *_step_dirs(iteration)], default=0) + 1
        with env.open("a") as fh:
            fh.write(f"{nxt},0.5,0.1\n")
        with traj.open("a") as fh:
            fh.write(f'{nxt},1,"{{""algo"": ""ri'[: rng.randint(2, 20)])
        return True
    return False


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "crash.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text('name = "crash"\n[[Tests]]\nid = "t"\ntest_name = "crash"\n')
    out = tmp_path / "out"
    base = ["run", "--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "s.toml", "--output-dir", out]
    rng = random.Random(SEED)
    targets = sorted(rng.sample(range(1, STEPS - 2), len(PLAN)))
    run_dir: Path | None = None
    lost = 0  # trials whose job was running when cloudai was killed (set aside as <step>.cancelled on resume)
    finished: dict[int, bytes] = {}  # job.json of every recorded step, as first seen
    kinds: list[str] = []
    for target, (kind, tear) in zip(targets, PLAN, strict=True):
        proc = start_cli(*base, *(["--resume", run_dir] if run_dir else []))
        if run_dir is None:
            wait_until(lambda: out.exists() and any(out.iterdir()), proc, "the run dir")
            (run_dir,) = out.iterdir()
        iteration = run_dir / "t" / "0"

        def ready(iteration: Path = iteration, target: int = target, kind: str = kind) -> bool:
            steps = _recorded_steps(iteration)
            if len(steps) < target:
                return False
            return kind == "after_row" or any(
                s > steps[-1] and (iteration / str(s) / "cmd.sh").exists() for s in _step_dirs(iteration)
            )

        wait_until(ready, proc, f"{target} rows ({kind})")
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        kill_all(working_in(run_dir))  # the orphaned trial: nothing can stop it after a SIGKILL
        rows = _check_records(iteration)
        orphans = _step_dirs(iteration) - {int(r[0]) for r in rows}
        assert len(orphans) <= 1, orphans  # one trial in flight at most: only it can be lost
        lost += len(orphans)
        kinds.append(kind)
        for row in rows:
            record = iteration / row[0] / "job.json"
            if record.exists():
                finished.setdefault(int(row[0]), record.read_bytes())
        if tear and _tear(iteration, rng):
            kinds.append("torn")

    assert run_dir is not None
    result = start_cli(*base, "--resume", run_dir)
    _, stderr = result.communicate(timeout=300)
    assert result.returncode == 0, stderr
    iteration = run_dir / "t" / "0"
    traj, env = pd.read_csv(iteration / "trajectory.csv"), pd.read_csv(iteration / "env.csv")
    assert len(traj) == STEPS and traj.step.is_unique and traj.step.is_monotonic_increasing
    assert list(env.step) == list(traj.step)
    ran = {int(s) for s, status in zip(traj.step, traj.status, strict=True) if status not in NO_JOB}
    assert _step_dirs(iteration) == ran  # a step's number is its run's: a lost trial's files are set aside
    assert len(list(iteration.glob("*.cancelled*"))) == lost
    for step, record in finished.items():  # a recorded step is never run again
        assert (iteration / str(step) / "job.json").read_bytes() == record
    assert toml.load(iteration / "best.toml")["test_template_name"] == "Synthetic"
    assert not list(iteration.glob(".*.tmp"))
    assert kinds.count("job_running") == 4 and kinds.count("torn") >= 2, kinds
    assert lost, "no kill hit a running trial"
