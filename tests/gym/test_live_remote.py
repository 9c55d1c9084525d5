"""Live RL against remote servers, through ``cloudai run`` with ``env_url``: a real ``openenv-core`` server
(``tests.gym.openenv_app`` in a subprocess on a free loopback port) and a raw one that misbehaves on purpose.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import REPO, cloudai
from tests.gym.live_case import LiveCase, episodes
from tests.gym.servers import SCHEMA, OpenEnvServer, ok_json, raw_server

from cloudai.gymserver.remote import RemoteGymServer

pytestmark = pytest.mark.slow  # each test starts servers and cloudai runs (seconds each)

TOKEN = "tok-5e1f0c9a77"
KNOBS = "batch = [2, 4]\nuse_cache = true\nratio = { low = 0.5, high = 1.0 }\nthreads = [1, 2]\n"


def remote_test(url: str, steps: int = 7, extra: str = "") -> str:
    return (
        f'agent = "random_search"\nagent_steps = {steps}\nagent_config = {{ seed = 3, confirm = 0 }}\n'
        'agent_metrics = ["throughput", "load_scale", "per_gpu[0]"]\n'
        f'[cmd_args]\nlive_rl_mode = true\nenv_url = "{url}"\nenv_timeout_s = 10\n{KNOBS}{extra}'
    )


def test_token_auth_and_a_whole_run_over_the_websocket(tmp_path: Path) -> None:
    with OpenEnvServer("--token-var", "T", env={"T": TOKEN}) as server:
        case = LiveCase(tmp_path).write(
            remote_test(server.url, extra="load_scale = [0.5, 2.0]\n[env_params.load_scale]\n")
        )
        environ = {k: v for k, v in os.environ.items() if k != "CLOUDAI_GYM_TOKEN"}
        refused = cloudai("run", "--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "scenario.toml",
                          "--output-dir", tmp_path / "refused", cwd=REPO, env=environ)  # fmt: skip
        assert refused.returncode == 1
        assert f"({server.url}): HTTP 401: the server wants a bearer token; set $CLOUDAI_GYM_TOKEN" in refused.stderr

        log = tmp_path / "cloudai.log"
        result = case.run("-v", "--log-file", str(log), env={"CLOUDAI_GYM_TOKEN": TOKEN})
    assert result.returncode == 0, result.stdout + result.stderr
    rows, env = case.rows(), case.rows("env.csv")
    assert [int(r["episode"]) for r in rows] == [1, 1, 1, 2, 2, 2, 3]  # the server's done after 3 steps
    assert [int(r["step"]) for r in rows] == list(range(1, 8))
    assert [r["step"] for r in env] == [r["step"] for r in rows]
    for row, drawn in zip(rows, env, strict=True):
        action, (throughput, load_scale, gpu0) = row["action"], row["observation"]
        assert set(action) == {"batch", "ratio", "threads"}  # use_cache is fixed: sent, not chosen
        assert load_scale == float(drawn["load_scale"])  # the env_param reached the server's reset
        expected = action["batch"] * action["threads"] * action["ratio"]  # use_cache = true: no halving
        assert throughput == pytest.approx(expected * load_scale) and gpu0 == pytest.approx(expected / 2)
        assert float(row["reward"]) == pytest.approx(expected)
    written = [p for p in case.out.rglob("*") if p.is_file()] + [log]
    assert len(written) > 3
    for text in [result.stdout, result.stderr, refused.stdout, refused.stderr] + [p.read_bytes() for p in written]:
        assert (TOKEN.encode() if isinstance(text, bytes) else TOKEN) not in text


def test_server_at_capacity_is_a_clear_failure(tmp_path: Path) -> None:
    with OpenEnvServer("--max-sessions", "1") as server, RemoteGymServer(server.url) as holder:
        holder.reset()  # the one session the server allows
        case = LiveCase(tmp_path).write(remote_test(server.url))
        result = case.run()
        assert result.returncode == 1
        assert f"GymServerError: reset ({server.url}): CAPACITY_REACHED" in result.stdout + result.stderr
        assert "CAPACITY_REACHED" in (case.trial_dir / "dse_failure.txt").read_text()
        assert holder.step({"batch": 1, "use_cache": True, "ratio": 1.0, "threads": 1})[1] == 1.0  # unaffected


def test_server_killed_mid_run_leaves_the_record_and_a_resume_command(tmp_path: Path) -> None:
    with OpenEnvServer("--die-at", "5") as server:
        case = LiveCase(tmp_path).write(remote_test(server.url, steps=9))
        result = case.run()
    assert result.returncode == 1
    assert (
        f"GymServerError: step ({server.url}): the server closed the connection during the step"
        in result.stdout + result.stderr
    )
    assert [int(r["step"]) for r in case.rows()] == [1, 2, 3, 4]  # intact up to the last answered step
    failure = (case.trial_dir / "dse_failure.txt").read_text()
    command = re.search(r"^resume: (.+)$", failure, re.MULTILINE)
    assert command is not None and command.group(1).endswith(f"--resume {case.run_dir().resolve()}")
    assert "closed the connection during the step" in failure  # resuming is covered in test_live.py


def test_a_step_that_outlives_the_timeout_fails_the_run(tmp_path: Path) -> None:
    with OpenEnvServer() as server:
        case = LiveCase(tmp_path).write(remote_test(server.url, extra='note = "hang"\n').replace("= 10", "= 1"))
        result = case.run()
    assert result.returncode == 1
    assert f"step ({server.url}): no reply within 1s; the session was closed" in result.stdout + result.stderr
    assert "no reply within 1s" in (case.trial_dir / "dse_failure.txt").read_text()
    assert case.rows() == []  # the timed-out step is not recorded


def test_waits_for_a_server_that_is_still_starting(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(60)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    case = LiveCase(tmp_path).write(remote_test(url, steps=4, extra="env_health_timeout_s = 120\n"))
    args = ["run", "--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "scenario.toml",
            "--output-dir", case.out]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "cloudai", *map(str, args)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        connection, _ = listener.accept()  # cloudai asked for /health before any server was up
        connection.close()
        listener.close()
        with OpenEnvServer(port=int(url.rsplit(":", 1)[1])):
            out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err
    assert [int(r["step"]) for r in case.rows()] == [1, 2, 3, 4]
    assert list(episodes(case.rows())) == [1, 2]


def test_malformed_reply_fails_the_run_with_the_call_named(tmp_path: Path) -> None:
    observation = json.dumps({"type": "observation", "data": {"observation": {"y": 1.0}, "reward": 1, "done": False}})
    healthy = {"/health": ok_json({"status": "healthy"}), "/schema": ok_json(SCHEMA)}
    with raw_server(healthy, lambda f: observation if f["type"] == "reset" else "{not json") as (url, _):
        case = LiveCase(tmp_path).write(
            f'agent = "random_search"\nagent_steps = 3\n[cmd_args]\nlive_rl_mode = true\nenv_url = "{url}"\n'
        )
        result = case.run()
    assert result.returncode == 1
    assert (
        f"GymServerError: step ({url}): malformed reply (not a JSON message with a type)"
        in result.stdout + result.stderr
    )
    assert (case.trial_dir / "dse_failure.txt").is_file()


def test_http_500_is_retried_then_reported(tmp_path: Path) -> None:
    failing = {"/health": ok_json({"status": "healthy"}), "/schema": lambda: (500, "{}")}
    with raw_server(failing) as (url, seen):
        case = LiveCase(tmp_path).write(
            f'agent = "random_search"\nagent_steps = 3\n[cmd_args]\nlive_rl_mode = true\nenv_url = "{url}"\n'
        )
        result = case.run()
    assert result.returncode == 1
    assert f"schema ({url}): GET /schema failed 3 times (last: HTTP 500)" in result.stderr
    assert seen.count("/schema") >= 2  # retried (a try may also die in transport: the raw server hangs up)
    assert not list(case.out.rglob("trajectory.csv"))
