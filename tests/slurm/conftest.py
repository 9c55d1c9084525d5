"""Slurm tests: pure ones (rendering, parsing, config) run anywhere; ``@pytest.mark.slurm`` ones
run against a real Slurm (the ``slurm_ready`` fixture of ``tests/conftest.py`` starts or finds it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import load_system
from cloudai.systems.slurm.system import SlurmSystem

HERE = Path(__file__).resolve().parent
SYSTEM_TOML = HERE / "slurm_system.toml"


@pytest.fixture
def config() -> SlurmSystemConfig:
    loaded = load_system(SYSTEM_TOML)
    assert isinstance(loaded, SlurmSystemConfig)
    return loaded


@pytest.fixture
def system(config: SlurmSystemConfig, tmp_path: Path) -> Iterator[SlurmSystem]:
    """A checked system; jobs a test leaves queued are scancelled afterwards."""
    slurm = SlurmSystem(config)
    slurm.check()
    yield slurm
    leftover = squeue_ids(tmp_path)
    if leftover:
        subprocess.run(["scancel", *sorted(leftover)], timeout=30, check=False)


def squeue_ids(under: Path) -> set[str]:
    """Ids of the jobs Slurm still has pending or running that were submitted from under ``under``
    (their working dir), so other users of the same cluster do not disturb the test."""
    out = subprocess.run(
        ["squeue", "--noheader", "--format=%i|%Z"], capture_output=True, text=True, timeout=30, check=True
    )
    root = str(under.resolve())
    ids = set()
    for line in out.stdout.splitlines():
        job_id, _, work_dir = line.strip().partition("|")
        if work_dir == root or work_dir.startswith(root + "/"):
            ids.add(job_id)
    return ids
