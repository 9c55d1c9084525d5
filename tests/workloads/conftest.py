"""Workload tests: the stand-in binaries on PATH, and the Slurm fixtures of ``tests/slurm``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.slurm.conftest import slurm_ready  # noqa: F401  (the session fixture the slurm marker needs)

HERE = Path(__file__).resolve().parent
BIN = HERE / "bin"
CONF = HERE / "cloudai_conf"


@pytest.fixture(autouse=True)
def _needs_slurm(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("slurm") is not None:
        request.getfixturevalue("slurm_ready")


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tests/workloads/bin`` first on PATH (inherited by standalone jobs and by sbatch's jobs)."""
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return BIN
