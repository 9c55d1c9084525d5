"""SIGINT (Ctrl-C to the process group) and SIGTERM during agent-driven runs: exit 130, nothing left running.

Plain runs are covered in tests/foundation/test_signals_and_security.py and ``cloudai serve``
in tests/serve/test_serve_cli.py. Here: an offline DSE run with two trials in flight, each a
job that started a grandchild, and a live-RL run blocked inside the environment's ``step``.
After the signal: exit code 130, the resume command on stderr, every job and grandchild
gone, no process left in cloudai's process group or the jobs' groups; then the printed
command resumes the run to completion.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import REPO
from tests.reliability.procs import gone_within, group_members, start_cli, wait_until, working_in

SIGNALS = [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM")]


def _send(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
    """Ctrl-C reaches the terminal's whole foreground group; SIGTERM (kill, a scheduler) the process."""
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)


def _resume_command(stderr: str, run_dir: Path) -> list[str]:
    assert "resume with: " in stderr, stderr
    argv = shlex.split(stderr.split("resume with: ", 1)[1].splitlines()[0])
    assert argv[:2] == ["cloudai", "run"] and argv[-2:] == ["--resume", str(run_dir.resolve())]
    return [sys.executable, "-m", "cloudai", *argv[1:]]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("sig", SIGNALS)
def test_dse_interrupt_cancels_trials_and_resumes(tmp_path: Path, sig: signal.Signals) -> None:
    hang = tmp_path / "hang"
    hang.touch()
    cmd = (
        f"if [ -e {hang} ]; then sleep 300 & echo $! > child.pid; echo $$ > job.pid; wait; fi; "
        """echo '{"default": 2}' > metrics.json; true"""
    )
    proc, out = _start_dse(tmp_path, cmd)
    wait_until(lambda: out.exists() and any(out.iterdir()), proc, "the run dir")
    (run_dir,) = out.iterdir()
    iteration = run_dir / "t" / "0"

    def pids_written() -> bool:
        files = list(iteration.glob("*/*.pid"))
        return len(files) == 4 and all(p.read_text().strip() for p in files)

    wait_until(pids_written, proc, "the pid files")
    jobs = [int(p.read_text()) for p in iteration.glob("*/job.pid")]
    pids = jobs + [int(p.read_text()) for p in iteration.glob("*/child.pid")]

    _send(proc, sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    resume = _resume_command(stderr, run_dir)
    assert len(jobs) == 2 and gone_within(pids), [p for p in pids if Path(f"/proc/{p}").exists()]
    assert group_members(proc.pid) == [] and all(group_members(job) == [] for job in jobs)
    assert working_in(run_dir) == []
    assert sorted(json.loads(p.read_text())["status"] for p in iteration.glob("*/job.json")) == ["cancelled"] * 2
    assert _rows(iteration / "trajectory.csv") == []  # cancelled trials are not recorded: resume re-runs them

    hang.unlink()
    resumed = subprocess.run(resume, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    rows = _rows(iteration / "trajectory.csv")
    assert sorted(json.loads(r["action"])["x"] for r in rows) == [1, 2, 3, 4]
    # steps 1 and 2 were cancelled: their numbers are reused (env_params draw per step), their files set aside
    assert [r["step"] for r in rows] == ["1", "2", "3", "4"]
    aside = sorted(p.parent.name for p in iteration.glob("*.cancelled/job.json"))
    assert aside == ["1.cancelled", "2.cancelled"]
    assert {json.loads(p.read_text())["status"] for p in iteration.glob("*.cancelled/job.json")} == {"cancelled"}


def test_second_ctrl_c_while_stopping_kills_at_once(tmp_path: Path) -> None:
    """Jobs that ignore SIGTERM get a grace period; a second Ctrl-C ends it: SIGKILL, still exit 130 and resumable."""
    cmd = "trap 'touch got_term' TERM; echo $$ > job.pid; while true; do sleep 0.1; done; true"
    proc, out = _start_dse(tmp_path, cmd)

    def pid_files() -> list[Path]:
        return [p for p in out.glob("*/t/0/*/job.pid") if p.read_text().strip()]

    wait_until(lambda: len(pid_files()) == 2, proc, "two trials running")
    jobs = [int(p.read_text()) for p in pid_files()]
    os.killpg(proc.pid, signal.SIGINT)
    wait_until(lambda: len(list(out.glob("*/t/0/*/got_term"))) == 2, proc, "both jobs to get SIGTERM")
    os.killpg(proc.pid, signal.SIGINT)  # the impatient second Ctrl-C, inside the grace period
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    (run_dir,) = out.iterdir()
    _resume_command(stderr, run_dir)
    assert gone_within(jobs) and all(group_members(job) == [] for job in jobs)
    assert group_members(proc.pid) == []
    records = [json.loads(p.read_text()) for p in run_dir.glob("t/0/*/job.json")]
    assert sorted(r["status"] for r in records) == ["cancelled", "cancelled"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS)
def test_live_rl_interrupt_mid_step_then_resume(tmp_path: Path, sig: signal.Signals) -> None:
    block, blocked = tmp_path / "block", tmp_path / "blocked"
    block.touch()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "l.toml").write_text(
        'name = "l"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 6\n'
        'agent_metrics = ["x"]\nagent_reward_function = "identity"\nagent_config = { seed = 3, confirm = 0 }\n'
        '[cmd_args]\nlive_rl_mode = true\nenv_class = "tests.reliability.live_block.BlockingEnv"\n'
        f'block_file = "{block}"\nblocked_file = "{blocked}"\nblock_after = 3\n'
    )
    (tmp_path / "s.toml").write_text('name = "l"\n[[Tests]]\nid = "t"\ntest_name = "l"\n')
    out = tmp_path / "out"
    args = ["run", "--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "s.toml", "--output-dir", out]
    proc = subprocess.Popen([sys.executable, "-m", "cloudai", *map(str, args)], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    wait_until(blocked.exists, proc, "the env to block in step 4")
    (run_dir,) = out.iterdir()

    _send(proc, sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    resume = _resume_command(stderr, run_dir)
    assert group_members(proc.pid) == []
    trajectory = run_dir / "t" / "0" / "trajectory.csv"
    assert [r["step"] for r in _rows(trajectory)] == ["1", "2", "3"]  # the interrupted step is not recorded
    before = trajectory.read_text()

    block.unlink()
    resumed = subprocess.run(resume, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert resumed.returncode == 0, resumed.stderr
    assert trajectory.read_text().startswith(before)
    assert len(_rows(trajectory)) == 6


def _start_dse(tmp_path: Path, cmd: str) -> tuple[subprocess.Popen[str], Path]:
    """``cloudai run`` of a 4-point BashCmd sweep of ``cmd``, two trials in flight; the process and output root."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "h.toml").write_text(
        'name = "h"\ntest_template_name = "BashCmd"\nagent_config = { max_parallel = 2 }\n'
        f"[cmd_args]\ncmd = {json.dumps(cmd)}\nx = [1, 2, 3, 4]\n"
    )
    (tmp_path / "s.toml").write_text('name = "h"\n[[Tests]]\nid = "t"\ntest_name = "h"\n')
    out = tmp_path / "out"
    proc = start_cli("run", "--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "s.toml",
                     "--output-dir", out)  # fmt: skip
    return proc, out
