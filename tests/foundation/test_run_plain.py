"""End-to-end plain runs through the real CLI: dependencies, time limits, failures, exit codes."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CONF, cloudai


def _jobs(run_root: Path) -> dict[str, dict]:
    (run_dir,) = [p for p in run_root.iterdir() if p.is_dir()]
    return {p.parent.parent.name: json.loads(p.read_text()) for p in run_dir.glob("*/0/job.json")}


def test_readme_command_runs_sleep_scenario_on_embedded_standalone(tmp_path: Path) -> None:
    shutil.copytree(CONF, tmp_path / "conf")
    result = cloudai(
        "run",
        "--tests-dir",
        "conf/common/test",
        "--test-scenario",
        "conf/common/test_scenario/sleep.toml",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "Results: results/sleep-scenario_" in result.stdout
    jobs = _jobs(tmp_path / "results")
    first, init, comp, end = (jobs[f"Tests.{i}"] for i in (1, 2, 3, 4))
    assert [j["status"] for j in (first, init, comp)] == ["ok", "ok", "ok"]
    # start_post_init: started while Tests.1 was running
    assert first["started_at"] <= init["started_at"] < first["ended_at"]
    # start_post_comp: started after Tests.1 ended
    assert comp["started_at"] >= first["ended_at"]
    # end_post_comp: stopped when Tests.1 completed, long before its own 5 s
    assert end["status"] == "stopped"
    assert end["ended_at"] >= first["ended_at"]
    assert "Tests.1" in end["reason"]
    assert "Tests.4.0 stopped: Tests.1 completed (end_post_comp)" in result.stdout  # said once, not "stopped: stopped"


def test_time_limit_kills_the_job_and_records_timeout(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("tests/long.toml", 'name = "long"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 60\n')
    scenario = write("s.toml", 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "long"\ntime_limit = "0:01"\n')
    result = cloudai(
        "run", "--tests-dir", tmp_path / "tests", "--test-scenario", scenario, "--output-dir", tmp_path / "out"
    )
    assert result.returncode == 1
    job = _jobs(tmp_path / "out")["t"]
    assert job["status"] == "timeout"
    assert "time limit" in job["reason"]


def test_failing_job_gives_exit_1_and_the_others_still_complete(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    write("tests/bad.toml", 'name = "bad"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "exit 7"\n')
    write("tests/good.toml", 'name = "good"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "echo fine"\n')
    scenario = write(
        "s.toml",
        'name = "s"\n[[Tests]]\nid = "bad"\ntest_name = "bad"\n'
        '[[Tests]]\nid = "good"\ntest_name = "good"\n  [[Tests.dependencies]]\n  type = "start_post_comp"\n'
        '  id = "bad"\n',
    )
    result = cloudai(
        "run", "--tests-dir", tmp_path / "tests", "--test-scenario", scenario, "--output-dir", tmp_path / "out"
    )
    assert result.returncode == 1
    jobs = _jobs(tmp_path / "out")
    assert jobs["bad"]["status"] == "failed" and jobs["bad"]["returncode"] == 7
    assert jobs["good"]["status"] == "ok"
    (good_dir,) = (tmp_path / "out").glob("*/good/0")
    assert (good_dir / "stdout.txt").read_text() == "fine\n"


def test_iterations_run_one_after_another(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("tests/t.toml", 'name = "t"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "echo $PWD"\n')
    scenario = write("s.toml", 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\niterations = 3\n')
    result = cloudai(
        "run", "--tests-dir", tmp_path / "tests", "--test-scenario", scenario, "--output-dir", tmp_path / "out"
    )
    assert result.returncode == 0, result.stderr
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "out").glob("*/t/*/job.json"))]
    assert [r["name"] for r in records] == ["t.0", "t.1", "t.2"]
    for earlier, later in itertools.pairwise(records):
        assert later["started_at"] >= earlier["ended_at"]


def test_dry_run_writes_scripts_and_runs_nothing(tmp_path: Path) -> None:
    result = cloudai(
        "dry-run",
        "--tests-dir",
        CONF / "common/test",
        "--test-scenario",
        CONF / "common/test_scenario/sleep.toml",
        "--output-dir",
        tmp_path / "out",
    )
    assert result.returncode == 0, result.stderr
    scripts = sorted((tmp_path / "out").glob("*/*/0/cmd.sh"))
    assert len(scripts) == 4
    assert "sleep 2" in (scripts[0].parent.parent.parent / "Tests.1/0/cmd.sh").read_text()
    assert not list((tmp_path / "out").glob("*/*/0/stdout.txt"))
    assert "Tests.2.0" in result.stdout and "start_post_init:Tests.1" in result.stdout


def test_system_config_overrides_the_embedded_default(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    system = write("system.toml", f'name = "mine"\nscheduler = "standalone"\noutput_path = "{tmp_path}/mine"\n')
    result = cloudai(
        "run",
        "--system-config",
        system,
        "--tests-dir",
        CONF / "common/test",
        "--test-scenario",
        CONF / "common/test_scenario/sleep.toml",
    )
    assert result.returncode == 0, result.stderr
    assert "on mine" in result.stdout
    assert len(list((tmp_path / "mine").glob("sleep-scenario_*/Tests.1/0/job.json"))) == 1
