"""Structured observations, value for value (issue 38 item 4): box leaves of any width, categoricals, nested dicts.

A server declares random leaves and observes random values that fit them; every value must come back, in place,
through the in-process env (``trajectory.csv``'s columns, ``episodes.jsonl`` nested as declared), the Gymnasium
adapter (``Dict``/``Box``/``Discrete``), ``cloudai serve`` (its JSON observation and schema) and cloudai's remote
client reading that server. A value that does not fit its leaf fails the step, naming it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from tests.serve.serving import served

from cloudai.gym.adapter import GymnasiumAdapter
from cloudai.gym.from_toml import load_env
from cloudai.gymserver.layout import ObservationLayout
from cloudai.gymserver.remote import RemoteGymServer
from cloudai.gymserver.spaces import ObsLeafDescriptor
from cloudai.serve.app import create_app


def build(spec: Any) -> Any:
    """A JSON spec (``{"box": [low, high, n]}`` / ``{"cat": n}`` / a dict of those) as descriptors."""
    if "box" in spec:
        low, high, n = spec["box"]
        return ObsLeafDescriptor("box", low, high, dim=n)
    if "cat" in spec:
        return ObsLeafDescriptor("discrete", n=spec["cat"])
    return {name: build(inner) for name, inner in spec.items()}


class LeafServer:
    """Observes ``values`` (the same each step, one per column) as the nested mapping its ``spec`` declares."""

    def __init__(self, spec: str, values: str, shape: str = "nested", **_: Any) -> None:
        self.space = build(json.loads(spec))
        self.values = json.loads(values)
        self.layout = ObservationLayout(self.space)
        self.shape = shape

    def action_space(self) -> dict[str, list[int]]:
        return {"x": [1, 2]}

    def observation_space(self) -> dict[str, Any]:
        return self.space

    def _observation(self) -> Any:
        return self.layout.nested(self.layout.columns, self.values) if self.shape == "nested" else self.values

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict]:
        return self._observation(), {}

    def step(self, action: dict[str, Any]) -> tuple[dict[str, Any], float, bool, dict]:
        return self._observation(), float(action["x"]), False, {}


def leaf() -> st.SearchStrategy[Any]:
    box = st.tuples(st.integers(1, 3), st.booleans()).map(lambda t: {"box": [0.0 if t[1] else None, 50.0, t[0]]})
    return st.one_of(box, st.integers(1, 4).map(lambda n: {"cat": n}))


NAMES = st.sampled_from(["rate", "load", "phase", "queue", "p99"])
SPECS = st.dictionaries(NAMES, st.one_of(leaf(), st.dictionaries(NAMES, leaf(), min_size=1, max_size=2)),
                        min_size=1, max_size=3)  # fmt: skip


def values_for(layout: ObservationLayout, draw: st.DrawFn) -> list[float]:
    owners = [leaf for leaf in layout.leaves.values() for _ in range(leaf.width)]
    return [float(draw(st.integers(0, int(o.n or 1) - 1))) if o.kind == "categorical"
            else draw(st.floats(0.0, 50.0, width=32)) for o in owners]  # fmt: skip


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], list[float]]:
    spec = draw(SPECS)
    return spec, values_for(ObservationLayout(build(spec)), draw)


def write_test(root: Path, spec: Any, values: list[float], shape: str = "nested") -> tuple[Path, Path]:
    tests = root / "tests"
    tests.mkdir(parents=True, exist_ok=True)
    (tests / "t.toml").write_text(
        'name = "t"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 2\n'
        f'[cmd_args]\nlive_rl_mode = true\nenv_class = "{__name__}.LeafServer"\nx = [1, 2]\n'
        f"[cmd_args.env_kwargs]\nspec = '{json.dumps(spec)}'\nvalues = '{json.dumps(values)}'\nshape = '{shape}'\n"
    )  # fmt: skip
    (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    return tests, root / "s.toml"


def records(out: Path) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    with (out / "trajectory.csv").open() as f:
        rows = list(csv.DictReader(f))
    return rows, [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def equal_tree(ours: Any, theirs: Any) -> None:
    """Adapter values (numpy, float32) against the nested JSON values."""
    if isinstance(theirs, dict):
        assert set(ours) == set(theirs)
        for key in theirs:
            equal_tree(ours[key], theirs[key])
    else:
        assert np.asarray(ours).reshape(-1).tolist() == pytest.approx(np.asarray(theirs, dtype=np.float32).reshape(-1))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_every_value_survives_env_records_adapter_and_serve(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[dict[str, Any], list[float]]
) -> None:
    spec, values = case
    layout = ObservationLayout(build(spec))
    nested = layout.nested(layout.columns, values)
    root = tmp_path_factory.mktemp("leaves")
    tests, scenario = write_test(root, spec, values)
    loaded = load_env(tests, scenario, output_dir=root / "out")
    env = loaded.env
    assert list(env.define_observation_space()) == layout.columns
    adapter = GymnasiumAdapter(env, max_steps=2)
    observation, _ = adapter.reset(seed=0)
    assert adapter.observation_space.contains(observation)
    equal_tree(observation, nested)
    observation, reward, *_ = adapter.step(adapter.encode_action({"x": 2}))
    equal_tree(observation, nested)
    assert reward == 2.0
    with TestClient(create_app(env, name="t")) as client:
        served = client.post("/step", json={"action": {"x": 1}}).json()["observation"]
        assert {k: v for k, v in served.items() if k in nested} == json.loads(json.dumps(nested))
        schema = client.get("/schema").json()["observation"]["properties"]
        assert set(nested) <= set(schema)
    env.close()
    (out,) = {p.parent for p in (root / "out").rglob("trajectory.csv")}
    rows, lines = records(out)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert all(json.loads(r["observation"]) == pytest.approx(values) for r in rows)
    assert all(line["observation"] == json.loads(json.dumps(nested)) for line in lines)


def test_the_remote_client_reads_every_column_of_a_served_structured_env(tmp_path: Path) -> None:
    spec = {"rate": {"box": [0.0, 50.0, 3]}, "queue": {"depth": {"box": [None, 50.0, 1]}, "phase": {"cat": 3}}}
    layout = ObservationLayout(build(spec))
    values = [1.5, 2.5, 3.5, 7.0, 2.0]
    tests, scenario = write_test(tmp_path, spec, values)
    env = load_env(tests, scenario, output_dir=tmp_path / "out").env
    with served(create_app(env, name="t")) as url:
        remote = RemoteGymServer(url)
        assert remote.observation_space() == layout.columns  # rate[0..2], queue.depth, queue.phase
        remote.reset()
        observation, reward, _, info = remote.step({"x": 2})
        remote.close()
    env.close()
    assert observation == values and reward == 2.0 and info.get("status", "ok") == "ok"


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ([1.0, 2.0, 60.0, 1.0], "rate[2] = 60.0 (outside [0.0, 50.0])"),
        ([1.0, 2.0, 3.0, 3.0], "phase = 3.0 (a categorical of 3 takes 0..2)"),
        ([1.0, 2.0, 3.0, 0.5], "phase = 0.5 (a categorical of 3 takes 0..2)"),
    ],
)
def test_a_value_that_does_not_fit_its_leaf_fails_the_step_naming_it(
    tmp_path: Path, values: list[float], reason: str
) -> None:
    spec = {"rate": {"box": [0.0, 50.0, 3]}, "phase": {"cat": 3}}
    tests, scenario = write_test(tmp_path, spec, values, shape="flat")
    env = load_env(tests, scenario, output_dir=tmp_path / "out").env
    env.reset()
    _, _, _, info = env.step({"x": 1})
    env.close()
    assert info["status"] == "failed" and reason in info["reason"], info
