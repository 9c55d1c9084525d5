"""Agent-driven runs end to end through the CLI and the standalone system: every trial is a real job."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import pytest
from tests.dse.conftest import Case, invoke

from cloudai.agents import AGENTS
from cloudai.agents.base import BaseAgent
from cloudai.envs.base import Feedback, Observation
from cloudai.workloads import WORKLOADS
from cloudai.workloads.base import ONE_NODE, Resources
from cloudai.workloads.bash_cmd import BashCmd

GRID = """name = "x"
test_template_name = "BashCmd"
agent_metrics = ["bus_bw", "default"]
agent_reward_function = "identity"
[cmd_args]
cmd = "{model}"
x = [0, 1, 2, 3]
y = [0, 1, 2]
"""


SYNTHETIC = """name = "x"
test_template_name = "Synthetic"
agent_metrics = ["bus_bw", "latency_us"]
agent_reward_function = "identity"
agent_config = { max_parallel = 1 }
[cmd_args]
duration_s = 0
algo = ["ring", "tree"]
num_channels = [1, 2, 4, 8]
"""


@pytest.mark.parametrize("agent", ["grid_search", "random_search", "optuna"])
def test_synthetic_reward_is_the_first_metric(case: Callable[..., Case], agent: str) -> None:
    c = case(SYNTHETIC.replace("agent_metrics", f'agent = "{agent}"\nagent_steps = 6\nagent_metrics'))
    assert invoke(c.args()).exit_code == 0
    frame = c.trajectory()
    assert list(frame.step) == list(range(1, len(frame) + 1)) and set(frame.status) <= {"ok", "cached"}
    assert (frame.status != "cached").sum() == 6  # agent_steps counts measurements; a cache hit is not one
    measured: dict[str, float] = {}
    for row in frame.to_dict("records"):
        if row["status"] == "cached":  # optuna may ask a point again: the earlier measurement is reused
            assert row["reward"] == measured[row["action"]]
            continue
        metrics = json.loads((c.iteration_dir() / str(row["step"]) / "metrics.json").read_text())
        assert json.loads(row["observation"]) == [metrics["bus_bw"], metrics["latency_us"]]
        assert row["reward"] == metrics["bus_bw"]
        measured[row["action"]] = row["reward"]


def test_synthetic_infeasible_points_are_skipped_by_the_grid(case: Callable[..., Case]) -> None:
    test = SYNTHETIC.replace("num_channels = [1, 2, 4, 8]", "num_channels = [8, 16]\nchunk_kb = 8192")
    c = case(test)
    result = invoke(c.args())
    assert result.exit_code == 0
    assert "4 points, 2 valid" in result.output  # 8192 KiB x 16 > 64 MiB: never asked, no step
    frame = c.trajectory()
    assert list(frame.status) == ["ok", "ok"] and json.loads(frame.action[1])["num_channels"] == 8
    assert [p.name for p in c.job_dirs()] == ["1", "2"]


def test_grid_search_sweeps_the_grid_in_step_order(case: Callable[..., Case]) -> None:
    c = case(GRID)
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    frame = c.trajectory()
    assert list(frame.columns) == [
        "step",
        "episode",
        "action",
        "reward",
        "observation",
        "status",
        "elapsed_s",
        "reason",
    ]
    assert list(frame.step) == list(range(1, 13))
    assert set(frame.status) == {"ok"} and set(frame.episode) == {1}
    actions = [json.loads(a) for a in frame.action]
    assert actions == [{"x": x, "y": y} for x in (0, 1, 2, 3) for y in (0, 1, 2)]
    for action, reward, obs in zip(actions, frame.reward, frame.observation, strict=True):
        bus_bw = action["x"] * 10 + action["y"]
        assert reward == bus_bw  # identity(bus_bw), the first agent_metric
        assert json.loads(obs) == [bus_bw, -((action["x"] - 2) ** 2) - (action["y"] - 1) ** 2 + 10]
    assert len(c.job_dirs()) == 12
    assert "best of 12 step(s) is step 12: bus_bw 32 (a single measurement)" in result.output
    assert not (c.iteration_dir() / "env.csv").exists()


def test_best_toml_runs_unchanged(case: Callable[..., Case], tmp_path: Any) -> None:
    c = case(GRID)
    assert invoke(c.args()).exit_code == 0
    best = c.iteration_dir() / "best.toml"
    assert "x = 3" in best.read_text() and "y = 2" in best.read_text()
    tests = tmp_path / "best_tests"
    tests.mkdir()
    (tests / "best.toml").write_text(best.read_text())
    scenario = tmp_path / "best_scenario.toml"
    scenario.write_text('name = "best"\n[[Tests]]\nid = "b"\ntest_name = "x_best"\n')
    result = invoke(["run", "--tests-dir", str(tests), "--test-scenario", str(scenario),
                     "--output-dir", str(tmp_path / "best_out")])  # fmt: skip
    assert result.exit_code == 0, result.output
    (metrics,) = (tmp_path / "best_out").glob("*/b/0/metrics.json")
    assert json.loads(metrics.read_text())["bus_bw"] == 32


@pytest.mark.parametrize("agent", ["random_search", "optuna"])
def test_other_agents_record_agent_steps(case: Callable[..., Case], agent: str) -> None:
    c = case(
        GRID.replace(
            "agent_metrics", f'agent = "{agent}"\nagent_steps = 6\nagent_config = {{ seed = 3 }}\nagent_metrics'
        )
    )
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    frame = c.trajectory()
    assert list(frame.step) == list(range(1, len(frame) + 1)) and set(frame.status) <= {"ok", "cached"}
    assert (frame.status != "cached").sum() == 6  # agent_steps counts measurements; a cache hit is not one
    assert len(c.job_dirs()) == (frame.status == "ok").sum()


def test_failed_and_incomplete_trials_are_recorded_and_the_sweep_goes_on(case: Callable[..., Case]) -> None:
    test = GRID.replace("x = [0, 1, 2, 3]", "x = [-1, 1]").replace("y = [0, 1, 2]", "drop = [false, true]")
    c = case(test.replace("[cmd_args]", "agent_config = { penalty_reward = -7.5 }\n[cmd_args]"))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output  # one trial succeeded
    frame = c.trajectory()
    assert list(frame.status) == ["failed", "failed", "ok", "failed"]
    assert list(frame.reward) == [-7.5, -7.5, 10.0, -7.5]
    obs = [json.loads(o) for o in frame.observation]
    assert obs[0] == [None, None]  # exit code 3: nothing measured
    assert obs[3] == [None, 8.0]  # bus_bw missing, default measured
    assert all(len(o) == 2 for o in obs)
    assert "best of 4 step(s) is step 3" in result.output  # the failed steps were searched too
    assert "  steps: 3 failed, 1 ok" in result.output


def test_no_successful_trial_exits_1(case: Callable[..., Case]) -> None:
    c = case(GRID.replace("x = [0, 1, 2, 3]", "x = [-1, -2]"))
    result = invoke(c.args())
    assert result.exit_code == 1
    assert "no trial succeeded" in result.output
    assert not (c.iteration_dir() / "best.toml").exists()


def test_timeout_is_a_recorded_step(case: Callable[..., Case]) -> None:
    test = GRID.replace("x = [0, 1, 2, 3]", "x = 1").replace("y = [0, 1, 2]", "sleep = [0, 30]")
    scenario = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\ntime_limit = "0:01"\n'
    c = case(test, scenario)
    assert invoke(c.args()).exit_code == 0
    assert list(c.trajectory().status) == ["ok", "timeout"]


class _OddX(BashCmd):
    name = "OddX"

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        return "x must be even" if int(args["x"]) % 2 else None


def test_points_breaking_the_rule_take_no_step(case: Callable[..., Case], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(WORKLOADS._loaded, "OddX", _OddX)  # registered for this test only
    c = case(GRID.replace('"BashCmd"', '"OddX"').replace("y = [0, 1, 2]", "y = 0"))
    assert invoke(c.args()).exit_code == 0
    frame = c.trajectory()
    assert list(frame.status) == ["ok", "ok"] and [json.loads(a)["x"] for a in frame.action] == [0, 2]
    assert [p.name for p in c.job_dirs()] == ["1", "2"]


class _Repeat(BaseAgent):
    """Asks each of ``x = 0, 1`` twice: the second ask of each must be served from the cache."""

    name = "repeat"
    plan = [0, 1, 0, 1, 0]

    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None:
        asked = self.env.next_step - 1
        return (self.env.next_step, {"x": self.plan[asked]}) if asked < len(self.plan) else None

    def update_policy(self, feedback: Feedback) -> None:
        pass


def test_a_repeated_action_is_cached_and_launches_no_job(case: Callable[..., Case]) -> None:
    AGENTS.register("repeat", _Repeat)
    c = case(
        GRID.replace("y = [0, 1, 2]", "y = 1").replace("[cmd_args]", 'agent = "repeat"\nagent_steps = 5\n[cmd_args]')
    )
    assert invoke(c.args()).exit_code == 0
    frame = c.trajectory()
    assert list(frame.status) == ["ok", "ok", "cached", "cached", "cached"]
    assert list(frame.reward) == [1.0, 11.0, 1.0, 11.0, 1.0]
    assert [p.name for p in c.job_dirs()] == ["1", "2"]


class _RepeatAndKeep(_Repeat):
    name = "repeat_and_keep"
    told: ClassVar[list[Feedback]] = []

    def update_policy(self, feedback: Feedback) -> None:
        self.told.append(feedback)


@pytest.mark.parametrize("metrics", [["bus_bw", "default"], ["default", "bus_bw"], ["default"]])
def test_a_cache_hit_repeats_the_measured_metrics(case: Callable[..., Case], metrics: list[str]) -> None:
    """All of them, in the workload's order: the agent metrics in another order, or only some of them."""
    AGENTS.register("repeat_and_keep", _RepeatAndKeep)
    _RepeatAndKeep.told = []
    test = GRID.replace("y = [0, 1, 2]", "y = 1").replace('["bus_bw", "default"]', json.dumps(metrics))
    c = case(test.replace("[cmd_args]", 'agent = "repeat_and_keep"\nagent_steps = 4\n[cmd_args]'))
    assert invoke(c.args()).exit_code == 0
    told = {f.step: f for f in _RepeatAndKeep.told}
    assert [told[s].status for s in (1, 2, 3, 4)] == ["ok", "ok", "cached", "cached"]
    for measured, cached in ((1, 3), (2, 4)):
        assert list(told[cached].info["metrics"].items()) == list(told[measured].info["metrics"].items())
        assert told[cached].info["cached_from"] == measured
    assert list(told[1].info["metrics"]) == ["default", "bus_bw"]  # as the job wrote them


