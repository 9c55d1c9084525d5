"""Issue 29 item 2: ``--resume`` and ``--warm-start`` do not trust what they read. A record that is a device, a row
torn in the middle, an action outside the test's space, a non-finite reward, a warm start that names no dir: each is
an error naming the file (and the line) or a counted skip, and a refused command writes nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests.dse.conftest import invoke

TEST = """name = "x"
test_template_name = "Synthetic"
agent = "optuna"
agent_steps = 6
agent_metrics = ["bus_bw"]
agent_config = { seed = 1, confirm = 0 }
[cmd_args]
duration_s = 0
message_size = 1048576
num_channels = [1, 2, 4, 8]
algo = ["ring", "tree"]
"""


def _args(root: Path, *more: str) -> list[str]:
    return ["run", "--tests-dir", str(root / "t"), "--test-scenario", str(root / "s.toml"), *more]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("records")
    (root / "t").mkdir()
    (root / "t" / "x.toml").write_text(TEST)
    (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\nnum_nodes = 4\n')
    assert invoke(_args(root, "--output-dir", str(root / "out"))).exit_code == 0
    return root


def _copy(finished: Path, tmp_path: Path) -> Path:
    (run,) = (finished / "out").iterdir()
    return Path(shutil.copytree(run, tmp_path / "run", symlinks=True))


def _snapshot(directory: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p), p.lstat().st_size, p.lstat().st_mtime_ns) for p in directory.rglob("*"))


def _edit(path: Path, line: int, text: str) -> None:
    lines = path.read_text().split("\n")
    lines[line - 1] = text
    path.write_text("\n".join(lines))


def _refused_resume(finished: Path, run: Path, *expected: str) -> None:
    before = _snapshot(run)
    result = invoke(_args(finished, "--resume", str(run)))
    assert result.exit_code == 2, result.output
    assert all(e in result.output for e in expected), result.output
    assert _snapshot(run) == before  # no report.html, summary.csv or debug.log rewritten, no row lost


def test_a_record_linked_to_dev_zero_is_refused(finished: Path, tmp_path: Path) -> None:
    run = _copy(finished, tmp_path)
    traj = run / "t" / "0" / "trajectory.csv"
    traj.unlink()
    os.symlink("/dev/zero", traj)
    _refused_resume(finished, run, f"{traj}: refused: not a regular file (a character device)")


def test_a_row_torn_in_the_middle_names_its_line(finished: Path, tmp_path: Path) -> None:
    """An open quote used to swallow every row after it into one 'torn last row': dropped, exit 0."""
    run = _copy(finished, tmp_path)
    traj = run / "t" / "0" / "trajectory.csv"
    _edit(traj, 3, traj.read_text().split("\n")[2][:20])
    _refused_resume(finished, run, f"{traj}: line 3 is damaged or out of step order")


def test_a_recorded_action_outside_the_space_is_refused(finished: Path, tmp_path: Path) -> None:
    run = _copy(finished, tmp_path)
    traj = run / "t" / "0" / "trajectory.csv"
    row = traj.read_text().split("\n")[2]
    _edit(traj, 3, row.replace('""num_channels"":', '""num_channels"":1', 1))  # 2 -> 12, 8 -> 18, ...
    _refused_resume(finished, run, f"{traj}: step 2 records an action that is not a point of the test: num_channels")


def test_warm_start_skips_a_non_finite_reward_and_refuses_a_damaged_record(finished: Path, tmp_path: Path) -> None:
    run = _copy(finished, tmp_path)
    traj = run / "t" / "0" / "trajectory.csv"
    cells = traj.read_text().split("\n")[1].split(",")
    reward_at = 4 if cells[2].endswith('"') else 5  # after the action's quoted JSON (one comma inside for 2 knobs)
    _edit(traj, 2, ",".join([*cells[:reward_at], "inf", *cells[reward_at + 1 :]]))
    warm = invoke(_args(finished, "--output-dir", str(tmp_path / "new"), "--warm-start", str(run)))
    assert warm.exit_code == 0, warm.output
    assert "1 skipped (knobs or values outside the new space, or a reward that is not a finite number)" in warm.output

    _edit(traj, 3, "3,1,{broken")
    refused = invoke(_args(finished, "--output-dir", str(tmp_path / "newer"), "--warm-start", str(run)))
    assert refused.exit_code == 2 and "line 3 is damaged" in refused.output, refused.output
    assert not (tmp_path / "newer").exists()


def test_a_warm_start_that_names_no_dir_is_refused(finished: Path, tmp_path: Path) -> None:
    result = invoke(_args(finished, "--output-dir", str(tmp_path / "out"), "--warm-start", ","))
    assert result.exit_code == 2, result.output
    assert "--warm-start: ',' names no directory" in result.output
    assert not (tmp_path / "out").exists()
