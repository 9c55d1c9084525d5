"""Shared helpers: run the real CLI in a subprocess, write TOML files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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


@pytest.fixture(autouse=True)
def _not_started_through_uv(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see a plain ``cloudai`` launch whether pytest ran under ``uv run`` or not (``UV`` and
    ``UV_RUN_RECURSION_DEPTH`` make the resume command ``uv run cloudai ...``); a test sets them to check that."""
    monkeypatch.delenv("UV", raising=False)
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)
