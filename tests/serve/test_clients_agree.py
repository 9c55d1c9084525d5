"""Two trainers, one protocol: ``cloudai run`` (``RemoteGymServer``, ``env_url``) and openenv-core's client.

``cloudai run`` sweeps the served test's whole grid through a live-RL test pointing at
``cloudai serve``; openenv-core's ``GenericEnvClient`` replays the same actions against a
second, fresh ``cloudai serve``. The server-side trajectory files of both agree with each
other and with the one ``cloudai run`` wrote on its side.
"""

from __future__ import annotations

import csv
import json
import signal
from pathlib import Path

import pytest
from tests.conftest import cloudai
from tests.gym_adapter.tomls import write_tomls
from tests.serve.serving import ServeProcess, wait_healthy

from cloudai.gymserver.remote import RemoteGymServer

pytestmark = pytest.mark.slow  # three real processes, a dozen real trials

RECORD = ("action", "reward", "observation", "status")


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def started(root: Path) -> ServeProcess:
    tests, scenario = write_tomls(root)
    server = ServeProcess("--tests-dir", tests, "--test-scenario", scenario, "--output-dir", root / "out")
    wait_healthy(server.url)
    return server


def live_test(root: Path, url: str, transport: str = "ws") -> tuple[Path, Path]:
    """A live-RL test whose env is the served one: grid search over its 6 points, from the schema alone."""
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "remote.toml").write_text(
        'name = "remote"\ntest_template_name = "LiveRL"\nagent = "grid_search"\nagent_steps = 6\n'
        "agent_config = { confirm = 0 }\n"
        'agent_metrics = ["default", "bus_bw"]\n'
        f'[cmd_args]\nlive_rl_mode = true\nenv_url = "{url}"\nenv_transport = "{transport}"\n'
    )
    scenario = root / "scenario.toml"
    scenario.write_text('name = "remote"\n[[Tests]]\nid = "Tests.remote"\ntest_name = "remote"\n')
    return root / "tests", scenario


def test_cloudai_run_and_openenv_client_record_the_same_trajectory(tmp_path: Path) -> None:
    from openenv.core.generic_client import GenericEnvClient

    with started(tmp_path / "served_a") as server:
        tests, scenario = live_test(tmp_path / "client", server.url)
        result = cloudai(
            "run", "--tests-dir", tests, "--test-scenario", scenario, "--output-dir", tmp_path / "client" / "out"
        )
        assert result.returncode == 0, result.stdout + result.stderr
        code, _, err = server.stop(signal.SIGTERM)
        assert code == 130, err
    (client_file,) = (tmp_path / "client" / "out").glob("*/Tests.remote/0/trajectory.csv")
    by_client, served_a = rows(client_file), rows(server.session_dir(1) / "trajectory.csv")
    actions = [json.loads(r["action"]) for r in by_client]
    assert len(actions) == 6 and len({json.dumps(a, sort_keys=True) for a in actions}) == 6  # the whole grid

    with started(tmp_path / "served_b") as other, GenericEnvClient(base_url=other.url).sync() as client:
        client.reset()
        for action in actions:
            client.step(action)
        other.stop(signal.SIGTERM)
    served_b = rows(other.session_dir(1) / "trajectory.csv")

    assert [{k: r[k] for k in RECORD} for r in served_a] == [{k: r[k] for k in RECORD} for r in served_b]
    assert {r["status"] for r in served_a} == {"ok"}
    assert [json.loads(r["action"]) for r in served_a] == actions
    assert [float(r["reward"]) for r in served_a] == [float(r["reward"]) for r in by_client]
    assert [json.loads(r["observation"]) for r in served_a] == [json.loads(r["observation"]) for r in by_client]
    assert [r["step"] for r in served_a] == [r["step"] for r in by_client] == [str(i) for i in range(1, 7)]


def test_http_transport_runs_the_episode_on_a_server_that_keeps_state(tmp_path: Path) -> None:
    """``env_transport = "http"``: POST /reset and /step carry the episode (``cloudai serve`` keeps state there)."""
    with started(tmp_path / "served") as server:
        tests, scenario = live_test(tmp_path / "client", server.url, transport="http")
        result = cloudai(
            "run", "--tests-dir", tests, "--test-scenario", scenario, "--output-dir", tmp_path / "client" / "out"
        )
        assert result.returncode == 0, result.stdout + result.stderr
        with RemoteGymServer(server.url, transport="http") as remote:  # and no WebSocket session is ever opened
            remote.reset()
            _, _, _, info = remote.step({"algo": "tree", "threads": 4})
            assert remote._wire.ws is None and info["server_observation"]
        server.stop(signal.SIGTERM)
    (client_file,) = (tmp_path / "client" / "out").glob("*/Tests.remote/0/trajectory.csv")
    by_client, served = rows(client_file), rows(server.trial_dir / "trajectory.csv")
    served = served[:6]
    assert len(by_client) == 6 and {r["status"] for r in by_client} == {"ok"}
    assert [json.loads(r["action"]) for r in served] == [json.loads(r["action"]) for r in by_client]
    assert [float(r["reward"]) for r in served] == [float(r["reward"]) for r in by_client]
