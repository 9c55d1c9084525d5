"""Workload faults through the real CLI: hangs, crashes, bad or missing metrics, a 100 MB stdout, a full disk.

Each fault is a ``BashCmd`` trial running ``fault.sh --mode=<fault>``. What must hold: a fault
costs one trial (recorded with the right status and a reason in ``job.json``), never the run;
stdout goes to a file, not to memory; a full results disk stops the run with one clear error
and leaves the rows already written intact and resumable.

Remote GymServer faults (down, slow, 500, malformed JSON, WebSocket closed mid-step) are in
tests/gym/test_remote_faults.py.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import cloudai
from tests.reliability.procs import working_in

FAULTS = """case "$1" in
  --mode=ok) echo '{"default": 5}' > metrics.json ;;
  --mode=hang) sleep 300 ;;
  --mode=crash) echo boom >&2; kill -SEGV $$ ;;
  --mode=exit3) exit 3 ;;
  --mode=garbage) echo 'not json {' > metrics.json ;;
  --mode=nan) echo '{"default": NaN}' > metrics.json ;;
  --mode=text) echo '{"default": "fast"}' > metrics.json ;;
  --mode=none) ;;
  --mode=fill) if [ -e "$FILL_MARKER" ]; then head -c 64M /dev/zero > filler 2>/dev/null; fi
               echo '{"default": 1}' > metrics.json ;;
esac
"""


def _write_dse(root: Path, modes: list[str], *, parallel: int, time_limit: str = "00:01:00") -> list[str]:
    (root / "fault.sh").write_text(FAULTS)
    (root / "tests").mkdir()
    (root / "tests" / "f.toml").write_text(
        f'name = "f"\ntest_template_name = "BashCmd"\nagent_config = {{ max_parallel = {parallel} }}\n'
        f'[cmd_args]\ncmd = "sh {root / "fault.sh"}"\nmode = {json.dumps(modes)}\n'
    )
    (root / "s.toml").write_text(f'name = "f"\n[[Tests]]\nid = "t"\ntest_name = "f"\ntime_limit = "{time_limit}"\n')
    return ["run", "--tests-dir", str(root / "tests"), "--test-scenario", str(root / "s.toml")]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_each_fault_costs_one_trial_not_the_run(tmp_path: Path) -> None:
    modes = ["ok", "hang", "crash", "exit3", "garbage", "nan", "text", "none"]
    args = _write_dse(tmp_path, modes, parallel=len(modes), time_limit="00:00:01")
    result = cloudai(*args, "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr  # one trial succeeded: there is a best
    assert "Traceback" not in result.stderr
    (iteration,) = (tmp_path / "out").glob("*/t/0")
    rows = {json.loads(r["action"])["mode"]: r for r in _rows(iteration / "trajectory.csv")}
    assert sorted(rows) == sorted(modes)
    status = {mode: row["status"] for mode, row in rows.items()}
    assert status == {"ok": "ok", "hang": "timeout", **dict.fromkeys(modes[2:], "failed")}
    assert all(float(rows[m]["reward"]) == -1.0 for m in modes[1:])  # the penalty, not a made-up score
    reasons = {m: json.loads((iteration / rows[m]["step"] / "job.json").read_text())["reason"] for m in modes}
    assert "time limit" in reasons["hang"]
    assert reasons["crash"] == "killed by signal 11 (SIGSEGV): boom"  # the signal, then its last stderr line
    assert reasons["exit3"].startswith("exit code 3")
    assert "not valid JSON" in reasons["garbage"]
    assert "not a finite number" in reasons["nan"] and "not a finite number" in reasons["text"]
    assert (iteration / rows["crash"]["step"] / "stderr.txt").read_text() == "boom\n"
    assert json.loads(rows["none"]["observation"]) == [None]  # nothing measured: null, not 0
    assert working_in(iteration) == []  # the hung job's process group was killed
    assert "reward 0.2" in result.stdout  # best: the ok trial, reward inverse(5)


PEAK_RSS = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _peak_rss_kb(argv: list[str]) -> int:
    """The largest peak RSS among cloudai and the jobs it waited for (``RUSAGE_CHILDREN`` of a fresh parent)."""
    out = subprocess.run([sys.executable, "-c", PEAK_RSS, *argv], capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.slow
def test_a_100mb_stdout_flood_goes_to_disk_not_memory(tmp_path: Path) -> None:
    size = 100 * 1000 * 1000
    peaks = {}
    for name, cmd in (("quiet", "echo hi"), ("flood", f"yes cloudai | head -c {size}")):
        (tmp_path / name / "tests").mkdir(parents=True)
        (tmp_path / name / "tests" / "f.toml").write_text(
            f'name = "f"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "{cmd}"\n'
        )
        (tmp_path / name / "s.toml").write_text('name = "f"\n[[Tests]]\nid = "t"\ntest_name = "f"\n')
        root = tmp_path / name
        argv = [sys.executable, "-m", "cloudai", "run", "--tests-dir", str(root / "tests"),
                "--test-scenario", str(root / "s.toml"), "--output-dir", str(root / "out")]  # fmt: skip
        peaks[name] = _peak_rss_kb(argv)
    (stdout,) = (tmp_path / "flood" / "out").glob("*/t/0/stdout.txt")
    assert stdout.stat().st_size == size
    assert 0 < peaks["flood"] < peaks["quiet"] + 30 * 1024, peaks  # 100 MB held anywhere would show


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs: a results dir that fills up."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_disk_full_stops_with_a_clear_error_and_keeps_rows(tmp_path: Path, small_disk: Path) -> None:
    marker = tmp_path / "fill"
    marker.touch()
    args = _write_dse(tmp_path, ["ok", "none", "fill", "exit3", "garbage"], parallel=1)
    args = [*args, "--output-dir", str(small_disk / "out")]
    env = {**os.environ, "FILL_MARKER": str(marker)}
    result = cloudai(*args, env=env)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "No space left on device" in result.stdout + result.stderr
    assert "resume with: cloudai run" in result.stdout + result.stderr  # the way on, even with nowhere to write it
    assert "Traceback" not in result.stderr
    (iteration,) = (small_disk / "out").glob("*/t/0")
    rows = _rows(iteration / "trajectory.csv")
    assert [r["step"] for r in rows[:2]] == ["1", "2"] and len(rows) <= 3  # what was written stays
    assert all(r["status"] in ("ok", "failed") for r in rows)

    marker.unlink()
    (iteration / "3" / "filler").unlink()  # the user frees space, then resumes
    (run_dir,) = (small_disk / "out").iterdir()
    resumed = cloudai(*args[:-2], "--resume", run_dir, env=env)
    assert resumed.returncode == 0, resumed.stderr
    final = _rows(iteration / "trajectory.csv")
    assert final[:2] == rows[:2] and len(final) >= 5
