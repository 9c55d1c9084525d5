"""Slurm tests: pure ones (rendering, parsing, config) run anywhere; ``@pytest.mark.slurm`` ones
run against a real Slurm.

``SLURM_CONF`` set (``.ci/run`` starts the local Slurm and exports it): that cluster is used.
Not set, as root: the session starts ``../shared/tools/start-local-slurm.sh`` itself and stops
it at the end (only if this session started it). Not root: the Slurm tests skip, loudly. As
root, a missing script or a controller that does not answer FAILS the tests: a CI that
silently skipped them would prove nothing.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import load_system
from cloudai.systems.base import Job, JobSpec
from cloudai.systems.slurm.system import SlurmSystem

HERE = Path(__file__).resolve().parent
SYSTEM_TOML = HERE / "slurm_system.toml"
TOOLS = HERE.parents[2] / "shared" / "tools"  # ../shared/tools relative to the repo


def _start_local_slurm() -> bool:
    """Start the local Slurm, export what it prints into ``os.environ``; whether this call started it."""
    script = TOOLS / "start-local-slurm.sh"
    if not script.is_file():
        pytest.fail(f"SLURM_CONF is not set and {script} is missing: cannot start a Slurm for the Slurm tests")
    env = {**os.environ, "LOCAL_SLURM_INSTALL": "1", "LOCAL_SLURM_CPUS": "8"}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=900, check=False)
    if done.returncode != 0:
        pytest.fail(f"{script} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    for line in done.stdout.splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, _, value = words[1].partition("=")
            os.environ[key] = value
    return "slurmctld started" in done.stderr


def _unreachable() -> str | None:
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`scontrol ping` failed: {exc}"
    return None if "is UP" in ping.stdout else f"`scontrol ping` says: {(ping.stdout + ping.stderr).strip()}"


@pytest.fixture(scope="session")
def slurm_ready() -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("SLURM TESTS SKIPPED: not root; the local Slurm (../shared/tools/start-local-slurm.sh) needs root")
    started = False if os.environ.get("SLURM_CONF") else _start_local_slurm()
    reason = _unreachable()
    if reason:
        pytest.fail(f"the Slurm controller (SLURM_CONF={os.environ.get('SLURM_CONF')}) is unreachable: {reason}")
    yield
    if started:
        subprocess.run(["bash", str(TOOLS / "stop-local-slurm.sh")], capture_output=True, timeout=120, check=False)


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
