"""`cloudai generate-report` as a user types it. Skipped until the command is wired into the CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import cloudai


@pytest.fixture(autouse=True, scope="module")
def _needs_the_command() -> None:
    if cloudai("generate-report", "--help").returncode != 0:
        pytest.skip("`cloudai generate-report` is not wired into cloudai.cli yet")


def test_generate_report_writes_the_report_and_says_where(dse_run: Path) -> None:
    done = cloudai("generate-report", dse_run)
    assert done.returncode == 0, done.stderr
    assert (dse_run / "report.html").exists() and (dse_run / "summary.csv").exists()
    assert str(dse_run / "report.html") in done.stdout


def test_generate_report_output_option(plain_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "r.html"
    done = cloudai("generate-report", plain_run, "--output", target)
    assert done.returncode == 0, done.stderr
    assert target.exists()


def test_generate_report_compares_several_dirs(make_dse: Callable[..., Path]) -> None:
    a, b = make_dse("a_2026-11-23_07-00-00", steps=12), make_dse("b_2026-11-23_08-00-00", steps=12, seed=4)
    done = cloudai("generate-report", a, b)
    assert done.returncode == 0, done.stderr
    assert (a.parent / "comparison.html").exists()


def test_an_empty_dir_exits_2_with_a_clear_message(tmp_path: Path) -> None:
    done = cloudai("generate-report", tmp_path)
    assert done.returncode == 2
    assert f"error: {tmp_path}: not a cloudai results directory" in done.stderr
    assert "Traceback" not in done.stderr
