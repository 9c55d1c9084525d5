"""env.csv end to end through the CLI: step-aligned whatever happens to a step, and deterministic per seed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import toml
from tests.conftest import CONF
from tests.dse.conftest import Case, invoke
from tests.reports.report_builders import tables

from cloudai.config.test import EnvParamSpec
from cloudai.envs.env_params import EnvParamSampler
from cloudai.space import Categorical, Space

# 8 actions x 2 loads; chunk 8192 x 16 channels is infeasible (the sweep skips it); fail_rate fails some points for good
# (the draw is a hash of the knobs), and 24 steps over 16 (action, load) pairs repeat some: cache hits.
TEST = """name = "x"
test_template_name = "Synthetic"
agent = "{agent}"
agent_steps = 24
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
agent_config = {{ seed = {seed}, max_parallel = {parallel}, confirm = 0 }}
[cmd_args]
algo = ["ring", "tree"]
chunk_kb = [512, 8192]
num_channels = [8, 16]
fail_rate = 0.3
duration_s = 0
background_load = [0.0, 0.5]
[env_params.background_load]
weights = [0.7, 0.3]
"""
SCENARIO = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\nnum_nodes = 2\n'
SAMPLER_SPACE = Space({}, (Categorical("background_load", (0.0, 0.5)),))


def run(case: Callable[..., Case], agent: str = "random_search", seed: int = 5, parallel: int = 3) -> Case:
    c = case(TEST.format(agent=agent, seed=seed, parallel=parallel), SCENARIO)
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    return c


def expected_loads(seed: int, steps: list[int]) -> list[float]:
    sampler = EnvParamSampler({"background_load": EnvParamSpec(weights=[0.7, 0.3])}, SAMPLER_SPACE, seed)
    return [sampler.sample(step)["background_load"] for step in steps]


def test_every_step_has_its_env_row_whatever_its_status(case: Callable[..., Case]) -> None:
    c = run(case)
    frame, env = c.trajectory(), pd.read_csv(c.iteration_dir() / "env.csv")
    assert set(frame.status) == {"ok", "cached", "failed"}  # every path, 3 trials in flight
    chosen = [json.loads(a) for a in frame.action]
    assert not any(a["chunk_kb"] == 8192 and a["num_channels"] == 16 for a in chosen)  # the rule's point: skipped
    assert list(frame.step) == list(env.step) == list(range(1, len(frame) + 1))
    assert (frame.status != "cached").sum() == 24  # agent_steps counts measurements
    assert list(env.columns) == ["step", "background_load"]
    assert list(env.background_load) == expected_loads(5, list(env.step))
    launched = frame[frame.status.isin(["ok", "failed"])]
    assert sorted(int(p.name) for p in c.job_dirs()) == list(launched.step)  # cached steps run nothing
    for row in frame[frame.status == "ok"].itertuples():  # the sampled value reached the trial's command
        load = env.background_load[row.step - 1]
        assert f"--background-load {load}" in (c.iteration_dir() / str(row.step) / "cmd.sh").read_text()

    # the cache key includes the env_params: a hit only for the same action under the same draw
    first: dict[tuple[str, float], float] = {}
    for row, load in zip(frame.itertuples(), env.background_load, strict=True):
        key = (json.dumps(json.loads(row.action), sort_keys=True), load)
        if row.status == "cached":
            assert first[key] == row.reward
        elif row.status == "ok":
            first.setdefault(key, row.reward)
    actions = {k for k, _ in first}
    assert any((a, 0.0) in first and (a, 0.5) in first for a in actions)  # same action, two draws: two jobs


def test_timed_out_steps_have_env_rows_too(case: Callable[..., Case]) -> None:
    test = TEST.format(agent="random_search", seed=1, parallel=2).replace("agent_steps = 24", "agent_steps = 2")
    test = test.replace("duration_s = 0", "duration_s = [0, 30]").replace("fail_rate = 0.3", "fail_rate = 0")
    test = test.replace('algo = ["ring", "tree"]\nchunk_kb = [512, 8192]\nnum_channels = [8, 16]', "")
    c = case(test, SCENARIO + 'time_limit = "0:01"\n')
    assert invoke(c.args()).exit_code == 0
    frame, env = c.trajectory(), pd.read_csv(c.iteration_dir() / "env.csv")
    assert sorted(frame.status) == ["ok", "timeout"]
    assert list(env.step) == list(frame.step) == [1, 2]


def test_same_seed_same_env_csv_whatever_the_agent_or_parallelism(tmp_path: Path) -> None:
    env_csvs = []
    for agent, seed, parallel in [("random_search", 5, 3), ("optuna", 5, 1), ("random_search", 6, 3)]:
        root = tmp_path / f"{agent}-{seed}-{parallel}"
        root.mkdir()
        c = Case(root)
        c.tests.mkdir()
        test = TEST.format(agent=agent, seed=seed, parallel=parallel).replace("agent_steps = 24", "agent_steps = 12")
        (c.tests / "x.toml").write_text(test)
        c.scenario.write_text(SCENARIO)
        assert invoke(c.args()).exit_code == 0
        env_csvs.append((c.iteration_dir() / "env.csv").read_text().splitlines())
    common = min(map(len, env_csvs))  # cached steps (not counted in agent_steps) make some runs longer
    assert env_csvs[0][:common] == env_csvs[1][:common]
    assert env_csvs[0][:common] != env_csvs[2][:common]


def test_shipped_bandit_example(tmp_path: Path) -> None:
    """The shipped test as it is, through a scenario entry that shortens it to 36 steps (of 120)."""
    scenario = (CONF / "common" / "test_scenario" / "dse_env_params.toml").read_text() + "agent_steps = 36\n"
    (tmp_path / "s.toml").write_text(scenario)
    result = invoke(["run", "--tests-dir", str(CONF / "common" / "test"), "--test-scenario", str(tmp_path / "s.toml"),
                     "--output-dir", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 0, result.output
    (iteration,) = tmp_path.glob("out/*/synthetic_env/0")
    frame, env = pd.read_csv(iteration / "trajectory.csv"), pd.read_csv(iteration / "env.csv")
    # env_params: 3 candidates re-run 3 times in each of the 3 load regimes, under the same draws
    assert len(frame) == 36 + 27 and list(env.step) == list(frame.step)
    confirm = pd.read_csv(iteration / "confirm.csv").merge(env, on="step")
    assert list(confirm.step) == list(range(37, 64)) and sorted(confirm.candidate) == [1] * 9 + [2] * 9 + [3] * 9
    per_draw = confirm.groupby("draw")
    assert (per_draw.background_load.nunique() == 1).all() and (per_draw.jitter.nunique() == 1).all()
    assert sorted(confirm[confirm.candidate == 1].background_load) == [0.0] * 3 + [0.5] * 3 + [0.9] * 3
    assert "recommended bus_bw: candidate" in result.output and " GB/s over the env regimes (95 % CI" in result.output
    collnet = '"algo": "collnet", "chunk_kb": 4096, "num_channels": 4'
    assert collnet in result.output.split("recommended")[1].split("\n")[0]
    # The report's table ranks as the recommendation: collnet first, by its value over the regimes
    header, first, *_ = tables(next(tmp_path.glob("out/*/report.html")))["synthetic_env-0--top"]
    assert header[1:6] == ["rank", "expected value ± 95 % CI", "n", "failed", "background_load=0.0"]
    assert first[1] == "candidate 1" and first[-3:] == ["collnet", "4096", "4"]
    assert toml.loads((iteration / "best.toml").read_text())["cmd_args"]["algo"] == "collnet"
    summary = pd.read_csv(iteration.parents[1] / "summary.csv")
    assert json.loads(summary.best_action[0])["algo"] == "collnet" and 41 < summary.best_reward[0] < 42
    assert "(a single measurement)" in result.output and "env_params: " in result.output
    assert "# Recommended (best.toml is it): candidate" in (iteration / "best.toml").read_text()
    assert list(env.columns) == ["step", "background_load", "jitter"]
    assert env.jitter.between(0.0, 0.3).all() and set(env.background_load) == {0.0, 0.5, 0.9}
    best = (iteration / "best.toml").read_text()
    assert "# Reward of this action per env_params regime" in best and "#   background_load=0.9:" in best
    assert "# bandit: best action per env_params regime" in best
    assert "Reward of this action per env_params regime" in result.output


def test_a_confirmation_longer_than_the_search_is_announced(case: Callable[..., Case]) -> None:
    test = TEST.format(agent="random_search", seed=5, parallel=1).replace("agent_steps = 24", "agent_steps = 4")
    c = case(test.replace("confirm = 0", "confirm = 1, confirm_repeats = 3"), SCENARIO)
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    assert (
        "note: t: confirmation re-runs 1 candidate(s) 3 time(s) in each of 2 env_params regimes: 6 steps, more than "
        "the search's" in result.output
    )
    confirm = pd.read_csv(c.iteration_dir() / "confirm.csv").merge(pd.read_csv(c.iteration_dir() / "env.csv"))
    assert list(confirm.draw) == list(range(6)) and list(confirm.background_load) == [0.0, 0.5] * 3