class _Crash(_Repeat):
    name = "crash"
    plan = [0, 1, 2, 3]

    def update_policy(self, feedback: Feedback) -> None:
        if feedback.step == 2:
            raise RuntimeError("the agent broke")


def test_a_hard_failure_writes_dse_failure_and_exits_1(case: Callable[..., Case]) -> None:
    AGENTS.register("crash", _Crash)
    c = case(GRID.replace("y = [0, 1, 2]", "y = 1").replace("[cmd_args]", 'agent = "crash"\n[cmd_args]'))
    result = invoke(c.args())
    assert result.exit_code == 1
    failure = (c.iteration_dir() / "dse_failure.txt").read_text()
    assert "RuntimeError: the agent broke" in failure
    assert "at step 2" in failure and "Traceback" in failure
    assert f"--resume {c.run_dir().resolve()}" in failure and "--test-scenario" in failure
    assert list(c.trajectory().step) == [1, 2]
    assert (c.run_dir() / "report.html").exists()  # the finished steps are still reported


def test_max_parallel_keeps_four_trials_in_flight(case: Callable[..., Case]) -> None:
    c = case(SYNTHETIC.replace("duration_s = 0", "duration_s = 0.4").replace("max_parallel = 1", "max_parallel = 4"))
    assert invoke(c.args()).exit_code == 0
    jobs = c.jobs()
    assert len(jobs) == 8
    starts = sorted(j["started_at"] for j in jobs)
    most = max(sum(1 for j in jobs if j["started_at"] <= t < j["ended_at"]) for t in starts)
    assert most == 4
    assert list(c.trajectory().step) == list(range(1, 9))  # rows still land in step order


