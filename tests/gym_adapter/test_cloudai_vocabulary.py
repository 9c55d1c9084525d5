"""Issue 30 item 4: an environment written to CloudAI's PR #934 is accepted as written. Its ``ObsLeafDescriptor``
(kinds ``"box"`` of width ``dim`` and ``"discrete"`` of size ``n``), its ``structured_observation_descriptors()``
and ``encode_observation()`` hooks, and a server constructor taking ``**kwargs`` the test's scalar ``cmd_args``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict
from tests.gym_adapter.knob_gym import KnobGym, discrete_space

from cloudai.errors import ConfigError
from cloudai.gym.adapter import GymnasiumAdapter
from cloudai.gym.from_toml import load_env
from cloudai.gymserver.spaces import ObsLeafDescriptor, as_leaf


class PRLeaf(BaseModel):
    """The PR's ``ObsLeafDescriptor`` as it defines it (a pydantic model: kind, dim, n)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["box", "discrete"]
    dim: int = 1
    n: int | None = None


def test_the_prs_leaves_read_as_ours() -> None:
    assert as_leaf(PRLeaf(kind="discrete", n=3)) == ObsLeafDescriptor("categorical", n=3)
    assert as_leaf(PRLeaf(kind="box", dim=2)) == ObsLeafDescriptor("box", n=2)
    assert as_leaf({"kind": "box"}).width == 1 and ObsLeafDescriptor("discrete", n=4).kind == "categorical"
    with pytest.raises(ConfigError, match="'box' or 'categorical' \\('discrete'\\), not 'vector'"):
        as_leaf({"kind": "vector"})


class PRGym(KnobGym):
    """A BaseGym written to the PR: its hooks name the leaves and encode the flat observation into them."""

    def structured_observation_descriptors(self) -> dict[str, PRLeaf]:
        return {"rate": PRLeaf(kind="box", dim=2), "phase": PRLeaf(kind="discrete", n=3)}

    def encode_observation(self, observation: list[float]) -> dict[str, Any]:
        value, load = observation
        return {"rate": [value, load], "phase": int(self._in_episode % 3)}


def test_an_env_written_to_the_pr_runs_under_the_adapter() -> None:
    adapter = GymnasiumAdapter(PRGym(discrete_space()), max_steps=3)
    assert adapter.observation_space == spaces.Dict(
        {"rate": spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32), "phase": spaces.Discrete(3)}
    )
    adapter.reset(seed=0)
    obs, reward, *_ = adapter.step(adapter.encode_action({"algo": "tree", "threads": 2}))
    assert obs["rate"].tolist() == pytest.approx([reward, 0.1]) and obs["phase"] == 1
    assert adapter.observation_space.contains(obs)


class KwargsServer:
    """An in-process server whose constructor takes ``**kwargs``, as the PR's factory calls it."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def action_space(self) -> dict[str, list[int]]:
        return {"x": [1, 2]}

    def observation_space(self) -> list[str]:
        return ["y"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[float], dict]:
        return [0.0], {}

    def step(self, action: dict[str, Any]) -> tuple[list[float], float, bool, dict]:
        return [float(action["x"])], float(action["x"]), False, {}


def test_a_kwargs_constructor_gets_the_tests_scalar_cmd_args(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(
        'name = "t"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 2\n[cmd_args]\n'
        f'live_rl_mode = true\nenv_class = "{__name__}.KwargsServer"\nhorizon = 7\nmodel = "llama"\nx = [1, 2]\n'
        "[cmd_args.env_kwargs]\nseed = 3\n"
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    env = load_env(tmp_path / "tests", tmp_path / "s.toml", output_dir=tmp_path / "out").env
    server = env.server  # type: ignore[attr-defined]
    assert server.kwargs == {"horizon": 7, "model": "llama", "seed": 3}  # no knob, no cloudai field
    env.close()
