"""``cloudai serve`` as a subprocess on a free loopback port, driven over the wire; real trials, real files.

Synchronisation: the banner line (printed once the port is bound), ``GET /health``, files a
trial writes, and the process's exit. No sleeps, no timing.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import cloudai
from tests.gym_adapter.tomls import write_tomls
from tests.reliability.procs import gone_within, group_members, wait_until
from tests.serve.serving import ServeProcess, wait_healthy
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

ACTIONS = [{"algo": "tree", "threads": 4}, {"algo": "ring", "threads": 1}, {"algo": "tree", "threads": 2}]


def trajectory(trial_dir: Path) -> list[dict[str, str]]:
    with (trial_dir / "trajectory.csv").open() as handle:
        return list(csv.DictReader(handle))


def serve(tmp_path: Path, *extra: str, env: dict[str, str] | None = None, **toml: Any) -> ServeProcess:
    tests, scenario = write_tomls(tmp_path, **toml)
    return ServeProcess(
        "--tests-dir", tests, "--test-scenario", scenario, "--output-dir", tmp_path / "out", *extra, env=env
    )


def listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} write them) of the sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_openenv_client_drives_real_trials_and_binds_loopback(tmp_path: Path) -> None:
    from openenv.core.generic_client import GenericEnvClient

    with serve(tmp_path) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert listening_addresses(int(server.url.rsplit(":", 1)[1])) == {"0100007F"}  # 127.0.0.1 only
        wait_healthy(server.url)
        with GenericEnvClient(base_url=server.url).sync() as client:
            client.reset(seed=1)
            results = [client.step(action) for action in ACTIONS]
        code, out, err = server.stop(signal.SIGTERM)
    assert code == 130, err
    rows = trajectory(server.session_dir(1))  # the first WebSocket session's own records
    assert [json.loads(r["action"]) for r in rows] == ACTIONS
    assert [float(r["reward"]) for r in rows] == pytest.approx([r.reward for r in results])
    assert [r.observation["trial"]["step"] for r in results] == [1, 2, 3]
    assert "Stopped. Results:" in out and "Traceback" not in err


def test_http_and_errors_against_the_subprocess(tmp_path: Path) -> None:
    with serve(tmp_path, mixed=True) as server:
        wait_healthy(server.url)
        schema = httpx.get(f"{server.url}/schema").json()["action"]["properties"]
        assert schema["chunk_kb"]["minimum"] == 64 and schema["algo"]["enum"] == ["ring", "tree"]
        point = {"algo": "tree", "threads": 1, "chunk_kb": 100}
        assert httpx.post(f"{server.url}/step", json={"action": point}).json()["reward"] == pytest.approx(2.11)
        assert httpx.post(f"{server.url}/step", json={"action": {**point, "x": 1}}).status_code == 422
        assert httpx.post(f"{server.url}/step", content=b"x" * (2 << 20)).status_code == 413
        ws_url = server.url.replace("http", "ws") + "/ws"
        with connect(ws_url, max_size=None) as oversized, pytest.raises(ConnectionClosed) as closed:
            oversized.send(json.dumps({"type": "step", "data": {**point, "pad": "x" * (2 << 20)}}))
            oversized.recv(timeout=60)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
        with session_after_release(ws_url) as first, connect(ws_url) as second:
            assert json.loads(second.recv())["data"]["code"] == "CAPACITY_REACHED"
            assert httpx.post(f"{server.url}/step", json={"action": point}).status_code == 409
            first.send(json.dumps({"type": "step", "data": point}))  # its own env: measured, not the HTTP cache
            assert json.loads(first.recv())["data"]["observation"]["trial"]["status"] == "ok"
        server.stop(signal.SIGINT)
    assert [r["status"] for r in trajectory(server.trial_dir)] == ["ok"]
    assert [r["status"] for r in trajectory(server.session_dir(2))] == ["ok"]  # session 1 was the oversized one


@contextmanager
def session_after_release(ws_url: str) -> Iterator[Any]:
    """A WebSocket session the server accepted. The client sees a session closed (1009) before the server has
    freed its slot, so a connection made at once may still be refused: retried until one is not (bounded)."""
    deadline = time.monotonic() + 60
    while True:
        with connect(ws_url) as ws:
            try:
                refused = json.loads(ws.recv(timeout=0.5))["data"]["code"] == "CAPACITY_REACHED"
            except TimeoutError:  # accepted: the server says nothing until asked
                yield ws
                return
        assert refused and time.monotonic() < deadline, "the closed session's slot was never freed"


def test_token_auth_and_the_token_is_never_written(tmp_path: Path) -> None:
    token = "tok-5f3a9c0e7d"
    with serve(tmp_path, "--token-var", "MY_TOKEN", env={"MY_TOKEN": token}) as server:
        wait_healthy(server.url, token)
        assert httpx.get(f"{server.url}/schema").status_code == 401
        assert httpx.post(f"{server.url}/step", json={"action": ACTIONS[0]}).status_code == 401
        wrong = {"Authorization": f"Bearer {token}x"}
        assert httpx.post(f"{server.url}/step", json={"action": ACTIONS[0]}, headers=wrong).status_code == 401
        ok = {"Authorization": f"Bearer {token}"}
        assert httpx.post(f"{server.url}/step", json={"action": ACTIONS[0]}, headers=ok).status_code == 200
        code, out, err = server.stop(signal.SIGTERM)
    assert code == 130
    assert token not in server.banner + out + err
    assert "bearer token from $MY_TOKEN" in server.banner
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert token not in path.read_text(errors="replace"), path


def waiting_on_jobs(pid: int) -> bool:
    """Whether the server's main thread blocks in ``select`` (the standalone system waiting on its jobs).

    A trial announces itself as soon as it starts, while the server may still be registering it;
    a signal is meant to land while the server waits on the trial, as it does for a running one.
    """
    return Path(f"/proc/{pid}/task/{pid}/wchan").read_text().startswith("poll_schedule_timeout")


def _block_trials(tmp_path: Path) -> str:
    """Shell that makes each trial announce itself (its pid) and wait for a release file."""
    return f"echo $$ > {tmp_path}/started; while [ ! -f {tmp_path}/release ]; do sleep 0.05; done; "


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_mid_trial_cancels_it_and_exits_130(tmp_path: Path, signum: signal.Signals) -> None:
    """The running trial's job is cancelled (no process left), finished steps stay recorded, exit 130."""
    started, release = tmp_path / "started", tmp_path / "release"
    with serve(tmp_path, before=_block_trials(tmp_path)) as server:
        wait_healthy(server.url)
        release.touch()
        assert httpx.post(f"{server.url}/step", json={"action": ACTIONS[1]}, timeout=60).status_code == 200
        release.unlink()
        started.unlink()
        with connect(server.url.replace("http", "ws") + "/ws") as ws:
            ws.send(json.dumps({"type": "step", "data": ACTIONS[0]}))
            wait_until(started.exists, server.proc, "the trial to start")
            wait_until(lambda: started.read_text().strip().isdigit(), server.proc, "the trial's pid")
            wait_until(lambda: waiting_on_jobs(server.proc.pid), server.proc, "the server to wait on the trial")
            trial_pid = int(started.read_text())
            server.proc.send_signal(signum)
            try:
                reply: dict[str, Any] | None = json.loads(ws.recv(timeout=60))
            except ConnectionClosed:
                reply = None  # the server closed the session first: as good an answer
        _out, err = server.proc.communicate(timeout=120)
    assert server.proc.returncode == 130, err
    said = "interrupted" if signum == signal.SIGINT else "stopped by SIGTERM"
    assert f"error: {said}; the running trial was cancelled" in err and "Traceback" not in err
    assert reply is None or (reply["type"], reply["data"]["code"]) == ("error", "SESSION_ERROR")
    assert gone_within([trial_pid]), "the cancelled trial's process survived"
    assert group_members(server.proc.pid) == []
    (row,) = trajectory(server.trial_dir)  # the finished step only, the file intact
    assert row["status"] == "ok" and json.loads(row["action"]) == ACTIONS[1]
    assert json.loads((server.session_dir(1) / "1" / "job.json").read_text())["status"] == "cancelled"


