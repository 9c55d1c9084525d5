"""``cloudai.gym.make`` and ``gymnasium.make("cloudai/Test-v0")`` over real trials (standalone jobs)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import FlattenObservation
from tests.gym_adapter.test_flatten_and_training import epsilon_greedy
from tests.gym_adapter.tomls import write_synthetic, write_tomls

from cloudai.errors import ConfigError
from cloudai.gym.adapter import GymnasiumAdapter
from cloudai.gym.flatten import GridActions
from cloudai.gym.from_toml import make
from cloudai.gym.registration import ENV_ID, register_envs


def knob(adapter: GymnasiumAdapter, name: str) -> spaces.Space:
    assert isinstance(adapter.action_space, spaces.Dict)
    return adapter.action_space[name]


def rows(adapter: GymnasiumAdapter) -> list[dict[str, str]]:
    trial_dir = Path(adapter.cloudai_env.setup.out_dir)  # type: ignore[attr-defined]
    with (trial_dir / "trajectory.csv").open() as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("mixed", [False, True], ids=["discrete", "mixed"])
def test_gymnasium_make_passes_the_checker(tmp_path: Path, mixed: bool) -> None:
    """Synthetic with duration_s = 0: every step Gymnasium's checker takes is a real job."""
    register_envs()
    register_envs()  # idempotent
    tests, scenario = write_synthetic(tmp_path, mixed=mixed)
    env = gymnasium.make(ENV_ID, tests_dir=tests, scenario=scenario, output_dir=tmp_path / "out")
    adapter = env.unwrapped
    assert isinstance(adapter, GymnasiumAdapter)
    assert env.spec is not None and env.spec.nondeterministic
    check_env(adapter, skip_render_check=True, skip_close_check=True)
    recorded = rows(adapter)
    assert [int(r["step"]) for r in recorded] == list(range(1, len(recorded) + 1)) and len(recorded) >= 3
    assert {r["status"] for r in recorded} <= {"ok", "cached"}
    assert all(len(json.loads(r["observation"])) == 2 for r in recorded)
    env.close()


@pytest.mark.parametrize("entry", ["cloudai.gym.make", "gymnasium.make"])
def test_both_entry_points_pass_the_unmodified_checker(tmp_path: Path, entry: str) -> None:
    """``check_env(env)`` with no skip flag: spec (step determinism is not claimed), close twice, spec.make()."""
    tests, scenario = write_synthetic(tmp_path)
    if entry == "gymnasium.make":
        register_envs()
        env = gymnasium.make(ENV_ID, tests_dir=tests, scenario=scenario, output_dir=tmp_path / "out").unwrapped
    else:
        env = make(tests, scenario, output_dir=tmp_path / "out")
    assert env.spec is not None and env.spec.id == ENV_ID and env.spec.nondeterministic
    check_env(env)
    env.close()
    again = env.spec.make()  # the spec rebuilds an equal env: same spaces, same reset for the same seed
    first, second = env.spec.make().unwrapped, again.unwrapped
    assert first.action_space == second.action_space == env.action_space
    assert first.reset(seed=5)[1] == second.reset(seed=5)[1]
    first.close()
    second.close()


@pytest.mark.parametrize(
    "code",
    [
        "import sys, cloudai.gym; print('gymnasium' not in sys.modules); import gymnasium",  # lazy, then hooked
        "import gymnasium, cloudai.gym; print(True)",
    ],
    ids=["cloudai-first", "gymnasium-first"],
)
def test_importing_cloudai_gym_registers_the_id_in_any_order(code: str) -> None:
    """A fresh interpreter, as a user's script; ``import cloudai.gym`` alone does not import Gymnasium."""
    script = f"{code}; print('{ENV_ID}' in gymnasium.registry)"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["True", "True"], result.stderr


def test_every_step_is_a_trajectory_row(tmp_path: Path) -> None:
    tests, scenario = write_tomls(tmp_path, mixed=True)
    adapter = make(tests, scenario, output_dir=tmp_path / "out")
    adapter.reset(seed=0)
    point = {"algo": "tree", "threads": 4, "chunk_kb": 1000}
    obs, reward, _terminated, _truncated, info = adapter.step(adapter.encode_action(point))
    assert reward == pytest.approx(2.0 + 0.4 + 0.1) and obs.tolist() == pytest.approx([reward, 2 * reward])
    ours = info["cloudai"]
    assert ours["status"] == "ok" and ours["knobs"]["chunk_kb"] == 1000 and "cmd" in ours["knobs"]
    adapter.close()
    (row,) = rows(adapter)
    assert json.loads(row["action"]) == point and float(row["reward"]) == pytest.approx(reward)


