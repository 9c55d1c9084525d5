"""Fio end to end with the real fio on the standalone system: CloudAI's own files unchanged, a failing fio,
and DSE over nested ``cmd_args.args`` knobs (``args.bs``) with the grid, random and Optuna agents."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import toml
from tests.conftest import CONF
from tests.dse.conftest import invoke

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio (apt-get install fio)")

CLOUDAI = Path(__file__).parent / "cloudai_conf_fio"
STANDALONE = CONF / "common" / "system" / "standalone_system.toml"
SCENARIO = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "{name}"\n'


def run_args(tests: Path, scenario: Path, out: Path, command: str = "run") -> list[str]:
    return [command, "--system-config", str(STANDALONE), "--tests-dir", str(tests), "--test-scenario", str(scenario),
            "--output-dir", str(out)]  # fmt: skip


def one(pattern: str, root: Path) -> Path:
    (path,) = root.glob(pattern)
    return path


def test_cloudai_fio_toml_and_fio_local_scenario_unchanged(tmp_path: Path) -> None:
    tests, scenario = CLOUDAI / "test", CLOUDAI / "test_scenario" / "fio_local.toml"
    checked = invoke(["verify-configs", str(tests), str(CLOUDAI / "test_scenario"), str(STANDALONE)])
    assert checked.exit_code == 0, checked.output
    assert "0 problem(s)" in checked.output

    dry = invoke(run_args(tests, scenario, tmp_path / "dry", "dry-run"))
    assert dry.exit_code == 0, dry.output
    script = one("*/Tests.fio/0/cmd.sh", tmp_path / "dry").read_text()
    assert "fio --name=fio-smoke --filename=/tmp/cloudai-fio-test --rw=randwrite --bs=128k --size=80m" in script
    assert script.rstrip().endswith("--group_reporting --thread --output-format=json")

    written = Path("/tmp/cloudai-fio-test")  # CloudAI's file names it: 80 MiB in the shared /tmp
    try:
        ran = invoke(run_args(tests, scenario, tmp_path / "run"))
    finally:
        written.unlink(missing_ok=True)  # another user's run of the suite must be able to write it
    assert ran.exit_code == 0, ran.output
    job = json.loads(one("*/Tests.fio/0/job.json", tmp_path / "run").read_text())
    assert job["status"] == "ok"
    metrics = job["metrics"]
    assert metrics["write_bw"] > 0 and metrics["write_iops"] > 0 and metrics["write_clat_p99"] > 0
    assert metrics["default"] == metrics["write_bw"]  # CloudAI's default: all operations' bw, summed
    assert "read_bw" not in metrics


def test_a_failing_fio_is_a_failed_job_with_fios_own_error_line(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "bad.toml").write_text(
        'name = "bad"\ntest_template_name = "Fio"\n[cmd_args.args]\nname = "x"\nsize = "64k"\nioengine = "bogus"\n'
    )
    (tmp_path / "s.toml").write_text(SCENARIO.format(name="bad"))
    ran = invoke(run_args(tests, tmp_path / "s.toml", tmp_path / "out"))
    assert ran.exit_code != 0
    job = json.loads(one("*/t/0/job.json", tmp_path / "out").read_text())
    assert job["status"] == "failed"
    assert job["reason"] == "exit code 1: fio: engine bogus not loadable"


def dse_test(agent: str, swept: str, steps: int | None = None) -> str:
    lines = [
        'name = "fio_dse"',
        'test_template_name = "Fio"',
        f'agent = "{agent}"',
        *([f"agent_steps = {steps}"] if steps else []),
        'agent_metrics = ["default", "write_iops"]',
        "agent_config = { seed = 3, confirm = 0 }",  # fio is noisy: these test the sweep, not the confirmation
        "[cmd_args]",
        'metric_operation = "write"',
        "[cmd_args.args]",
        'name = "dse"',
        'filename = "dse.dat"',
        'rw = "write"',
        'size = "256k"',
        *swept.splitlines(),
        "unlink = 1",
    ]
    return "\n".join(lines) + "\n"


def run_dse(tmp_path: Path, test: str) -> tuple[pd.DataFrame, Path]:
    tests = tmp_path / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "fio_dse.toml").write_text(test)
    (tmp_path / "s.toml").write_text(SCENARIO.format(name="fio_dse"))
    ran = invoke(run_args(tests, tmp_path / "s.toml", tmp_path / "out"))
    assert ran.exit_code == 0, ran.output
    iteration = one("*/t/0", tmp_path / "out")
    return pd.read_csv(iteration / "trajectory.csv"), iteration


def actions(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [json.loads(cell) for cell in frame.action]


def test_grid_over_args_bs_and_its_best_toml_runs_unchanged(tmp_path: Path) -> None:
    frame, iteration = run_dse(tmp_path, dse_test("grid_search", 'bs = ["4k", "16k", "64k"]'))
    assert list(frame.columns[:7]) == ["step", "episode", "action", "reward", "observation", "status", "elapsed_s"]
    assert actions(frame) == [{"args.bs": "4k"}, {"args.bs": "16k"}, {"args.bs": "64k"}]
    assert set(frame.status) == {"ok"}
    for step, bs in enumerate(["4k", "16k", "64k"], start=1):  # each trial ran fio with its own block size
        job = json.loads((iteration / str(step) / "job.json").read_text())
        assert job["argv"][:6] == ["fio", "--name=dse", "--filename=dse.dat", "--rw=write", "--size=256k", f"--bs={bs}"]
        assert json.loads(frame.observation[step - 1])[0] == job["metrics"]["write_bw"]

    summary = pd.read_csv(iteration.parents[1] / "summary.csv")
    assert json.loads(summary.best_action[0]) == {"args.bs": actions(frame)[int(frame.reward.idxmax())]["args.bs"]}

    best_file = iteration / "best.toml"
    best = toml.loads(best_file.read_text())
    winner = actions(frame)[int(frame.reward.idxmax())]["args.bs"]
    assert best["cmd_args"]["args"]["bs"] == winner  # nested table, a scalar: a plain test
    assert list(best["cmd_args"]["args"]) == ["name", "filename", "rw", "size", "bs", "unlink"]  # the TOML's order
    assert best["cmd_args"]["metric_operation"] == "write"

    tests = tmp_path / "best_tests"
    tests.mkdir()
    shutil.copy(best_file, tests)
    (tmp_path / "b.toml").write_text(SCENARIO.format(name=best["name"]))
    rerun = invoke(run_args(tests, tmp_path / "b.toml", tmp_path / "rerun"))
    assert rerun.exit_code == 0, rerun.output
    job = json.loads(one("*/t/0/job.json", tmp_path / "rerun").read_text())
    assert job["status"] == "ok" and f"--bs={winner}" in job["argv"]


@pytest.mark.parametrize("agent", ["random_search", "optuna"])
def test_sampling_agents_sweep_nested_lists_and_ranges(tmp_path: Path, agent: str) -> None:
    swept = 'bs = ["4k", "64k"]\niodepth = { low = 1, high = 8, dtype = "int" }\nnumjobs = [1, 2]'
    frame, iteration = run_dse(tmp_path, dse_test(agent, swept, steps=3))
    assert len(frame) == 3 and set(frame.status) == {"ok"}
    for step, action in enumerate(actions(frame), start=1):
        assert set(action) == {"args.bs", "args.iodepth", "args.numjobs"}
        assert action["args.bs"] in ("4k", "64k") and action["args.numjobs"] in (1, 2)
        assert isinstance(action["args.iodepth"], int) and 1 <= action["args.iodepth"] <= 8
        argv = json.loads((iteration / str(step) / "job.json").read_text())["argv"]
        assert [f"--bs={action['args.bs']}", f"--iodepth={action['args.iodepth']}"] == argv[5:7]
    best = toml.loads((iteration / "best.toml").read_text())["cmd_args"]["args"]
    assert {k: best[k] for k in ("bs", "iodepth", "numjobs")} in [
        {k.removeprefix("args."): v for k, v in a.items()} for a in actions(frame)
    ]


EXAMPLE_TESTS = CONF / "common" / "test"


def test_shipped_dse_fio_example_dry_run(tmp_path: Path) -> None:
    scenario = CONF / "common" / "test_scenario" / "dse_fio.toml"
    result = invoke(["dry-run", "--tests-dir", str(EXAMPLE_TESTS), "--test-scenario", str(scenario),
                     "--output-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "agent optuna, 16 step(s), 4 dimension(s), continuous" in result.output
    assert "args.bs: 5 choices ['4k', '16k', '64k', '256k', '1m']" in result.output
    assert "args.iodepth: range [1, 32] int log" in result.output


@pytest.mark.slow
def test_shipped_dse_fio_example_confirms_its_best_by_default(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(
        'name = "s"\n[[Tests]]\nid = "fio"\ntest_name = "dse_fio"\ntime_limit = "00:01:00"\nagent_steps = 3\n'
        "agent_config = { seed = 7, confirm_repeats = 2 }\n"  # 2 re-runs, not 3
        '[Tests.cmd_args.args]\nruntime = "250ms"\nsize = "16m"\n'  # 9 fio runs: 1 s of reads each is 9 s
    )
    ran = invoke(run_args(EXAMPLE_TESTS, tmp_path / "s.toml", tmp_path / "out"))
    assert ran.exit_code == 0, ran.output
    iteration = one("*/fio/0", tmp_path / "out")
    frame = pd.read_csv(iteration / "trajectory.csv")
    # fio is noisy: 3 search steps, then its best (by default 3; here all 3 distinct points) re-run twice each
    assert len(frame) == 3 + 3 * 2 and set(frame.status) == {"ok"}
    confirmed = pd.read_csv(iteration / "confirm.csv")
    assert sorted(confirmed.step) == list(range(4, 10))
    assert all(set(a) == {"args.bs", "args.ioengine", "args.iodepth", "args.numjobs"} for a in actions(frame))
    assert not list(iteration.glob("*/fio-dse.dat*"))  # unlink = 1: no 128 MiB file left per trial
    text = (iteration / "best.toml").read_text()
    assert "# Recommended (best.toml is it): candidate " in text and " MiB/s (95 % CI, n=2)" in text
    best = toml.loads(text)
    assert best["cmd_args"]["args"]["rw"] == "randread" and isinstance(best["cmd_args"]["args"]["bs"], str)
    assert "recommended read_bw: candidate " in ran.output and "confirmed: mean " in ran.output


def test_a_trial_fio_refuses_is_failed_with_fios_error_line_and_the_sweep_goes_on(tmp_path: Path) -> None:
    frame, iteration = run_dse(tmp_path, dse_test("grid_search", 'ioengine = ["bogus", "psync"]'))
    assert list(frame.status) == ["failed", "ok"]
    failed = json.loads((iteration / "1" / "job.json").read_text())
    assert failed["reason"] == "exit code 1: fio: engine bogus not loadable"
    assert toml.loads((iteration / "best.toml").read_text())["cmd_args"]["args"]["ioengine"] == "psync"