def test_serve_rejects_a_plain_scenario_and_a_busy_port(tmp_path: Path) -> None:
    tests, scenario = write_tomls(tmp_path)
    plain = tmp_path / "plain.toml"
    plain.write_text(
        'name = "p"\n[[Tests]]\nid = "Tests.p"\ntest_template_name = "Sleep"\n[Tests.cmd_args]\nseconds = 0\n'
    )
    result = cloudai("serve", "--tests-dir", tests, "--test-scenario", plain, "--port", "0")
    assert result.returncode == 2 and "pick one agent-driven test with test_id (found: none)" in result.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = cloudai("serve", "--tests-dir", tests, "--test-scenario", scenario, "--port", str(port))
    assert result.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert not (tmp_path / "results").exists()


def test_listening_beyond_loopback_needs_a_token_or_insecure(tmp_path: Path) -> None:
    """A trial is a real job on this machine: nobody on the network may start one unannounced (issue 29 #12)."""
    tests, scenario = write_tomls(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "CLOUDAI_SERVE_TOKEN"}
    args = ["serve", "--tests-dir", tests, "--test-scenario", scenario, "--output-dir", tmp_path / "out"]
    refused = cloudai(*args, "--host", "0.0.0.0", "--port", "0", env=env)
    assert refused.returncode == 2, refused.stderr
    assert "--host: serving on 0.0.0.0 (beyond loopback) needs a token" in refused.stderr
    assert "CLOUDAI_SERVE_TOKEN" in refused.stderr and "--insecure" in refused.stderr
    assert not (tmp_path / "out").exists()


def test_a_token_of_whitespace_only_is_refused(tmp_path: Path) -> None:
    tests, scenario = write_tomls(tmp_path)
    args = ["serve", "--tests-dir", tests, "--test-scenario", scenario, "--output-dir", tmp_path / "out"]
    refused = cloudai(*args, "--port", "0", env={**os.environ, "CLOUDAI_SERVE_TOKEN": " \t "})
    assert refused.returncode == 2, refused.stderr
    assert "CLOUDAI_SERVE_TOKEN: $CLOUDAI_SERVE_TOKEN holds only whitespace" in refused.stderr
    assert not (tmp_path / "out").exists()