def test_truncation_at_agent_steps_by_default(tmp_path: Path) -> None:
    tests, scenario = write_tomls(tmp_path, steps=2)
    adapter = make(tests, scenario, output_dir=tmp_path / "out")
    adapter.reset()
    assert [adapter.step(adapter.action_space.sample())[3] for _ in range(2)] == [False, True]
    assert make(tests, scenario, output_dir=tmp_path / "out", max_steps=5).max_steps == 5


def test_overrides_narrow_the_space_and_are_validated(tmp_path: Path) -> None:
    tests, scenario = write_tomls(tmp_path)
    adapter = make(tests, scenario, output_dir=tmp_path / "out", threads=[2, 4])
    assert knob(adapter, "threads") == spaces.Discrete(2)
    with pytest.raises(ConfigError, match="empty list"):
        make(tests, scenario, output_dir=tmp_path / "bad", threads=[])
    assert not (tmp_path / "bad").exists()  # nothing is written before validation passed


def test_entry_selection_errors(tmp_path: Path) -> None:
    tests, scenario = write_tomls(tmp_path)
    with pytest.raises(ConfigError, match=r"did you mean 'Tests\.score'"):
        make(tests, scenario, "Tests.scor", output_dir=tmp_path / "out")
    text = scenario.read_text() + '[[Tests]]\nid = "Tests.two"\ntest_name = "score"\n'
    scenario.write_text(text)
    with pytest.raises(ConfigError, match="pick one agent-driven test with test_id"):
        make(tests, scenario, output_dir=tmp_path / "out")
    assert knob(make(tests, scenario, "Tests.two", output_dir=tmp_path / "out"), "algo") == spaces.Discrete(2)


def test_tabular_policy_over_real_trials(tmp_path: Path) -> None:
    tests, scenario = write_tomls(tmp_path, steps=100)
    adapter = make(tests, scenario, output_dir=tmp_path / "out")
    env = FlattenObservation(GridActions(adapter))
    totals, counts = epsilon_greedy(env, steps=14, epsilon=0.2, seed=1)
    best = adapter.knob_space.grid_point(int(np.argmax(totals / np.maximum(counts, 1))))
    assert best == {"algo": "tree", "threads": 4}
    env.close()
    assert len(rows(adapter)) == 14


@pytest.mark.parametrize(
    "env_class",
    ["cloudai.gym.examples.ServingSim", "tests.gym_adapter.structured_sim.StructuredServingSim"],
    ids=["flat", "structured"],
)
def test_a_live_env_through_make(tmp_path: Path, env_class: str) -> None:
    """ServingSim through ``live_rl_mode``: check_env on the adapter; done ends (terminates) episodes."""
    tests, scenarios = tmp_path / "tests", tmp_path / "scenarios"
    tests.mkdir()
    scenarios.mkdir()
    (tests / "sim.toml").write_text(
        'name = "sim"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 6\n'
        'agent_metrics = ["throughput", "p99_latency_ms", "queue_depth"]\n'
        f'[cmd_args]\nlive_rl_mode = true\nenv_class = "{env_class}"\nhorizon = 4\n'
    )
    (scenarios / "sim.toml").write_text('name = "sim"\n[[Tests]]\nid = "Tests.sim"\ntest_name = "sim"\n')
    register_envs()
    env = gymnasium.make(ENV_ID, tests_dir=tests, scenario=scenarios / "sim.toml", output_dir=tmp_path / "out")
    structured = "Structured" in env_class
    space = env.observation_space
    assert isinstance(space, spaces.Dict) if structured else space == spaces.Box(-np.inf, np.inf, (3,), np.float32)
    check_env(env.unwrapped, skip_render_check=True, skip_close_check=True)
    obs, _ = env.reset(seed=3)
    ends = []
    for _ in range(4):
        obs, _, terminated, _, _ = env.step(env.action_space.sample())
        assert space.contains(obs)
        ends.append(terminated)
    assert ends == [False, False, False, True]
    env.close()
