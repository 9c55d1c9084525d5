"""Several objectives: the Pareto front written by a run equals a brute-force front of the same trials."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import toml
from tests.dse.conftest import Case, invoke

from cloudai.agents.optuna_samplers import missing_packages
from cloudai.config.objectives import parse_constraint
from cloudai.reports.pareto import pareto_indices

MO = """name = "x"
test_template_name = "Synthetic"
agent = "{agent}"
agent_steps = {steps}
agent_objectives = {{ bus_bw = "max", latency_us = "min" }}
{extra}
[cmd_args]
duration_s = 0
message_size = [1048576, 16777216, 268435456]
num_channels = [1, 2, 4, 8]
algo = ["ring", "tree"]
"""


def brute_front(points: list[tuple[float, float]]) -> set[int]:
    """Indices no other point dominates (bus_bw max, latency min), by comparing every pair."""

    def dom(a: tuple[float, float], b: tuple[float, float]) -> bool:
        return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])

    return {i for i, p in enumerate(points) if not any(dom(q, p) for j, q in enumerate(points) if j != i)}


@pytest.mark.parametrize("seed", range(20))
def test_pareto_indices_match_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    points = [(float(rng.randint(0, 9)), float(rng.randint(0, 9))) for _ in range(rng.randint(1, 40))]
    assert set(pareto_indices(points, ["max", "min"])) == brute_front(points)


def test_non_finite_points_never_on_the_front() -> None:
    assert pareto_indices([(1.0, math.nan), (0.0, 5.0)], ["max", "min"]) == [1]


@pytest.mark.parametrize("agent", ["optuna", "random_search"])
def test_run_writes_the_brute_force_front(case: Callable[..., Case], agent: str) -> None:
    c = case(MO.format(agent=agent, steps=14, extra="agent_config = { seed = 3 }"))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    frame = c.trajectory()
    assert (frame.status != "cached").sum() == 14
    ok = frame[frame.status == "ok"]
    points = [tuple(json.loads(cell)) for cell in ok.observation]  # observation = [bus_bw, latency_us]
    expected = {int(ok.step.iloc[i]) for i in brute_front(points)}
    pareto = pd.read_csv(c.iteration_dir() / "pareto.csv")
    assert list(pareto.columns[:3]) == ["step", "bus_bw", "latency_us"]
    assert {"message_size", "num_channels", "algo"} <= set(pareto.columns)
    assert set(pareto.step) == expected
    for step in expected:
        test = toml.loads((c.iteration_dir() / "pareto" / f"{step}.toml").read_text())
        action = json.loads(frame[frame.step == step].action.iloc[0])
        assert test["name"] == f"x_pareto_{step}" and test["test_template_name"] == "Synthetic"
        assert {k: test["cmd_args"][k] for k in action} == action
    assert "Pareto front" in result.output and "bus_bw (max)" in result.output


def test_agent_constraints_make_constraint_steps(case: Callable[..., Case]) -> None:
    extra = 'agent_constraints = { latency_us = "<= 2000" }\nagent_config = { seed = 1 }'
    c = case(MO.format(agent="random_search", steps=12, extra=extra))
    assert invoke(c.args()).exit_code == 0
    frame = c.trajectory()
    latency = [json.loads(cell)[1] for cell in frame.observation]
    for status, value, reward in zip(frame.status, latency, frame.reward, strict=True):
        assert (status == "constraint") == (value > 2000), (status, value)
        assert status != "constraint" or reward == -1.0
    assert "constraint" in set(frame.status) and "ok" in set(frame.status)
    front = pd.read_csv(c.iteration_dir() / "pareto.csv")
    assert (front.latency_us <= 2000).all()
    for step in front.step:  # every recorded step counts, the constraint ones too
        assert "over 12 recorded step(s)" in (c.iteration_dir() / "pareto" / f"{step}.toml").read_text()


def test_single_objective_keeps_reward_meaning(case: Callable[..., Case]) -> None:
    test = MO.format(agent="grid_search", steps=4, extra="").replace(
        'agent_objectives = { bus_bw = "max", latency_us = "min" }', 'agent_objectives = { latency_us = "min" }'
    )
    c = case(test)
    assert invoke(c.args()).exit_code == 0
    frame = c.trajectory()
    for obs, reward in zip(frame.observation, frame.reward, strict=True):
        assert reward == -json.loads(obs)[0]  # "min" -> the negative reward, maximized
    assert not (c.iteration_dir() / "pareto.csv").exists()


def test_constraint_text_parses() -> None:
    c = parse_constraint("lat", "<= 50")
    assert (c.op, c.bound, c.violation(60.0), c.broken(50.0), c.broken(50.1)) == ("<=", 50.0, 10.0, False, True)
    with pytest.raises(ValueError, match="not '<= N'"):
        parse_constraint("lat", "at most 50")


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ('agent_constraints = { latency_us = "lots" }', "agent_constraints", "not '<= N'"),
        ('agent_constraints = { lat = "<= 5" }', "agent_constraints.lat", "unknown metric 'lat'"),
        ('agent_config = { sampler = "cmaes" }', "agent_config.sampler", "one objective"),
        pytest.param(
            'agent_config = { sampler = "qmc" }',
            "agent_config.sampler",
            "needs scipy",
            marks=pytest.mark.skipif(not missing_packages("qmc"), reason="scipy is installed here"),
        ),
    ],
)
def test_bad_objective_config_is_exit_2(case: Callable[..., Case], extra: str, field: str, words: str) -> None:
    c = case(MO.format(agent="optuna", steps=4, extra=extra))
    result = invoke(c.args())
    assert result.exit_code == 2 and field in result.output and words in result.output, result.output
    assert not c.out.exists() or not any(c.out.iterdir())


def test_trials_csv_is_wide(case: Callable[..., Case]) -> None:
    c = case(MO.format(agent="random_search", steps=5, extra="agent_config = { seed = 2 }"))
    assert invoke(c.args()).exit_code == 0
    trials = pd.read_csv(c.iteration_dir() / "trials.csv")
    frame = c.trajectory()
    assert list(trials.columns[:5]) == ["step", "episode", "status", "reward", "elapsed_s"]
    assert {"message_size", "num_channels", "algo", "bus_bw", "latency_us"} <= set(trials.columns)
    assert list(trials.step) == list(frame.step)
    for row, obs, action in zip(trials.to_dict("records"), frame.observation, frame.action, strict=True):
        assert [row["bus_bw"], row["latency_us"]] == json.loads(obs)
        assert all(row[k] == v for k, v in json.loads(action).items())


def test_dry_run_names_objectives_and_constraints(case: Callable[..., Case]) -> None:
    extra = 'agent_constraints = { latency_us = "<= 2000" }'
    result = invoke(case(MO.format(agent="optuna", steps=3, extra=extra)).args("dry-run"))
    assert result.exit_code == 0, result.output
    assert "objectives: bus_bw (max), latency_us (min)" in result.output
    assert "constraints: latency_us <= 2000" in result.output


def test_the_shipped_pareto_example_runs(tmp_path: Path) -> None:
    conf = Path(__file__).resolve().parents[2] / "conf" / "common"
    scenario = conf / "test_scenario" / "dse_pareto.toml"
    args = ["run", "--tests-dir", str(conf / "test"), "--test-scenario", str(scenario), "--output-dir", str(tmp_path)]
    result = invoke(args)
    assert result.exit_code == 0, result.output
    (iteration,) = tmp_path.glob("*/pareto/0")
    front = pd.read_csv(iteration / "pareto.csv")
    assert len(front) >= 2 and (front.latency_us <= 20000).all()  # a trade-off, inside the constraint
    assert sorted(p.stem for p in (iteration / "pareto").glob("*.toml")) == sorted(str(s) for s in front.step)
