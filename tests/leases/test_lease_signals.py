"""``cloudai run`` holding a lease, stopped by SIGINT, SIGTERM or SIGKILL: the lease is released on the way out, or
(SIGKILL) by ``--resume``, which finds it recorded in the results dir. The tests' own control plane holds the
sandbox pending until told, so each signal lands while the run holds a lease; synchronisation is on the lease
record appearing and the process exiting."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.cli_fork import _CTX, _child  # a warm fork of the CLI, as tests.conftest.cloudai runs it
from tests.conftest import REPO
from tests.gym.live_case import LiveCase
from tests.leases.plane import Plane, plane
from tests.reliability.procs import wait_until

KNOBS = "batch = [2, 4]\nuse_cache = true\nratio = { low = 0.5, high = 1.0 }\nthreads = [1, 2]\n"


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Plane, str]]:
    with plane() as (board, url):
        yield board, url


@pytest.fixture
def control(shared: tuple[Plane, str]) -> Iterator[tuple[Plane, str]]:
    board, url = shared
    board.reset()
    board.mode = "hold"
    yield board, url
    assert board.live() == 0, f"leases left: {list(board.sandboxes)}"  # the core assertion


def leased_case(root: Path, url: str) -> LiveCase:
    return LiveCase(root).write(
        'agent = "random_search"\nagent_steps = 3\nagent_config = { seed = 3, confirm = 0 }\n'
        f'[cmd_args]\nlive_rl_mode = true\nenv_lease_url = "{url}"\nenv_timeout_s = 10\n{KNOBS}'
    )


def start_run(case: LiveCase, tmp_path: Path):
    argv = ["run", "--tests-dir", str(case.root / "tests"), "--test-scenario", str(case.root / "scenario.toml"),
            "--output-dir", str(case.out)]  # fmt: skip
    files = [str(tmp_path / name) for name in ("stdout", "stderr", "status")]
    child = _CTX.Process(target=_child, args=(argv, str(REPO), dict(os.environ), *files))
    child.start()
    return child


def lease_records(case: LiveCase) -> list[Path]:
    return list(case.out.rglob("leases/*.json")) if case.out.exists() else []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_releases_its_lease(control: tuple[Plane, str], tmp_path: Path, sig: int) -> None:
    board, url = control
    case = leased_case(tmp_path / "case", url)
    run = start_run(case, tmp_path)
    wait_until(lambda: bool(lease_records(case)), None, "the lease record")
    assert board.live() == 1
    assert run.pid is not None
    os.kill(run.pid, sig)
    run.join(60)
    assert int((tmp_path / "status").read_text()) == 130, (tmp_path / "stderr").read_text()
    assert board.live() == 0 and lease_records(case) == []  # released on the way out
    assert board.requests[-1] == "DELETE /sandboxes/sb-1"


def test_a_sigkilled_runs_lease_is_released_by_resume(control: tuple[Plane, str], tmp_path: Path) -> None:
    board, url = control
    case = leased_case(tmp_path / "case", url)
    run = start_run(case, tmp_path)
    wait_until(lambda: bool(lease_records(case)), None, "the lease record")
    assert run.pid is not None
    os.kill(run.pid, signal.SIGKILL)
    run.join(60)
    assert board.live() == 1 and [p.stem for p in lease_records(case)] == ["sb-1"]  # left behind, but recorded

    board.go.set()  # sandboxes start now
    resumed = case.run("--resume", str(case.run_dir()))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"released sandbox sb-1 ({url}), left by the earlier run" in resumed.stdout
    assert len(case.rows()) == 3  # the resumed run leased sb-2 and ran every step on it
    assert "DELETE /sandboxes/sb-2" in board.requests
    assert board.live() == 0 and lease_records(case) == []
