"""`cloudai generate-report` as a user types it (single runs and comparisons of real runs:
``test_report_real_runs.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import cloudai


def test_generate_report_output_option(plain_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    done = cloudai("generate-report", plain_run, "--output", target)
    assert done.returncode == 0, done.stderr
    assert f"Report: {target}" in done.stdout
    assert target.exists() and (plain_run / "summary.csv").exists()


def _unrelated(tmp_path: Path) -> Path:
    (tmp_path / "src" / "0").mkdir(parents=True)
    (tmp_path / "README.md").write_text("hello\n")
    return tmp_path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp, "not a cloudai results directory"),
        (_unrelated, "not a cloudai results directory"),
        (lambda tmp: tmp / "nope", "no such results directory"),
    ],
    ids=["empty", "unrelated", "missing"],
)
def test_a_dir_that_is_not_a_results_dir_exits_2_with_a_clear_message(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    bad = make(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    done = cloudai("generate-report", bad)
    assert done.returncode == 2
    assert f"error: {bad}: {message}" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(tmp_path.rglob("*")) == before, "nothing is written"
