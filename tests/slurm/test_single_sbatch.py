"""``--single-sbatch`` through the real CLI: one Slurm job for a whole scenario, recorded as a normal run."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import CONF, cloudai
from tests.slurm.conftest import SYSTEM_TOML, squeue_ids
from tests.slurm.test_cli import GRID6, GRID6_SCENARIO, SLEEP_TESTS, records, slurm_states

SLEEP_SCENARIO = CONF / "common" / "test_scenario" / "sleep.toml"


@pytest.mark.slurm
def test_sleep_scenario_in_one_job(tmp_path: Path) -> None:
    done = cloudai("run", "--single-sbatch", "--system-config", SYSTEM_TOML, "--tests-dir", SLEEP_TESTS,
                   "--test-scenario", SLEEP_SCENARIO, "--output-dir", tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(list(tmp_path.glob("*/single_sbatch.sh"))) == 1 and not list(tmp_path.glob("*/*/0/sbatch.sh"))
    jobs = records(tmp_path)
    assert {k: v["status"] for k, v in jobs.items()} == {
        "Tests.1": "ok", "Tests.2": "ok", "Tests.3": "ok", "Tests.4": "stopped"
    }  # fmt: skip
    assert len({v["job_id"].split(".")[0] for v in jobs.values()}) == 1  # steps of one allocation
    assert jobs["Tests.4"]["started_at"] < jobs["Tests.1"]["ended_at"]  # end_post_comp: ran alongside...
    assert jobs["Tests.4"]["ended_at"] - jobs["Tests.1"]["ended_at"] < 4  # ...and was stopped (it sleeps 5 s)
    assert jobs["Tests.3"]["started_at"] >= jobs["Tests.1"]["ended_at"]  # start_post_comp
    assert not squeue_ids(tmp_path)


@pytest.mark.slurm
def test_dse_grid_in_one_job(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("tests/grid.toml", GRID6)
    scenario = write("s.toml", GRID6_SCENARIO)
    done = cloudai("run", "--single-sbatch", "--system-config", SYSTEM_TOML, "--tests-dir", tmp_path / "tests",
                   "--test-scenario", scenario, "--output-dir", tmp_path / "out")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (trajectory,) = tmp_path.glob("out/*/grid/0/trajectory.csv")
    rows = list(csv.DictReader(trajectory.open()))
    assert [r["step"] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    assert [json.loads(r["action"]) for r in rows] == [  # grid order: the last dimension varies fastest
        {"algo": a, "chunk_kb": c} for a in ("ring", "tree") for c in (64, 128, 256)
    ]
    assert {r["status"] for r in rows} == {"ok"} and all(json.loads(r["observation"])[0] > 0 for r in rows)
    trials = [json.loads(p.read_text()) for p in tmp_path.glob("out/*/grid/0/*/job.json")]
    assert len(trials) == 6 and len({t["job_id"].split(".")[0] for t in trials}) == 1
    assert len(list(tmp_path.glob("out/*/grid/0/best.toml"))) == 1
    assert slurm_states(tmp_path / "out") == ["COMPLETED"]  # one Slurm job for all six trials


@pytest.mark.slurm
def test_dry_run_writes_one_script_and_submits_nothing(tmp_path: Path) -> None:
    done = cloudai("dry-run", "--single-sbatch", "--system-config", SYSTEM_TOML, "--tests-dir", SLEEP_TESTS,
                   "--test-scenario", SLEEP_SCENARIO, "--output-dir", tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (script,) = tmp_path.glob("*/single_sbatch.sh")
    assert script.read_text().count("cloudai_step ") == 4
    assert slurm_states(tmp_path) == []


def test_single_sbatch_on_standalone_is_a_config_error(tmp_path: Path) -> None:
    done = cloudai("run", "--single-sbatch", "--tests-dir", SLEEP_TESTS, "--test-scenario", SLEEP_SCENARIO,
                   "--output-dir", tmp_path / "out")  # fmt: skip
    assert done.returncode == 2
    assert "--single-sbatch needs a Slurm system, not 'standalone'" in done.stderr
    assert not (tmp_path / "out").exists()


def test_single_sbatch_needs_grid_points(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("tests/r.toml", 'name = "r"\ntest_template_name = "Synthetic"\nagent = "random_search"\nagent_steps = 3\n'
          'agent_metrics = ["bus_bw"]\n[cmd_args]\nchunk_kb = { low = 64, high = 256 }\n')  # fmt: skip
    scenario = write("s.toml", 'name = "s"\n[[Tests]]\nid = "r"\ntest_name = "r"\n')
    done = cloudai("dry-run", "--single-sbatch", "--system-config", SYSTEM_TOML, "--tests-dir", tmp_path / "tests",
                   "--test-scenario", scenario, "--output-dir", tmp_path / "out")  # fmt: skip
    assert done.returncode == 2
    assert "Tests[0].cmd_args.chunk_kb" in done.stderr and "without grid_points" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slurm
def test_sigint_cancels_the_allocation(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("tests/long.toml", 'name = "long"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 300\n')
    entries = "".join(f'[[Tests]]\nid = "t{i}"\ntest_name = "long"\n' for i in (0, 1))
    scenario = write("s.toml", 'name = "s"\n' + entries)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudai", "run", "--single-sbatch", "--system-config", str(SYSTEM_TOML),
         "--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(scenario),
         "--output-dir", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while slurm_states(tmp_path) != ["RUNNING"]:  # a poll, not a synchronisation sleep
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the allocation never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert not squeue_ids(tmp_path)
    assert {k: v["status"] for k, v in records(tmp_path / "out").items()} == {"t0": "cancelled", "t1": "cancelled"}


def test_order_puts_end_post_comp_first_and_reports_cycles(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    from cloudai.errors import ConfigError
    from cloudai.plan.load import load_plan
    from cloudai.run.single_sbatch import ordered

    def entry(name: str, *deps: tuple[str, str]) -> str:
        text = f'[[Tests]]\nid = "{name}"\ntest_name = "sleep_1"\n'
        return text + "".join(f'  [[Tests.dependencies]]\n  type = "{t}"\n  id = "{i}"\n' for t, i in deps)

    ok = write("ok.toml", 'name = "s"\n' + entry("a") + entry("b", ("start_post_comp", "c")) + entry("c")
               + entry("d", ("end_post_comp", "a")))  # fmt: skip
    plan = load_plan(None, SLEEP_TESTS, ok)
    assert [e.id for e in ordered(plan.scenario.entries)] == ["c", "b", "d", "a"]  # earliest ready first
    twice = entry("b", ("end_post_comp", "a"), ("start_post_comp", "a"))
    both = write("both.toml", 'name = "s"\n' + entry("a") + twice)
    with pytest.raises(ConfigError, match="cannot order the tests a, b"):
        ordered(load_plan(None, SLEEP_TESTS, both).scenario.entries)


@pytest.mark.slurm
def test_single_sbatch_does_not_resume(tmp_path: Path) -> None:
    dry = cloudai("dry-run", "--single-sbatch", "--system-config", SYSTEM_TOML, "--tests-dir", SLEEP_TESTS,
                  "--test-scenario", SLEEP_SCENARIO, "--output-dir", tmp_path)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    (old,) = tmp_path.iterdir()
    (old / "Tests.1" / "0").mkdir(parents=True)
    (old / "Tests.1" / "0" / "job.json").write_text("{}")  # as if it had run
    done = cloudai("run", "--single-sbatch", "--system-config", SYSTEM_TOML, "--tests-dir", SLEEP_TESTS,
                   "--test-scenario", SLEEP_SCENARIO, "--resume", old)  # fmt: skip
    assert done.returncode == 2 and "--single-sbatch cannot resume" in done.stderr, done.stderr
    assert slurm_states(tmp_path) == []


@pytest.mark.slurm
def test_single_sbatch_records_trials_as_a_normal_run_does(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    """Issue 30 item 7: one function decides how a finished job becomes a step. The two trials that break
    agent_constraints were ``ok`` rows (and the best) in single-sbatch mode but ``constraint`` rows normally."""
    test = GRID6.replace("duration_s = 1", "duration_s = 0").replace(
        'agent_metrics = ["bus_bw"]\n',
        'agent_metrics = ["bus_bw"]\nagent_reward_function = "identity"\nagent_constraints = { bus_bw = "<= 30" }\n',
    )
    write("tests/grid.toml", test)
    scenario = write("s.toml", GRID6_SCENARIO)
    recorded = {}
    for mode, extra in (("normal", ()), ("single", ("--single-sbatch",))):
        done = cloudai("run", *extra, "--system-config", SYSTEM_TOML, "--tests-dir", tmp_path / "tests",
                       "--test-scenario", scenario, "--output-dir", tmp_path / mode)  # fmt: skip
        assert done.returncode == 0, done.stderr
        (iteration,) = tmp_path.glob(f"{mode}/*/grid/0")
        rows = list(csv.DictReader((iteration / "trajectory.csv").open()))
        best = (iteration / "best.toml").read_text().split("\n\n", 1)[1]  # the test, without the comment lines
        recorded[mode] = ([(r["step"], r["action"], r["status"], r["reward"], r["reason"]) for r in rows], best)
    assert recorded["single"] == recorded["normal"]
    statuses = [status for _, _, status, _, _ in recorded["normal"][0]]
    assert statuses.count("constraint") == 2 and statuses.count("ok") == 4
