"""``cloudai serve --lease --system-config <slurm system>``: each sandbox a Slurm job of the local Slurm.

One control plane as a user starts it serves a live-RL run of 4 lanes (each lease a job running ``cloudai serve``
on the node), then the queue holds none of its jobs; one SIGKILLed with the keepers of its jobs: the jobs end by
their own ``--exit-when-idle``. Synchronisation: banners, ``/health``, process exits, ``squeue``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from tests.conftest import REPO, SLURM_SYSTEM_TOML
from tests.gym.live_case import LiveCase, episodes
from tests.leases.test_lease_control import _pids_with, served_tests
from tests.reliability.procs import wait_until

from cloudai.cli import cli
from cloudai.gymserver.lease import LeaseClient

TOKEN = "slurm-plane-tok-5171"


@contextmanager
def control_plane(root: Path, *flags: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``cloudai serve --lease 0`` on the local Slurm (token set): the process and its URL."""
    tests, scenario = served_tests(root)
    argv = [sys.executable, "-m", "cloudai", "serve", "--lease", "0", "--system-config", str(SLURM_SYSTEM_TOML),
            "--tests-dir", str(tests), "--test-scenario", str(scenario), "--output-dir", str(root / "out"),
            *flags]  # fmt: skip
    env = {**os.environ, "CLOUDAI_SERVE_TOKEN": TOKEN}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
                            start_new_session=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert banner.startswith("Leasing echo at http://"), banner + proc.communicate(timeout=30)[1]
        yield proc, banner.split(" at ")[1].split()[0].replace("0.0.0.0", "127.0.0.1")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)


def queued(root: Path) -> list[str]:
    """The Slurm jobs still in the queue whose job dir is under ``root`` (this test's own, whoever else queues)."""
    done = subprocess.run(["squeue", "-h", "-o", "%i|%Z"], capture_output=True, text=True, timeout=30, check=True)
    return [line.split("|")[0] for line in done.stdout.splitlines() if line.split("|", 1)[1].startswith(str(root))]


@pytest.mark.slurm
def test_a_live_rl_run_of_four_lanes_over_slurm_sandboxes_records_every_step_once_and_leaves_no_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDAI_GYM_TOKEN", TOKEN)
    with control_plane(tmp_path, "--max-leases", "4", "--lease-time-limit", "300") as (proc, url):
        case = LiveCase(tmp_path / "client").write(
            'agent = "random_search"\nagent_steps = 12\nagent_config = { seed = 3, confirm = 0, max_parallel = 4 }\n'
            f'[cmd_args]\nlive_rl_mode = true\nenv_lease_url = "{url}"\nenv_lease_environment = "echo"\n'
            "env_timeout_s = 60\n"
        )
        result = case.run()
        assert result.returncode == 0, result.stdout + result.stderr
        rows = case.rows()
        assert [int(r["step"]) for r in rows] == list(range(1, 13))  # every step recorded once
        assert {r["status"] for r in rows} == {"ok"}, [r["reason"] for r in rows]
        assert sum(len(e) for e in episodes(rows).values()) == 12
        jobs = sorted((tmp_path / "out" / "sandboxes").iterdir())
        assert len(jobs) == 4  # one Slurm job per lease
        for job in jobs:  # each ran cloudai serve on the node, behind the token
            assert "Serving 'echo' at http://127.0.0.1:" in (job / "stdout.txt").read_text()
            assert "bearer token" in (job / "stdout.txt").read_text()
            assert TOKEN not in (job / "sbatch.sh").read_text() and (job / "token").stat().st_mode & 0o077 == 0
        assert queued(tmp_path) == []  # every lease released: every job cancelled
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(f"{url}/sandboxes", headers=headers).json() == {"sandboxes": []}
    assert proc.returncode == 130


@pytest.mark.slurm
def test_a_sigkilled_control_plane_and_its_keepers_leave_jobs_that_end_by_their_own_idle_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOUDAI_GYM_TOKEN", TOKEN)
    flags = ("--lease-idle-timeout", "2", "--max-leases", "1", "--host", "0.0.0.0")
    with control_plane(tmp_path, *flags) as (proc, url):
        lease = LeaseClient(url, lease_timeout_s=60).acquire()
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(f"{lease.url}/health", headers=headers).status_code == 200
        assert httpx.post(f"{url}/sandboxes", json={}, headers=headers).status_code == 429  # --max-leases 1
        (job,) = queued(tmp_path)  # and no second job was queued
        node = subprocess.run(["squeue", "-h", "-j", job, "-o", "%N"], capture_output=True, text=True, check=True)
        assert lease.url.startswith(f"http://{node.stdout.strip()}:")  # bound to 0.0.0.0: reported as its node
        keepers = [p for p in _pids_with("cloudai.serve.slurm_sandbox") if p in _pids_with(str(tmp_path))]
        assert keepers
        for pid in keepers:  # nothing is left on this side to scancel the job
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait(30)
        wait_until(lambda: queued(tmp_path) == [], None, f"Slurm job {job} to end by its own idle expiry", 60)
    job_dir = next((tmp_path / "out" / "sandboxes").iterdir())
    stderr = (job_dir / "stderr.txt").read_text()
    assert "no client for 2s (--exit-when-idle): stopping" in stderr
    assert "error" not in stderr, stderr  # a clean exit (0), not an interruption (130)


@pytest.mark.slurm
def test_a_sandbox_job_that_ends_before_serving_fails_its_lease_with_its_last_words(tmp_path: Path) -> None:
    """The keeper alone (what the board starts per lease): a job whose server dies at start (a node without the
    environment) ends it with exit 1 and the job's stderr, which the board reports as the lease's error."""
    dies = ["/bin/sh", "-c", "echo starting; echo 'no module named tests.leases' >&2; exit 2"]
    keeper = [sys.executable, "-m", "cloudai.serve.slurm_sandbox", "--system-config", str(SLURM_SYSTEM_TOML),
              "--job-dir", str(tmp_path / "job"), "--token-var", "CLOUDAI_SERVE_TOKEN", "--", *dies]  # fmt: skip
    done = subprocess.run(keeper, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    assert re.match(r"error: Slurm job \d+ ended \(failed exit code 2\) before serving: ", last), last
    assert "no module named tests.leases" in last and "Exited with exit code 2" in last, last  # its stderr's tail
    assert queued(tmp_path) == []


def test_the_slurm_only_flags_are_refused_where_they_would_do_nothing(tmp_path: Path) -> None:
    tests, scenario = served_tests(tmp_path)
    serve = ["serve", "--lease", "0", "--tests-dir", str(tests), "--test-scenario", str(scenario)]
    timed = CliRunner().invoke(cli, [*serve, "--lease-time-limit", "60"])  # the standalone system: no Slurm job
    assert timed.exit_code == 2 and "--lease-time-limit: it is a Slurm sandbox job's time limit" in timed.output
    idle = CliRunner().invoke(cli, [*serve, "--exit-when-idle", "3"])
    assert idle.exit_code == 2 and "--exit-when-idle: it stops a `cloudai serve`, not a control plane" in idle.output
