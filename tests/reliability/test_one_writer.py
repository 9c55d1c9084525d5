"""Issue 29 item 1: a results dir has one writer. Two real processes, a real ``flock``: a second run on a
dir being written is exit 2 naming the writer's pid and changes nothing; a SIGKILLed writer never blocks
a later ``--resume``."""

from __future__ import annotations

import csv
import json
import os
import signal
from pathlib import Path

from tests.conftest import cloudai
from tests.reliability.procs import start_cli, wait_until

# A DSE whose trials take a while: the first process is still writing when the second one starts.
TEST = """name = "slow"
test_template_name = "BashCmd"
agent = "grid_search"
agent_metrics = ["default"]
agent_reward_function = "identity"
[cmd_args]
cmd = 'f() { sleep 0.3; echo "{\\"default\\": 1}" > metrics.json; }; f'
x = [1, 2, 3, 4, 5, 6]
"""
SCENARIO = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "slow"\n'


def _files(tmp_path: Path) -> list[str]:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "slow.toml").write_text(TEST)
    (tmp_path / "s.toml").write_text(SCENARIO)
    return ["--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(tmp_path / "s.toml")]


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    """The files cloudai itself writes (its records, logs, report), not the running trial's own job dir."""
    records = [*run_dir.glob("*"), *run_dir.glob("t/0/*")]
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(records) if p.is_file()}


def test_a_second_writer_is_refused_and_a_killed_one_blocks_nothing(tmp_path: Path) -> None:
    files = _files(tmp_path)
    first = start_cli("run", *files, "--output-dir", tmp_path / "out")
    try:
        trajectory = lambda: next((tmp_path / "out").glob("*/t/0/trajectory.csv"), None)  # noqa: E731
        wait_until(lambda: (t := trajectory()) is not None and len(t.read_text().splitlines()) >= 2, first,
                   "the first step recorded")  # fmt: skip
        run_dir = next((tmp_path / "out").iterdir())
        first.send_signal(signal.SIGSTOP)  # hold it mid-run: the dir must not change under the comparison
        before = _snapshot(run_dir)
        second = cloudai("run", *files, "--resume", run_dir)
        assert second.returncode == 2, second.stdout + second.stderr
        assert f"is being written by another cloudai (pid {first.pid})" in second.stderr, second.stderr
        assert "Traceback" not in second.stderr
        assert _snapshot(run_dir) == before, "the refused resume wrote into the dir"
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    resumed = cloudai("run", *files, "--resume", run_dir)
    assert resumed.returncode == 0, resumed.stderr
    with (run_dir / "t" / "0" / "trajectory.csv").open() as rows:
        measured = sorted(json.loads(row["action"])["x"] for row in csv.DictReader(rows) if row["status"] == "ok")
    assert measured == list(range(1, 7)), "the resumed run measured every point once"