def test_resume_of_a_finished_run_runs_nothing(case: Callable[..., Case]) -> None:
    c = case(GRID)
    assert invoke(c.args()).exit_code == 0
    before = {d.name: (d / "job.json").stat().st_mtime_ns for d in c.job_dirs()}
    result = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert result.exit_code == 0, result.output
    assert {d.name: (d / "job.json").stat().st_mtime_ns for d in c.job_dirs()} == before
    assert len(c.trajectory()) == 12


def test_a_field_an_earlier_cloudai_did_not_record_resumes_at_its_default(case: Callable[..., Case]) -> None:
    """A run.json from before ``system.global_env_vars`` existed: absent then, its default ({}) now, no change
    (refused as "the tests changed" before); a recorded value that differs is named with both values."""
    c = case(GRID)
    assert invoke(c.args()).exit_code == 0
    manifest = c.run_dir() / "run.json"
    data = json.loads(manifest.read_text())
    del data["fingerprints"]["t"]["system.global_env_vars"]
    manifest.write_text(json.dumps(data))
    result = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert result.exit_code == 0, result.output
    data["fingerprints"]["t"]["system.global_env_vars.A"] = "1"
    manifest.write_text(json.dumps(data))
    result = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert result.exit_code == 2 and 'system.global_env_vars.A: "1" -> (unset)' in result.output, result.output


