"""Slurm tests: pure ones (rendering, parsing, config) run anywhere; ``@pytest.mark.slurm`` ones
need the real local Slurm from ``../shared/tools/start-local-slurm.sh`` (``.ci/slurm.sh``
starts it, runs them, stops it) and skip with a loud reason when it is not there."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import load_system
from cloudai.systems.base import Job, JobSpec
from cloudai.systems.slurm.system import SlurmSystem

HERE = Path(__file__).parent
SYSTEM_TOML = HERE / "slurm_system.toml"


def _why_no_slurm() -> str | None:
    if os.geteuid() != 0:
        return "not root: the local Slurm (../shared/tools/start-local-slurm.sh) needs root; run .ci/slurm.sh as root"
    if shutil.which("sbatch") is None:
        return "sbatch not on PATH: start the local Slurm with .ci/slurm.sh (LOCAL_SLURM_INSTALL=1 installs it)"
    if not os.environ.get("SLURM_CONF"):
        return 'SLURM_CONF is not set: eval "$(bash ../shared/tools/start-local-slurm.sh)" first, or run .ci/slurm.sh'
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    if "is UP" not in ping.stdout:
        return f"the Slurm controller does not answer `scontrol ping`: {(ping.stdout + ping.stderr).strip()}"
    return None


@pytest.fixture(scope="session")
def slurm_ready() -> None:
    reason = _why_no_slurm()
    if reason:
        pytest.skip(f"SLURM TESTS SKIPPED: {reason}")


@pytest.fixture(autouse=True)
def _needs_slurm(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("slurm") is not None:
        request.getfixturevalue("slurm_ready")


@pytest.fixture
def config() -> SlurmSystemConfig:
    loaded = load_system(SYSTEM_TOML)
    assert isinstance(loaded, SlurmSystemConfig)
    return loaded


@pytest.fixture
def system(config: SlurmSystemConfig) -> Iterator[SlurmSystem]:
    """A checked system; jobs a test leaves queued are scancelled afterwards."""
    slurm = SlurmSystem(config)
    slurm.check()
    before = squeue_ids()
    yield slurm
    leftover = squeue_ids() - before
    if leftover:
        subprocess.run(["scancel", *sorted(leftover)], timeout=30, check=False)


def squeue_ids() -> set[str]:
    """Job ids Slurm still has pending or running (all users: the local cluster is ours)."""
    out = subprocess.run(
        ["squeue", "--noheader", "--format=%i"], capture_output=True, text=True, timeout=30, check=True
    )
    return {line.strip() for line in out.stdout.splitlines() if line.strip()}


@pytest.fixture(scope="session")
def timeout_job(slurm_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Job]:
    """A job past its 60 s limit, queued once per session by the first test module that asks for it,
    so its minute runs while the other tests do."""
    config = load_system(SYSTEM_TOML)
    assert isinstance(config, SlurmSystemConfig)
    system = SlurmSystem(config)
    job = system.submit(JobSpec("timeout", ("sleep", "600"), tmp_path_factory.mktemp("timeout") / "job", {}, 60))
    yield job
    system.cancel([job], "test teardown")
