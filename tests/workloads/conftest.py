"""Workload tests: the stand-in binaries on PATH (Slurm tests use the session's Slurm of ``tests/conftest.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
CONF = HERE / "cloudai_conf"


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tests/workloads/bin`` first on PATH (inherited by standalone jobs and by sbatch's jobs)."""
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return BIN
