"""Two checkouts' suites on one machine each start their own local Slurm (``tests/conftest.py``'s
``start_local_slurm``): its own directory and free ports, so one suite ending never takes the other's down.

Real daemons (root and Debian's slurm packages, as the suite's own Slurm needs; otherwise skipped with why):
two sessions' clusters up at once, next to whatever Slurm this machine already runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.conftest import local_slurm_dir, start_local_slurm, stop_local_slurm


def ports(conf: Path) -> set[int]:
    return {int(p) for p in re.findall(r"^Slurm(?:ctld|d)Port=(\d+)$", conf.read_text(), re.MULTILINE)}


def ping(conf: Path) -> str:
    env = {**os.environ, "SLURM_CONF": str(conf)}
    return subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True, timeout=30).stdout


def test_two_suites_at_once_get_their_own_slurm_dir_and_ports() -> None:
    if os.geteuid() != 0 or shutil.which("slurmctld") is None:
        pytest.skip("needs root and Debian's slurmctld (tools/start-local-slurm.sh), as the suite's own Slurm does")
    sessions = [f"two-suites-{os.getpid()}-{n}" for n in (1, 2)]
    try:
        confs = []
        for session in sessions:
            started = start_local_slurm(session)
            assert isinstance(started, list), started
            assert "started=1" in started  # its own cluster, not one found running
            (export,) = [line for line in started if line.startswith("export SLURM_CONF=")]
            confs.append(Path(export.removeprefix("export SLURM_CONF=")))
        a, b = confs
        assert a.is_relative_to(local_slurm_dir(sessions[0])) and b.is_relative_to(local_slurm_dir(sessions[1]))
        assert len(ports(a)) == len(ports(b)) == 2 and not ports(a) & ports(b)
        shared = os.environ.get("SLURM_CONF")  # the suite's own (or the machine's), if any: neither is it
        if shared:
            assert not (ports(Path(shared)) & (ports(a) | ports(b)))
        assert "is UP" in ping(a) and "is UP" in ping(b)
        stop_local_slurm(sessions[0])  # one suite ends: the other's Slurm answers on
        assert "is UP" in ping(b)
        assert not local_slurm_dir(sessions[0]).exists()
    finally:
        for session in sessions:
            stop_local_slurm(session)
