"""trajectory.csv / env.csv: strict on write, tolerant of a torn tail on read, repaired on resume."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from cloudai.errors import ConfigError
from cloudai.recordfiles import COLUMNS
from cloudai.trajectory.records import TrajectoryWriter, read_trajectory


def _append(writer: TrajectoryWriter, step: int, status: str = "ok", env: dict | None = None) -> None:
    writer.append(step=step, episode=1, action={"a": step, "b": "x"}, reward=float(step),
                  observation=[float(step), math.nan], status=status, elapsed_s=0.5, env=env)  # fmt: skip


def test_rows_are_fixed_columns_json_and_step_ordered(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path, ["load"])
    for step in (1, 2, 5):
        _append(writer, step, env={"load": 0.5 if step != 2 else True})
    writer.close()
    frame = pd.read_csv(tmp_path / "trajectory.csv")
    assert tuple(frame.columns) == COLUMNS
    assert list(frame.step) == [1, 2, 5]
    assert frame.observation[0] == "[1.0,null]"  # NaN is JSON null
    env = pd.read_csv(tmp_path / "env.csv")
    assert list(env.columns) == ["step", "load"] and list(env.step) == [1, 2, 5]
    assert list(env.load) == ["0.5", "true", "0.5"]


def test_writer_refuses_bad_rows(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path, ["load"])
    _append(writer, 3, env={"load": 1})
    with pytest.raises(ValueError, match="not above"):
        _append(writer, 3, env={"load": 1})
    with pytest.raises(ValueError, match="status"):
        _append(writer, 4, status="weird", env={"load": 1})
    with pytest.raises(ValueError, match="env params"):
        _append(writer, 4, env={"other": 1})
    assert not (tmp_path / "env.csv").exists() or len(read_trajectory(tmp_path, ["load"])) == 1


def test_no_env_csv_without_env_params(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path)
    _append(writer, 1)
    writer.close()
    assert not (tmp_path / "env.csv").exists()


def test_torn_tail_is_dropped_and_repaired_on_resume(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path, ["load"])
    for step in (1, 2, 3):
        _append(writer, step, env={"load": step})
    writer.close()
    # a crash between the env row and the trajectory row of step 4, inside the trajectory row of step 3
    with (tmp_path / "env.csv").open("a") as fh:
        fh.write("4,4\n")
    text = (tmp_path / "trajectory.csv").read_text()
    (tmp_path / "trajectory.csv").write_text(text[:-7])
    rows = read_trajectory(tmp_path, ["load"])
    assert [r.step for r in rows] == [1, 2]
    assert math.isnan(rows[0].observation[1]) and rows[1].env == {"load": "2"}
    resumed = TrajectoryWriter(tmp_path, ["load"], resume=True)
    assert resumed.last_step == 2
    _append(resumed, 3, env={"load": 9})
    resumed.close()
    assert list(pd.read_csv(tmp_path / "trajectory.csv").step) == [1, 2, 3]
    assert list(pd.read_csv(tmp_path / "env.csv").load) == [1, 2, 9]


def test_damage_in_the_middle_is_an_error(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path)
    for step in (1, 2, 3):
        _append(writer, step)
    writer.close()
    lines = (tmp_path / "trajectory.csv").read_text().splitlines()
    lines[2] = "garbage"
    (tmp_path / "trajectory.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="line 3"):
        read_trajectory(tmp_path)


def test_a_missing_env_row_in_the_middle_is_an_error(tmp_path: Path) -> None:
    writer = TrajectoryWriter(tmp_path, ["load"])
    for step in (1, 2, 3):
        _append(writer, step, env={"load": step})
    writer.close()
    env = (tmp_path / "env.csv").read_text().splitlines()
    (tmp_path / "env.csv").write_text("\n".join(env[:2] + env[3:]) + "\n")
    with pytest.raises(ConfigError, match=r"env\.csv"):
        read_trajectory(tmp_path, ["load"])


def test_changed_env_params_are_an_error(tmp_path: Path) -> None:
    TrajectoryWriter(tmp_path, ["load"]).close()
    with pytest.raises(ConfigError, match="header"):
        read_trajectory(tmp_path, ["jitter"])


def test_resume_and_the_report_read_a_row_alike(tmp_path: Path) -> None:
    """One row parser (``recordfiles.parse_cells``) behind the strict reader (--resume) and the lenient one
    (reports): the same fields, the same NaN for nothing measured, a legacy row without the reason column."""
    from cloudai.reports.trajectory import read_trajectory as report_read

    writer = TrajectoryWriter(tmp_path)
    for step, status in ((1, "ok"), (2, "failed")):
        _append(writer, step, status)
    writer.close()
    with (tmp_path / "trajectory.csv").open("a") as fh:  # a row written before the reason column existed
        fh.write('3,1,"{""a"": 3, ""b"": ""x""}",3.0,"[3.0, null]",ok,0.5\n')
    strict, lenient = read_trajectory(tmp_path), report_read(tmp_path / "trajectory.csv").steps

    def fields(row: object) -> tuple[object, ...]:
        values = [getattr(row, f) for f in ("step", "episode", "action", "reward", "status", "elapsed_s", "reason")]
        return (*values, [None if math.isnan(v) else v for v in row.observation])  # type: ignore[attr-defined]

    assert [fields(r) for r in strict] == [fields(s) for s in lenient]
    assert [r.step for r in strict] == [1, 2, 3] and strict[2].reason == ""
