"""``RemoteGymServer`` against a real ``openenv-core`` server (a subprocess hosting ``openenv_app``)."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterator

import pytest
from tests.gym.servers import OpenEnvServer, held_port

from cloudai.errors import ConfigError, GymServerError
from cloudai.gymserver.factory import create_gym_server
from cloudai.gymserver.remote import RemoteGymServer
from cloudai.gymserver.spaces import ContinuousSpace

pytestmark = pytest.mark.slow  # each module starts openenv servers (seconds each)

ACTION = {"batch": 2, "use_cache": True, "ratio": 0.5, "threads": 4}


@pytest.fixture(scope="module")
def server() -> Iterator[OpenEnvServer]:
    with OpenEnvServer("--max-sessions", "4") as running:
        yield running


def test_episode_runs_in_one_websocket_session(server: OpenEnvServer) -> None:
    with RemoteGymServer(server.url) as remote:
        observation, info = remote.reset(seed=7, options={"env_params": {"load_scale": 2.0}})
        names = ["throughput", "latency_ms", "per_gpu[0]", "per_gpu[1]", "seed", "load_scale"]
        assert remote.observation_space() == names
        assert observation == [0.0, 0.0, 0.0, 0.0, 7.0, 2.0] and info["reward_null"]
        steps = [remote.step(ACTION) for _ in range(3)]
        assert [done for _, _, done, _ in steps] == [False, False, True]
        assert [reward for _, reward, _, _ in steps] == [4.0, 4.0, 4.0]
        assert steps[0][0] == [8.0, 12.0, 2.0, 2.0, 7.0, 2.0]
        assert remote.state()["step_count"] == 3
        remote.reset(seed=8)
        assert remote.state() == {"episode_id": "ep-8", "step_count": 0}


def test_action_space_comes_from_the_schema(server: OpenEnvServer) -> None:
    with RemoteGymServer(server.url) as remote:
        assert remote.action_space() == {
            "batch": [1, 2, 4, 8],
            "use_cache": [False, True],
            "ratio": ContinuousSpace(0.0, 1.0),
            "threads": ContinuousSpace(1, 16, "int"),
        }  # `note` (optional, unbounded) keeps the server's default


def test_cmd_args_narrow_declare_and_fix_fields(server: OpenEnvServer) -> None:
    fields = {"batch": [2, 4], "ratio": {"low": 0.25, "high": 0.5}, "use_cache": True, "note": ["a", "b"]}
    with RemoteGymServer(server.url, action_fields=fields, metrics=["latency_ms", "per_gpu", "throughput"]) as remote:
        assert remote.action_space() == {
            "batch": [2, 4],
            "ratio": ContinuousSpace(0.25, 0.5),
            "threads": ContinuousSpace(1, 16, "int"),
            "note": ["a", "b"],
        }
        assert remote.fixed == {"use_cache": True}
        remote.reset()
        observation, reward, _, _ = remote.step({"batch": 4, "ratio": 0.5, "threads": 2.0, "note": "a"})
        assert observation == [14.0, 2.0, 2.0, 4.0] and reward == 4.0  # use_cache sent; 2.0 sent as an int


@pytest.mark.parametrize(
    ("fields", "metrics", "expected"),
    [
        ({"bach": [1]}, None, "did you mean 'batch'"),
        ({"batch": [3]}, None, "3 is not a value 'batch' takes"),
        ({"ratio": {"low": 0.5, "high": 2.0}}, None, "outside [0, 1]"),
        ({"batch": {"low": 1, "high": 8}}, None, "not a range"),
        ({}, ["throughput", "latncy_ms"], "did you mean 'latency_ms'"),
    ],
)
def test_bad_declarations_are_config_errors(
    server: OpenEnvServer, fields: dict, metrics: list[str] | None, expected: str
) -> None:
    remote = RemoteGymServer(server.url, action_fields=fields, metrics=metrics)
    with remote, pytest.raises(ConfigError, match=r"cmd_args|agent_metrics") as raised:
        remote.action_space()
    assert expected in str(raised.value)


def test_null_reward_is_nan_and_flagged(server: OpenEnvServer) -> None:
    with RemoteGymServer(server.url) as remote:
        remote.reset()
        _, reward, _, info = remote.step({**ACTION, "ratio": 0.0})
    assert math.isnan(reward) and info["reward_null"] is True


def test_validation_error_names_the_field_and_keeps_the_session(server: OpenEnvServer) -> None:
    with RemoteGymServer(server.url) as remote:
        remote.reset()
        with pytest.raises(GymServerError, match=r"VALIDATION_ERROR.*threads") as raised:
            remote.step({**ACTION, "threads": 99})
        assert raised.value.call == "step" and raised.value.where == server.url
        assert remote.step(ACTION)[1] == 4.0


def test_step_needs_a_session(server: OpenEnvServer) -> None:
    with RemoteGymServer(server.url) as remote, pytest.raises(GymServerError, match=r"reset\(\)"):
        remote.step(ACTION)


def test_slow_step_times_out_and_closes_the_session(server: OpenEnvServer) -> None:
    with RemoteGymServer(server.url, timeout_s=2.0) as remote:
        remote.reset()
        with pytest.raises(GymServerError, match="no reply within 2s; the session was closed"):
            remote.step({**ACTION, "note": "hang"})
        with pytest.raises(GymServerError, match="no open session"):  # never reads the late reply
            remote.step(ACTION)
        remote.reset()  # a new session
        assert remote.step(ACTION)[1] == 4.0


def test_create_gym_server_with_env_url_is_remote(server: OpenEnvServer) -> None:
    cmd_args = {"live_rl_mode": True, "env_url": server.url, "env_timeout_s": 5, "batch": [8]}
    remote = create_gym_server(cmd_args, metrics=["throughput"])
    assert isinstance(remote, RemoteGymServer)
    try:
        assert remote.action_space()["batch"] == [8]
        remote.reset()
        assert remote.step({"batch": 8, "use_cache": False, "ratio": 1.0, "threads": 1})[0] == [4.0]
    finally:
        remote.close()


def test_auth_and_capacity(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    token = "tok-9f3c2e51"
    with OpenEnvServer("--max-sessions", "1", "--token-var", "T", env={"T": token}) as server:
        monkeypatch.delenv("CLOUDAI_GYM_TOKEN", raising=False)
        with pytest.raises(GymServerError, match=r"401.*set \$CLOUDAI_GYM_TOKEN"):
            RemoteGymServer(server.url).reset()
        monkeypatch.setenv("CLOUDAI_GYM_TOKEN", "wrong-" + token)
        with pytest.raises(GymServerError, match=r"401.*refused the token in \$CLOUDAI_GYM_TOKEN") as wrong:
            RemoteGymServer(server.url).action_space()
        assert token not in str(wrong.value)
        monkeypatch.setenv("CLOUDAI_GYM_TOKEN", token)
        with RemoteGymServer(server.url) as first, RemoteGymServer(server.url) as second:
            first.reset()
            with pytest.raises(GymServerError, match="CAPACITY_REACHED") as full:
                second.reset()
            assert full.value.call == "reset" and server.url in str(full.value)
            assert first.step(ACTION)[1] == 4.0  # the first session is unaffected
            assert token not in repr(first) and token not in str(vars(first._wire).get("_closed_why"))
    assert token not in caplog.text


def test_waits_for_a_server_that_is_not_up_yet(caplog: pytest.LogCaptureFixture) -> None:
    port_holder = held_port()
    port = port_holder.getsockname()[1]
    tried = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting for" in record.getMessage():
                tried.set()

    handler = Seen(logging.DEBUG)
    logger = logging.getLogger("cloudai.gymserver.remote")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    result: list[object] = []
    remote = RemoteGymServer(f"http://127.0.0.1:{port}", health_timeout_s=120)
    thread = threading.Thread(target=lambda: result.append(remote.reset(seed=1)))
    try:
        thread.start()
        assert tried.wait(60), "the client never tried /health"
        port_holder.close()
        with OpenEnvServer(port=port):
            thread.join(120)
            assert result and result[0][0][4] == 1.0  # type: ignore[index]
            assert remote.step(ACTION)[1] == 4.0
            remote.close()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


def test_server_killed_mid_run() -> None:
    with OpenEnvServer() as server:
        remote = RemoteGymServer(server.url, timeout_s=10, health_timeout_s=1)
        remote.reset()
        remote.step(ACTION)
        server.kill()
        with pytest.raises(GymServerError, match="closed the connection during the step") as raised:
            remote.step(ACTION)
        assert raised.value.where == server.url and raised.value.call == "step"
        with pytest.raises(GymServerError, match="no open session"):
            remote.step(ACTION)
        remote.close()


def test_unknown_transport_is_named_at_validation() -> None:
    from cloudai.gymserver.factory import validate_live_rl_args

    problems = validate_live_rl_args(
        {"live_rl_mode": True, "env_url": "http://127.0.0.1:9", "env_transport": "grpc"}, "t.toml"
    )
    assert [p.field for p in problems] == ["cmd_args.env_transport"]
    assert "'grpc' is not a transport" in str(problems[0])
