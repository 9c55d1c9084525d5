"""End to end through the real CLI on the local Slurm (``tests/slurm/slurm_system.toml``)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.conftest import CONF, cloudai
from tests.slurm.conftest import SYSTEM_TOML, squeue_ids

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("timeout_job", "no_new_jobs_left")]
SLEEP_TESTS = CONF / "common" / "test"
GRID6 = (  # a 2 x 3 grid of 1 s Synthetic trials
    'name = "grid6"\ntest_template_name = "Synthetic"\nagent = "grid_search"\nagent_metrics = ["bus_bw"]\n'
    'agent_config = { max_parallel = 2 }\n[cmd_args]\nalgo = ["ring", "tree"]\nmessage_size = 1048576\n'
    "chunk_kb = [64, 128, 256]\nduration_s = 1\n"
)
GRID6_SCENARIO = 'name = "dse"\n[[Tests]]\nid = "grid"\ntest_name = "grid6"\n'


@pytest.fixture
def no_new_jobs_left(tmp_path: Path) -> Iterator[None]:
    """Every test here must leave no job of its own in Slurm's queue."""
    yield
    assert not squeue_ids(tmp_path), "jobs left in squeue"


def records(run_root: Path) -> dict[str, dict]:
    """``{"Tests.1": job.json, ...}`` for a plain run's iteration 0."""
    return {p.parent.parent.name: json.loads(p.read_text()) for p in run_root.glob("*/*/0/job.json")}


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """Most jobs running at one instant ([start, end) intervals from Slurm's whole-second times)."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1]))
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def test_sleep_scenario_with_every_dependency_type(tmp_path: Path) -> None:
    scenario = CONF / "common" / "test_scenario" / "sleep.toml"
    done = cloudai("run", "--system-config", SYSTEM_TOML, "--tests-dir", SLEEP_TESTS, "--test-scenario", scenario,
                   "--output-dir", tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    jobs = records(tmp_path)
    assert {k: v["status"] for k, v in jobs.items()} == {
        "Tests.1": "ok", "Tests.2": "ok", "Tests.3": "ok", "Tests.4": "stopped"
    }  # fmt: skip
    for name in jobs:
        (script,) = tmp_path.glob(f"*/{name}/0/sbatch.sh")
        assert f"#SBATCH --job-name={name}.0" in script.read_text()
    assert jobs["Tests.2"]["started_at"] >= jobs["Tests.1"]["started_at"]  # start_post_init
    assert jobs["Tests.3"]["started_at"] >= jobs["Tests.1"]["ended_at"]  # start_post_comp
    (held,) = tmp_path.glob("*/Tests.3/0/sbatch.sh")  # queued at once, behind Tests.1 (Tests.1 sleeps 2 s)
    assert f"#SBATCH --dependency=afterany:{jobs['Tests.1']['job_id']}" in held.read_text()
    assert jobs["Tests.3"]["submitted_at"] < jobs["Tests.1"]["ended_at"]
    assert jobs["Tests.4"]["reason"].startswith("Tests.1 completed")  # end_post_comp


def test_failing_job_exits_1(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write(
        "tests/fail.toml", 'name = "fail"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "echo boom >&2; exit 3"\n'
    )
    scenario = write("s.toml", 'name = "s"\n[[Tests]]\nid = "f"\ntest_name = "fail"\n')
    done = cloudai("run", "--system-config", SYSTEM_TOML, "--tests-dir", tmp_path / "tests", "--test-scenario",
                   scenario, "--output-dir", tmp_path / "out")  # fmt: skip
    assert done.returncode == 1, done.stderr
    record = records(tmp_path / "out")["f"]
    assert (record["status"], record["returncode"], record["reason"]) == (
        "failed",
        3,
        "exit code 3: boom",
    )  # not srun's echo


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_cancels_every_job(tmp_path: Path, write: Callable[[str, str], Path], sig: signal.Signals) -> None:
    write("tests/long.toml", 'name = "long"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 300\n')
    entries = "".join(f'[[Tests]]\nid = "t{i}"\ntest_name = "long"\n' for i in range(3))
    scenario = write("s.toml", 'name = "s"\n' + entries)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudai", "run", "--system-config", str(SYSTEM_TOML), "--tests-dir",
         str(tmp_path / "tests"), "--test-scenario", str(scenario), "--output-dir", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while len(squeue_ids(tmp_path)) < 3:  # all three queued (a poll, not a synchronisation sleep)
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "jobs were never submitted"
        time.sleep(0.05)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert {r["status"] for r in records(tmp_path / "out").values()} == {"cancelled"}
    # no_new_jobs_left: squeue holds none of them


def test_interrupt_during_sbatch_cancels_the_job_it_queued(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    """Ctrl-C while ``sbatch`` runs: the submission completes, then its job is cancelled (never orphaned)."""
    real = shutil.which("sbatch")
    assert real is not None
    wrapper = write("bin/sbatch", f'#!/bin/bash\nkill -INT "$PPID"\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    write("tests/long.toml", 'name = "long"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 300\n')
    scenario = write("s.toml", 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "long"\n')
    env = {**os.environ, "PATH": f"{wrapper.parent}:{os.environ['PATH']}"}
    done = cloudai("run", "--system-config", SYSTEM_TOML, "--tests-dir", tmp_path / "tests", "--test-scenario",
                   scenario, "--output-dir", tmp_path / "out", env=env)  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert slurm_states(tmp_path) == ["CANCELLED"]  # it was queued, and cancelled


def slurm_states(under: Path) -> list[str]:
    """States of every job submitted from under ``under`` that Slurm still remembers (MinJobAge)."""
    out = subprocess.run(["squeue", "--noheader", "--states=all", "--format=%T|%Z"], capture_output=True,
                         text=True, timeout=30, check=True)  # fmt: skip
    root = str(under.resolve())
    return [s for s, _, d in (line.partition("|") for line in out.stdout.splitlines()) if d.startswith(root)]


def test_dry_run_writes_scripts_and_submits_nothing(tmp_path: Path) -> None:
    scenario = CONF / "common" / "test_scenario" / "sleep.toml"
    done = cloudai("dry-run", "--system-config", SYSTEM_TOML, "--tests-dir", SLEEP_TESTS, "--test-scenario",
                   scenario, "--output-dir", tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert slurm_states(tmp_path) == []
    scripts = [p for p in tmp_path.glob("*/*/0/*.sh") if "#SBATCH --job-name=" in p.read_text()]
    assert len(scripts) == 4 and {p.name for p in scripts} == {"sbatch.sh"}  # the name a real run writes
    assert not list(tmp_path.glob("*/*/0/job.json"))


def test_dse_grid_on_slurm_keeps_max_parallel(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("tests/grid.toml", GRID6)
    scenario = write("s.toml", GRID6_SCENARIO)
    done = cloudai("run", "--system-config", SYSTEM_TOML, "--tests-dir", tmp_path / "tests", "--test-scenario",
                   scenario, "--output-dir", tmp_path / "out")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (trajectory,) = tmp_path.glob("out/*/grid/0/trajectory.csv")
    rows = list(csv.DictReader(trajectory.open()))
    assert [r["step"] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    assert {r["status"] for r in rows} == {"ok"}
    trials = [json.loads(p.read_text()) for p in tmp_path.glob("out/*/grid/0/*/job.json")]
    assert len(trials) == 6 and len(list(tmp_path.glob("out/*/grid/0/*/sbatch.sh"))) == 6
    assert max_overlap([(t["started_at"], t["ended_at"]) for t in trials]) <= 2


def test_missing_sbatch_fails_before_writing(tmp_path: Path) -> None:
    scenario = CONF / "common" / "test_scenario" / "sleep.toml"
    env = {**os.environ, "PATH": str(tmp_path)}  # no Slurm tools (python is run by its full path)
    done = cloudai("run", "--system-config", SYSTEM_TOML, "--tests-dir", SLEEP_TESTS, "--test-scenario", scenario,
                   "--output-dir", tmp_path / "out", env=env)  # fmt: skip
    assert done.returncode == 1
    assert "sbatch, squeue, scontrol, scancel not found on PATH" in done.stderr
    assert not (tmp_path / "out").exists()


def test_unreachable_controller_fails_before_writing(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    conf = write("slurm.conf", "ClusterName=x\nSlurmctldHost=localhost\nSlurmctldPort=1\n")
    scenario = CONF / "common" / "test_scenario" / "sleep.toml"
    env = {**os.environ, "SLURM_CONF": str(conf)}
    done = cloudai("run", "--system-config", SYSTEM_TOML, "--tests-dir", SLEEP_TESTS, "--test-scenario", scenario,
                   "--output-dir", tmp_path / "out", env=env)  # fmt: skip
    assert done.returncode == 1
    assert "controller is not reachable" in done.stderr
    assert not (tmp_path / "out").exists()


def test_bad_system_toml_exits_2(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    text = SYSTEM_TOML.read_text().replace('default_partition = "debug"', 'default_partition = "debg"')
    system = write("system.toml", text)
    scenario = CONF / "common" / "test_scenario" / "sleep.toml"
    done = cloudai("run", "--system-config", system, "--tests-dir", SLEEP_TESTS, "--test-scenario", scenario,
                   "--output-dir", tmp_path / "out")  # fmt: skip
    assert done.returncode == 2
    assert "default_partition" in done.stderr and "did you mean 'debug'?" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_interrupted_dse_on_slurm_resumes_without_rerunning(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("tests/grid.toml", GRID6)
    scenario = write("s.toml", GRID6_SCENARIO)
    args = ["--system-config", str(SYSTEM_TOML), "--tests-dir", str(tmp_path / "tests"), "--test-scenario",
            str(scenario)]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "cloudai", "run", *args, "--output-dir", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 90
    while not _trajectory(tmp_path):  # the first trial recorded (a poll, not a synchronisation sleep)
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no trial finished"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "--resume" in stderr, stderr
    assert not squeue_ids(tmp_path)
    before = _trajectory(tmp_path)
    assert 1 <= len(before) < 6
    (run_dir,) = (tmp_path / "out").iterdir()
    done = cloudai("run", *args, "--resume", run_dir)
    assert done.returncode == 0, done.stderr
    after = _trajectory(tmp_path)
    assert after[: len(before)] == before  # recorded steps kept as they were
    ok = [r["action"] for r in after if r["status"] == "ok"]
    assert len(ok) == 6 and len(set(ok)) == 6  # every grid point measured once: nothing re-run


def _trajectory(root: Path) -> list[dict[str, str]]:
    paths = list(root.glob("out/*/grid/0/trajectory.csv"))
    return list(csv.DictReader(paths[0].open())) if paths else []


def test_a_percent_in_the_name_and_a_space_in_the_output_dir(tmp_path: Path) -> None:
    """Issue 29 item 9: Slurm expands %j, %x ... in output paths (the job's output went elsewhere and it failed
    "killed by signal 53"); a space split the #SBATCH line (sbatch failed after the results dir was written)."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "echo.toml").write_text('name = "echo"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "echo hi"\n')
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "100%j_%x"\n[[Tests]]\nid = "t"\ntest_name = "echo"\n')
    out = tmp_path / "with space"
    done = cloudai("run", "--system-config", SYSTEM_TOML, "--tests-dir", tests, "--test-scenario", scenario,
                   "--output-dir", out)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (job,) = out.glob("100%j_%x_*/t/0")
    assert json.loads((job / "job.json").read_text())["status"] == "ok"
    assert (job / "stdout.txt").read_text() == "hi\n"
