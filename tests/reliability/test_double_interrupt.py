"""Ctrl-C twice (or ``uv run`` forwarding the terminal's SIGINT a second time) still ends cleanly.

A real ``cloudai run`` subprocess, seen as started through ``uv run`` (``UV`` and
``UV_RUN_RECURSION_DEPTH`` set, as uv sets them). Once its first progress line is out, two SIGINTs
are sent back to back, as uv's forwarding does. The run must still print the summary, the report
path and the exact resume command (``uv run cloudai ...``), exit 130, and leave trajectory.csv and
env.csv whole and aligned.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest

from cloudai.trajectory.records import read_trajectory

TEST = """name = "x"
test_template_name = "Synthetic"
agent = "random_search"
agent_steps = 400
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
agent_config = { max_parallel = 2, seed = 3 }
[cmd_args]
duration_s = 0.05
algo = ["ring", "tree"]
num_channels = [1, 2, 4, 8, 16, 32]
message_size = [1024, 4096, 16384, 65536, 262144, 1048576]
background_load = [0.0, 0.2, 0.5]
[env_params.background_load]
weights = [0.5, 0.3, 0.2]
"""


def _pump(name: str, pipe: IO[str] | None, lines: queue.Queue[tuple[str, str | None]]) -> None:
    assert pipe is not None
    for line in pipe:
        lines.put((name, line))
    lines.put((name, None))


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell's background job starts with SIGINT ignored


@pytest.mark.slow
def test_two_sigints_still_end_with_summary_report_and_resume_command(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "x.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n')
    env = {**os.environ, "UV": "/usr/bin/uv", "UV_RUN_RECURSION_DEPTH": "1", "PYTHONUNBUFFERED": "1"}
    args = ["run", "--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "s.toml", "--output-dir",
            tmp_path / "out"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "cloudai", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_default_sigint)  # fmt: skip
    lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
    readers = [threading.Thread(target=_pump, args=(name, pipe, lines)) for name, pipe in
               (("out", proc.stdout), ("err", proc.stderr))]  # fmt: skip
    for reader in readers:
        reader.start()
    seen = {"out": "", "err": ""}

    def until(name: str, prefix: str) -> None:
        """Block until stream ``name`` printed a line starting with ``prefix`` (the sync point)."""
        while True:
            source, line = lines.get(timeout=120)
            if line is None:
                if source == name:
                    raise AssertionError(f"never printed {prefix!r}: {seen}")
                continue
            seen[source] += line
            if source == name and line.startswith(prefix):
                return

    until("out", "[t/0] step ")  # the agent is running
    proc.send_signal(signal.SIGINT)
    until("err", "interrupted: stopping")  # the first interrupt is being handled: clean-up under way
    proc.send_signal(signal.SIGINT)  # the second one, as uv forwards it, lands in the clean-up
    proc.wait(timeout=120)
    for reader in readers:
        reader.join(timeout=60)
    while not lines.empty():
        source, line = lines.get()
        seen[source] += line or ""
    out, err = seen["out"], seen["err"]
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err
    (run_dir,) = (tmp_path / "out").iterdir()
    assert f"Report: {run_dir / 'report.html'}" in out.replace("\n", "")  # the summary ends with the report path
    assert (run_dir / "report.html").is_file()
    resume = err.split("resume with: ", 1)[1].splitlines()[0]
    assert resume.startswith("uv run cloudai run ") and resume.endswith(f"--resume {run_dir}")
    iteration = run_dir / "t" / "0"
    for name in ("trajectory.csv", "env.csv"):
        assert (iteration / name).read_text().endswith("\n")  # no torn last line
    rows = read_trajectory(iteration, ("background_load",))  # strict: raises on damage or misalignment
    env_lines = (iteration / "env.csv").read_text().splitlines()[1:]
    assert rows and [r.step for r in rows] == [int(line.split(",")[0]) for line in env_lines]
