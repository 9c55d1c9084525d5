"""Shared helpers: run the real CLI in a subprocess, write TOML files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Runs in tests render their report inline (matplotlib loads once per test session, not once per run in a
# background process); the background report of real runs is covered by tests/reports/test_report_real_runs.py.
os.environ.setdefault("CLOUDAI_REPORT", "inline")
CONF = REPO / "conf"


def cloudai(
    *args: str | os.PathLike[str], cwd: Path | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``cloudai ARGS`` as a user would, capturing output."""
    return subprocess.run(
        [sys.executable, "-m", "cloudai", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write("tests/x.toml", text)`` -> the path, under tmp_path."""

    def _write(relative: str, text: str) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return _write
