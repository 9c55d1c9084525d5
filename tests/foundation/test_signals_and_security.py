"""Interrupts kill every child and exit 130; argument values never reach a shell."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import cloudai


def _wait_for(path: Path, proc: subprocess.Popen[str], limit_s: float = 60) -> None:
    """Block until ``path`` has content (the job is up), failing fast if cloudai died."""
    deadline = time.monotonic() + limit_s
    while not (path.exists() and path.read_text().strip()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    """Running (a zombie whose parent is gone counts as dead: PID 1 here may not reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_kills_children_and_exits_130(
    tmp_path: Path, write: Callable[[str, str], Path], sig: signal.Signals
) -> None:
    cmd = f"sleep 300 & echo $! > {tmp_path}/child.pid; echo $$ > {tmp_path}/job.pid; wait"
    write("tests/hang.toml", f'name = "hang"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "{cmd}"\n')
    scenario = write("s.toml", 'name = "s"\n[[Tests]]\nid = "hang"\ntest_name = "hang"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudai", "run", "--tests-dir", str(tmp_path / "tests"), "--test-scenario",
         str(scenario), "--output-dir", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _wait_for(tmp_path / "job.pid", proc)
    _wait_for(tmp_path / "child.pid", proc)
    job_pid = int((tmp_path / "job.pid").read_text())
    child_pid = int((tmp_path / "child.pid").read_text())
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    if sig == signal.SIGTERM:  # whoever sent it sees their signal, not Ctrl-C's word
        assert "error: stopped by SIGTERM: cancelled 1 running job(s)" in stderr and "interrupted" not in stderr
    else:
        assert "error: interrupted: cancelled 1 running job(s)" in stderr
    # SIGKILL to a process group is delivered asynchronously: wait (bounded) for the group to be gone.
    deadline = time.monotonic() + 10
    while (_alive(job_pid) or _alive(child_pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(job_pid) and not _alive(child_pid)
    (record,) = (tmp_path / "out").glob("*/hang/0/job.json")
    assert json.loads(record.read_text())["status"] == "cancelled"


def test_bash_cmd_arguments_are_passed_literally(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    target = tmp_path / "pwned"
    payloads = [f"x; touch {target}", f"$(touch {target})", f"`touch {target}`", f"a'b\"c\n touch {target}"]
    args = "\n".join(f"arg{i} = {json.dumps(p)}" for i, p in enumerate(payloads))
    write(
        "tests/echo.toml",
        f'name = "echo"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "printf \'%s|\'"\n{args}\n',
    )
    scenario = write("s.toml", 'name = "s"\n[[Tests]]\nid = "e"\ntest_name = "echo"\n')
    result = cloudai(
        "run", "--tests-dir", tmp_path / "tests", "--test-scenario", scenario, "--output-dir", tmp_path / "out"
    )
    assert result.returncode == 0, result.stderr
    assert not target.exists()
    (stdout,) = (tmp_path / "out").glob("*/e/0/stdout.txt")
    assert stdout.read_text() == "".join(f"--arg{i}={p}|" for i, p in enumerate(payloads))


def test_cli_import_is_light() -> None:
    """``cloudai --help`` must stay fast: none of the heavy libraries load with the CLI module."""
    heavy = "{'pandas', 'optuna', 'gymnasium', 'httpx', 'numpy', 'pydantic', 'rich', 'fastapi'}"
    code = f"import sys, cloudai.cli; print(sorted({heavy} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_an_in_process_run_gives_the_callers_ctrl_c_back(tmp_path: Path) -> None:
    """``cloudai run`` through click's CliRunner (or a script calling ``main``) used to leave its own SIGINT/SIGTERM
    handler behind: the caller's next Ctrl-C only printed 'interrupted again'."""
    from click.testing import CliRunner

    from cloudai.cli import cli

    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    conf = Path(__file__).parents[2] / "conf" / "common"
    scenario = conf / "test_scenario" / "sleep.toml"
    args = ["run", "--tests-dir", str(conf / "test"), "--test-scenario", str(scenario), "--output-dir", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