def test_resume_of_another_scenario_is_refused(case: Callable[..., Case], tmp_path: Any) -> None:
    c = case(GRID)
    assert invoke(c.args()).exit_code == 0
    c.scenario.write_text('name = "other"\n[[Tests]]\nid = "t"\ntest_name = "x"\n')
    result = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert result.exit_code == 2 and "resume with the same" in result.output


def test_nan_free_rewards(case: Callable[..., Case]) -> None:
    c = case(GRID.replace('"identity"', '"inverse"'))
    assert invoke(c.args()).exit_code == 0
    frame = c.trajectory()
    assert all(math.isfinite(r) for r in frame.reward)
    assert frame.reward[1] == pytest.approx(1.0)  # inverse(bus_bw = 1)


def test_env_vars_and_num_nodes_are_knobs_too(case: Callable[..., Case]) -> None:
    from cloudai.config.test import load_test

    test = GRID.replace("x = [0, 1, 2, 3]", "x = 1").replace("y = [0, 1, 2]", "y = 0")
    scenario = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\nnum_nodes = [1, 2]\n'
    scenario += '  [Tests.extra_env_vars]\n  FOO = ["a", "b"]\n'
    c = case(test, scenario)
    assert invoke(c.args()).exit_code == 0
    actions = [json.loads(a) for a in c.trajectory().action]
    assert actions[0] == {"extra_env_vars.FOO": "a", "num_nodes": 1}
    assert "export FOO=b" in (c.iteration_dir() / "4" / "cmd.sh").read_text()
    best = c.iteration_dir() / "best.toml"
    assert "# num_nodes = 1: set it on the scenario entry" in best.read_text()
    assert load_test(best).extra_env_vars == {"FOO": "a"}


def test_a_twin_of_a_running_trial_waits_for_it(case: Callable[..., Case]) -> None:
    AGENTS.register("repeat", _Repeat)
    test = GRID.replace("y = [0, 1, 2]", "y = 1\nsleep = 0.2").replace(
        "[cmd_args]", 'agent = "repeat"\nagent_steps = 5\nagent_config = { max_parallel = 4 }\n[cmd_args]'
    )
    c = case(test)
    assert invoke(c.args()).exit_code == 0
    frame = c.trajectory()
    assert list(frame.status) == ["ok", "ok", "cached", "cached", "cached"]
    assert [p.name for p in c.job_dirs()] == ["1", "2"]


SIX_POINTS = (
    SYNTHETIC.replace("num_channels = [1, 2, 4, 8]", "num_channels = [1, 2, 4]")
    .replace("{ max_parallel = 1 }", "{ seed = 0 }")
    .replace("agent_metrics", 'agent = "optuna"\nagent_steps = {steps}\nagent_metrics')
)


def test_agent_steps_counts_measurements_not_cache_hits(case: Callable[..., Case]) -> None:
    """Optuna over 6 points with agent_steps = 6 measures all 6: its repeats are recorded as cached but do not
    use up the budget (before: 3 of 6 steps were repeats, 3 distinct configurations measured)."""
    c = case(SIX_POINTS.replace("{steps}", "6"))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    frame = c.trajectory()
    measured = frame[frame.status != "cached"]
    assert len(measured) == 6 and measured.action.nunique() == 6
    assert len(c.job_dirs()) == 6
    assert "stopped after" not in result.output


def test_more_steps_than_points_ends_when_every_point_is_measured(case: Callable[..., Case]) -> None:
    c = case(SIX_POINTS.replace("{steps}", "10"))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    assert "stopped after 6 of 10 step(s) (agent_steps): every one of the space's 6 valid point(s) is measured" in (
        result.output
    )
    assert c.trajectory().action.nunique() == 6 and len(c.job_dirs()) == 6
