"""cloudai's lease client against the tests' own control plane (``tests.leases.plane``: a stock openenv-core server
per lease): a whole lease, and each way it fails. After every test the control plane holds no lease."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.leases.plane import Plane, plane

from cloudai.errors import GymServerError
from cloudai.gym.from_toml import load_env
from cloudai.gymserver.factory import create_gym_server
from cloudai.gymserver.lease import LeaseClient, release_recorded
from cloudai.gymserver.leased import LeasedGymServer

ACTION = {"batch": 2, "use_cache": True, "ratio": 1.0, "threads": 2}
TOKEN = "lease-tok-81f3"


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Plane, str]]:
    with plane(TOKEN) as (board, url):
        yield board, url


@pytest.fixture
def control(shared: tuple[Plane, str]) -> Iterator[tuple[Plane, str]]:
    board, url = shared
    board.reset()
    yield board, url
    assert board.live() == 0, f"leases left: {list(board.sandboxes)}"  # the core assertion


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDAI_GYM_TOKEN", TOKEN)


def leased(url: str, tmp_path: Path, **extra: Any) -> LeasedGymServer:
    args = {"live_rl_mode": True, "env_lease_url": url, "env_lease_environment": "knobs", "env_timeout_s": 10, **extra}
    server = create_gym_server(args, record_dir=tmp_path)
    assert isinstance(server, LeasedGymServer)
    return server


def records(tmp_path: Path) -> list[str]:
    return sorted(p.stem for p in (tmp_path / "leases").glob("*.json"))


def test_a_lease_is_recorded_driven_and_released(control: tuple[Plane, str], tmp_path: Path) -> None:
    board, url = control
    server = leased(url, tmp_path, env_lease_options={"image": "knobs:1"})
    assert board.live() == 1 and records(tmp_path) == ["sb-1"]  # recorded while held, like a Slurm job id
    assert "POST /sandboxes" in board.requests
    server.reset(seed=1)
    observation, reward, done, _ = server.step(ACTION)
    assert reward == 4.0 and not done and len(observation) == len(server.observation_space())
    server.close()
    assert board.live() == 0 and records(tmp_path) == []
    assert board.requests[-1] == "DELETE /sandboxes/sb-1"


def test_a_sandbox_that_never_becomes_ready_times_out_and_is_released(
    control: tuple[Plane, str], tmp_path: Path
) -> None:
    board, url = control
    board.mode = "hold"
    with pytest.raises(GymServerError, match=r"sandbox sb-1 not ready after 0.3s \(still pending\)"):
        leased(url, tmp_path, env_lease_timeout_s=0.3)
    assert "GET /sandboxes/sb-1" in board.requests  # it was polled before giving up
    assert records(tmp_path) == []


def test_a_sandbox_that_fails_to_start_names_the_error_and_the_id(control: tuple[Plane, str], tmp_path: Path) -> None:
    board, url = control
    board.mode = "fail"
    with pytest.raises(GymServerError) as caught:
        leased(url, tmp_path)
    assert f"lease ({url}): sandbox sb-1 failed to start: image pull failed: no such image" == str(caught.value)
    assert records(tmp_path) == []


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("401", "POST /sandboxes: HTTP 401: the control plane refused the token in $CLOUDAI_GYM_TOKEN"),
        ("500", "POST /sandboxes: HTTP 500: said 500"),
        ("garbage", "POST /sandboxes: malformed JSON: '<html>not json</html>'"),
    ],
)
def test_a_control_plane_answering_nonsense_is_a_clear_error(
    control: tuple[Plane, str], tmp_path: Path, mode: str, message: str
) -> None:
    board, url = control
    board.mode = mode
    with pytest.raises(GymServerError) as caught:
        leased(url, tmp_path)
    assert str(caught.value) == f"lease ({url}): {message}"
    assert TOKEN not in str(caught.value)
    assert board.requests.count("POST /sandboxes") == 1  # a POST is never retried: it may have made a sandbox


def test_a_wrong_token_is_refused_by_name(control: tuple[Plane, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, url = control
    monkeypatch.setenv("CLOUDAI_GYM_TOKEN", "wrong")
    with pytest.raises(GymServerError, match=r"HTTP 401: the control plane refused the token in \$CLOUDAI_GYM_TOKEN"):
        LeaseClient(url).acquire()


def test_a_release_that_fails_is_retried_then_reported_and_resume_frees_it(
    control: tuple[Plane, str], tmp_path: Path
) -> None:
    board, url = control
    board.release_failures = 2  # two 500s, then it works: retried, released
    leased(url, tmp_path).close()
    assert board.live() == 0 and board.requests.count("DELETE /sandboxes/sb-1") == 3

    board.release_failures = 3  # every try fails: reported, never silently leaked
    server = leased(url, tmp_path)
    with pytest.raises(GymServerError) as caught:
        server.close()
    assert "sandbox sb-2 NOT released after 3 tries (last: HTTP 500: " in str(caught.value)
    assert f"its record stays in {tmp_path / 'leases' / 'sb-2.json'}" in str(caught.value)
    assert board.live() == 1 and records(tmp_path) == ["sb-2"]
    assert release_recorded(tmp_path) == [f"released sandbox sb-2 ({url}), left by the earlier run"]
    assert records(tmp_path) == []


def test_a_sandbox_that_dies_mid_episode_truncates_it_and_is_replaced(
    control: tuple[Plane, str], tmp_path: Path
) -> None:
    board, url = control
    server = leased(url, tmp_path, env_lease_replacements=2)
    server.reset()
    server.step(ACTION)
    board.sandboxes["sb-1"].kill()  # the sandbox dies between two steps of an episode
    observation, reward, done, info = server.step(ACTION)
    assert done and info["truncated"] and info["status"] == "failed"
    assert math.isnan(reward) and len(observation) == len(server.observation_space())
    assert info["reason"].startswith("sandbox sb-1 died mid-episode: step (http://127.0.0.1:")
    assert board.live() == 0 and records(tmp_path) == []  # the dead lease is released at once
    server.reset()  # a replacement
    assert server.lease.id == "sb-2" and server.step(ACTION)[1] == 4.0
    board.sandboxes["sb-2"].kill()  # dies before the next episode starts: that reset is on a replacement
    server.reset()
    assert server.lease.id == "sb-3" and board.live() == 1 and records(tmp_path) == ["sb-3"]
    board.sandboxes["sb-3"].kill()
    assert server.step(ACTION)[2] is True
    with pytest.raises(GymServerError, match="no replacement left"):
        server.reset()
    server.close()


def test_one_client_serves_many_environments_from_threads(control: tuple[Plane, str], tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from cloudai.gymserver.leased import lease_client

    board, url = control
    args = {"live_rl_mode": True, "env_lease_url": url, "env_timeout_s": 10}
    client = lease_client(args, tmp_path)

    def episode(_: int) -> tuple[LeasedGymServer, float]:
        server = create_gym_server(args, record_dir=tmp_path, lease_client=client)
        assert isinstance(server, LeasedGymServer)
        server.reset()
        return server, server.step(ACTION)[1]

    with ThreadPoolExecutor(4) as pool:
        ran = list(pool.map(episode, range(4)))
    assert [reward for _, reward in ran] == [4.0] * 4
    assert board.live() == 4 and len({server.lease.url for server, _ in ran}) == 4
    assert sorted(lease.id for lease in client.held()) == records(tmp_path) == [f"sb-{n}" for n in range(1, 5)]
    ran[0][0].close()  # one environment's close releases its own lease only
    assert board.live() == 3 and ran[0][0].lease not in client.held()
    client.close()  # the owner's close releases the rest
    assert client.held() == [] and records(tmp_path) == []
    for server, _ in ran[1:]:
        server.close()  # already released: nothing left to do


def test_lease_fields_are_checked_before_anything_runs() -> None:
    from cloudai.gymserver.factory import validate_live_rl_args

    bad = {"live_rl_mode": True, "env_lease_url": "ftp://x", "env_lease_options": 3, "env_lease_timeout_s": 0,
           "env_lease_replacements": -1, "env_lease_environment": ""}  # fmt: skip
    fields = [p.field for p in validate_live_rl_args(bad, "t.toml")]
    assert fields == [f"cmd_args.env_lease_{n}" for n in ("url", "environment", "options", "timeout_s", "replacements")]
    both = validate_live_rl_args({"env_url": "http://a:1", "env_lease_url": "http://b:2"}, "t.toml")
    expected = ("cmd_args.env_lease_url", "give env_url or env_lease_url, not both")
    assert [(p.field, p.message) for p in both] == [expected]
    good = {"live_rl_mode": True, "env_lease_url": "http://127.0.0.1:8100", "env_lease_options": {"image": "a"}}
    assert validate_live_rl_args(good, "t.toml") == []


def test_a_gymnasium_trainer_sees_a_dead_sandbox_as_truncated(control: tuple[Plane, str], tmp_path: Path) -> None:
    from cloudai.gym import make

    board, url = control
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "x.toml").write_text(
        'name = "x"\ntest_template_name = "LiveRL"\nagent_steps = 10\n[cmd_args]\nlive_rl_mode = true\n'
        f'env_lease_url = "{url}"\nbatch = [2, 4]\nuse_cache = true\nratio = 1.0\nthreads = [1, 2]\n'
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n')
    env = make(tmp_path / "tests", tmp_path / "s.toml", output_dir=tmp_path / "out")
    env.reset(seed=1)
    assert env.step(env.action_space.sample())[1] > 0
    board.sandboxes["sb-1"].kill()
    _, _, terminated, truncated, info = env.step(env.action_space.sample())
    assert truncated and not terminated and "sandbox sb-1 died mid-episode" in info["cloudai"]["reason"]
    assert board.live() == 0
    env.close()


def _until(condition: Any, what: str, timeout: float = 60.0) -> None:
    """Wait for ``condition()`` (a bounded poll of the plane's state, not a timing assumption)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_leases_are_taken_at_once_and_a_lane_steps_as_soon_as_its_sandbox_is_ready(
    control: tuple[Plane, str], tmp_path: Path
) -> None:
    """Issue 38 item 1: with max_parallel = 4, four leases are requested before any sandbox is ready (one after
    another they cost four start-ups before the first step), the first ready one steps while the others still
    start, and every lease is released at the end."""
    board, url = control
    board.mode = "hold"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(
        'name = "t"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 4\n'
        "agent_config = { max_parallel = 4 }\n"
        f'[cmd_args]\nlive_rl_mode = true\nenv_lease_url = "{url}"\nenv_lease_environment = "knobs"\n'
        "env_timeout_s = 30\nbatch = [1, 2]\nuse_cache = true\nratio = 1.0\nthreads = 2\n"
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    made: list[Any] = []
    opening = threading.Thread(target=lambda: made.append(load_env(tmp_path / "tests", tmp_path / "s.toml",
                                                                   output_dir=tmp_path / "out").env))  # fmt: skip
    opening.start()
    _until(lambda: board.live() == 4, "four leases requested at once")  # while none is ready
    assert all(server is None for server in board.sandboxes.values())
    board.ready.add("sb-3")  # one sandbox starts; the run begins on it
    opening.join(60)
    (env,) = made
    try:
        steps = [env.step_async({"batch": 2}) for _ in range(4)]
        first = env.step_wait()
        assert len(first) == 1 and first[0].status == "ok"  # stepped while three sandboxes were still starting
        assert sum(server is None for server in board.sandboxes.values()) == 3
        board.go.set()
        done = first
        while len(done) < 4:
            done += env.step_wait()
        assert sorted(f.step for f in done) == steps and {f.status for f in done} == {"ok"}
    finally:
        env.close()
    assert board.live() == 0
