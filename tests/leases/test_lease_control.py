"""``cloudai serve --lease``: the control plane cloudai ships, each lease a real ``cloudai serve`` child process.

The board (``cloudai.serve.sandboxes``) is checked on its own with tiny child programs, the whole plane in-process
(its app under uvicorn in a thread, its children real processes) driven by ``cloudai run``, and once as the user
starts it (``cloudai serve --lease``), stopped by SIGTERM. Synchronisation: banners, ``/health``, process exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from tests.conftest import REPO, cloudai
from tests.gym.live_case import LiveCase, episodes
from tests.reliability.procs import alive, gone_within, wait_until
from tests.serve.serving import served

from cloudai.errors import GymServerError
from cloudai.gymserver.lease import LeaseClient
from cloudai.serve.control import create_control_app
from cloudai.serve.sandboxes import Board

ECHO = (
    'name = "echo"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 100\n'
    '[cmd_args]\nlive_rl_mode = true\nenv_class = "tests.leases.envs.DyingEcho"\ndie_at = {die_at}\n'
)


SERVES_UNTIL = (  # answers GETs with 200 until the file argv[1] exists, then exits (after the request)
    "import http.server as h, os, sys\n"
    "class H(h.BaseHTTPRequestHandler):\n"
    "    def do_GET(self): self.send_response(200); self.end_headers()\n"
    "s = h.HTTPServer(('127.0.0.1', 0), H); print(f'at http://127.0.0.1:{s.server_port}', flush=True)\n"
    "while not os.path.exists(sys.argv[1]): s.handle_request()\n"
)


def served_tests(root: Path, die_at: int = 0) -> tuple[Path, Path]:
    """The tests a control plane leases out: ``echo`` (``DyingEcho``)."""
    (root / "plane").mkdir(parents=True)
    (root / "plane" / "echo.toml").write_text(ECHO.format(die_at=die_at))
    scenario = root / "plane.toml"
    scenario.write_text('name = "plane"\n[[Tests]]\nid = "echo"\ntest_name = "echo"\n')
    return root / "plane", scenario


def lease_test(url: str, steps: int, extra: str = "") -> str:
    return (
        f'agent = "random_search"\nagent_steps = {steps}\nagent_config = {{ seed = 3, confirm = 0 }}\n'
        f'[cmd_args]\nlive_rl_mode = true\nenv_lease_url = "{url}"\nenv_lease_environment = "echo"\n'
        f"env_timeout_s = 30\n{extra}"
    )


def test_the_board_fails_a_sandbox_that_exits_expires_idle_ones_and_caps_live_ones(tmp_path: Path) -> None:
    quits = [sys.executable, "-c", "import sys; sys.exit('no GPU on this node')"]
    hangs = [sys.executable, "-c", "print('at http://127.0.0.1:1', flush=True); import time; time.sleep(300)"]
    marker = tmp_path / "exit-now"
    programs = {"quits": quits, "hangs": hangs, "serves": [sys.executable, "-c", SERVES_UNTIL, str(marker)]}
    board = Board(lambda name, options: programs[str(name)], max_leases=1, idle_timeout_s=600.0)
    with served(create_control_app(board)) as url:
        once = LeaseClient(url, environment="serves")
        lease = once.acquire()  # ready: its /health answered
        (sandbox,) = board.leases()
        marker.touch()
        httpx.get(f"{lease.url}/health")  # its last request: then it exits
        wait_until(lambda: sandbox.proc is not None and sandbox.proc.poll() is not None, None, "the server's exit")
        status = httpx.get(f"{url}/sandboxes/{lease.id}").json()
        assert status["status"] == "failed" and status["error"] == "the environment server exited (0) after it started"
        once.close()
        assert board.leases() == []
        client = LeaseClient(url, environment="quits", lease_timeout_s=60)
        with pytest.raises(GymServerError, match=r"failed to start: the environment server exited \(1\) before "
                           r"serving: no GPU on this node"):  # fmt: skip
            client.acquire()
        assert board.leases() == []  # the client released the failed lease
        held = board.lease("hangs", {})
        with pytest.raises(GymServerError, match=r"HTTP 429: the control plane is at its lease limit \(1 live"):
            client.acquire()
        board.idle_timeout_s = 0.0
        assert board.expire() == [held.id] and board.leases() == []
        assert held.proc is None or held.proc.poll() is not None  # its process is stopped


def test_serve_lease_as_a_user_starts_it_replaces_a_dead_sandbox_and_sigterm_stops_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One control plane as a user starts it, for a whole run (each sandbox a real ``cloudai serve``; the first dies
    at its 3rd step and is replaced), then SIGTERM while a sandbox starts: every child process is gone."""
    tests, scenario = served_tests(tmp_path, die_at=3)
    token = "plane-tok-2210"
    monkeypatch.setenv("CLOUDAI_GYM_TOKEN", token)  # the client's
    env = {**os.environ, "CLOUDAI_SERVE_TOKEN": token}
    refused = cloudai("serve", "--lease", "0", "--host", "0.0.0.0", "--tests-dir", tests, "--test-scenario", scenario,
                      env={k: v for k, v in env.items() if k != "CLOUDAI_SERVE_TOKEN"})  # fmt: skip
    assert refused.returncode == 2 and "beyond loopback) needs a token" in refused.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudai", "serve", "--lease", "0", "--tests-dir", str(tests), "--test-scenario",
         str(scenario), "--output-dir", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert banner.startswith("Leasing echo at http://127.0.0.1:") and "bearer token" in banner, banner
        url = banner.split(" at ")[1].split()[0]
        assert httpx.post(f"{url}/sandboxes", json={}).status_code == 401  # the token is required

        case = LiveCase(tmp_path / "client").write(lease_test(url, 4, "env_lease_replacements = 1\n"))
        result = case.run()
        assert result.returncode == 0, result.stdout + result.stderr
        rows = case.rows()
        assert [len(e) for e in episodes(rows).values()] == [3, 1]  # the first sandbox died at its 3rd step
        assert rows[2]["status"] == "failed" and "died mid-episode" in rows[2]["reason"], rows[2]
        assert rows[3]["status"] == "ok"  # on the replacement
        assert not list(case.run_dir().rglob("leases/*.json"))  # every lease released: no record left
        assert _live(url, token) == []  # the core assertion
        assert gone_within(_children(scenario, proc.pid))

        client = LeaseClient(url)
        first = client._call("POST", "/sandboxes", "lease", body={})  # a lease whose sandbox is starting
        wait_until(lambda: bool(_children(scenario, proc.pid)), proc, "the sandbox's process")
        children = _children(scenario, proc.pid)
        assert _live(url, token) == [first["id"]]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert gone_within(children)  # every sandbox stopped with the control plane
        client.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_sigkilled_serve_lease_takes_its_sandboxes_along(tmp_path: Path) -> None:
    """SIGKILL of ``cloudai serve --lease`` left its ``cloudai serve`` sandboxes running with their ports (issue 35):
    each now gets SIGTERM when the control plane dies, and stops as on any SIGTERM."""
    tests, scenario = served_tests(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cloudai", "serve", "--lease", "0", "--tests-dir", str(tests), "--test-scenario",
         str(scenario), "--output-dir", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" at ")[1].split()[0]
        lease = LeaseClient(url, lease_timeout_s=120).acquire()  # ready: its own cloudai serve answers /health
        children = _children(scenario, proc.pid)
        assert children and httpx.get(f"{lease.url}/health").status_code == 200
        proc.kill()
        proc.wait(30)
        assert gone_within(children, 60)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{lease.url}/health")  # its port is free
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        for pid in _children(scenario, proc.pid):
            os.kill(pid, signal.SIGKILL)


def _live(url: str, token: str) -> list[str]:
    """The ids of the leases the control plane holds (its ``GET /sandboxes``)."""
    reply = httpx.get(f"{url}/sandboxes", headers={"Authorization": f"Bearer {token}"})
    return [s["id"] for s in reply.json()["sandboxes"]]


def _children(scenario: Path, plane: int) -> list[int]:
    return [p for p in _pids_with(str(scenario)) if p != plane]


def _pids_with(text: str) -> list[int]:
    """Live processes whose command line mentions ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_sandbox_on_a_wildcard_address_is_reported_as_the_client_reached_the_plane() -> None:
    from cloudai.serve.control import reachable

    assert reachable({"url": "http://0.0.0.0:4321"}, "gpu-box.lan") == {"url": "http://gpu-box.lan:4321"}
    assert reachable({"url": "http://[::]:4321/x"}, "::1") == {"url": "http://[::1]:4321/x"}
    assert reachable({"url": "http://10.0.0.7:4321"}, "gpu-box.lan") == {"url": "http://10.0.0.7:4321"}
    assert reachable({"id": "a", "status": "pending"}, "gpu-box.lan") == {"id": "a", "status": "pending"}
