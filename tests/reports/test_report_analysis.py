"""The numbers behind the report, on hand-built trajectories: best so far, top trials, importance, regimes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cloudai.reports.analysis import best_so_far, episode_returns, knob_kind, param_importance
from cloudai.reports.env_csv import read_env
from cloudai.reports.regimes import regimes
from cloudai.reports.trajectory import Step, Trajectory, read_trajectory


def step(n: int, action: dict, reward: float, status: str = "ok", episode: int = 1, **env: object) -> Step:
    key = json.dumps(action, sort_keys=True)
    return Step(n, episode, action, reward, [reward], status, 0.1, key, dict(env))  # type: ignore[arg-type]


def trajectory(steps: list[Step], env_params: list[str] | None = None) -> Trajectory:
    knobs = list(dict.fromkeys(k for s in steps for k in s.action))
    return Trajectory(steps, knobs, env_params or [])


def test_best_so_far_ignores_failed_rewards_and_starts_undefined() -> None:
    traj = trajectory([step(1, {"a": 1}, 5.0, "failed"), step(2, {"a": 2}, 1.0), step(3, {"a": 3}, 0.5),
                       step(4, {"a": 4}, 3.0, "cached")])  # fmt: skip
    curve = best_so_far(traj)
    assert math.isnan(curve[0])
    assert curve[1:] == [1.0, 1.0, 3.0]


def test_episode_returns_sum_rewards_per_episode() -> None:
    traj = trajectory([step(1, {"a": 1}, 1.0), step(2, {"a": 1}, 2.0), step(3, {"a": 1}, 5.0, episode=2)])
    assert episode_returns(traj) == {1: (3.0, 2), 2: (5.0, 1)}


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        (["a", "b"], "categorical"),
        ([True, False], "categorical"),
        ([1, 2, 4, 8], "categorical"),
        (list(range(20)), "int"),
        ([i / 10 for i in range(20)], "float"),
    ],
)
def test_knob_kind(values: list[object], kind: str) -> None:
    assert knob_kind(values) == kind


def test_importance_ranks_the_knob_that_drives_the_reward() -> None:
    steps = [step(i, {"big": i % 13, "noise": ["a", "b", "c"][i % 3]}, float(i % 13) ** 2) for i in range(1, 80)]
    imp = param_importance(trajectory(steps))
    assert next(iter(imp.values)) == "big"
    assert math.isclose(sum(imp.values.values()), 1.0)


def test_importance_of_a_long_search_uses_an_even_sample_and_says_so() -> None:
    steps = [
        step(i, {"big": i % 97, "small": i % 5 / 10, "id": i}, float(i % 97) + i % 5 / 100) for i in range(1, 2502)
    ]
    imp = param_importance(trajectory(steps))
    assert (imp.trials, imp.of) == (417, 2501)  # every 6th: at most MAX_IMPORTANCE_TRIALS = 500
    assert next(iter(imp.values)) == "big"


def test_a_categorical_knob_with_thousands_of_values_is_left_out_of_the_importance_and_said_so() -> None:
    """Optuna's cost is trials x categories: a knob with a new value per trial is not ranked (nothing to rank)."""
    steps = [step(i, {"big": i % 7, "variant": f"v{i}"}, float(i % 7)) for i in range(1, 1001)]
    imp = param_importance(trajectory(steps))
    assert list(imp.values) == ["big"]
    assert "variant left out: 500 distinct values (more than 64)" in imp.note


def test_importance_needs_two_distinct_ok_trials() -> None:
    traj = trajectory([step(1, {"a": 1}, 1.0), step(2, {"a": 1}, 1.0), step(3, {"a": 2}, 1.0, "failed")])
    assert param_importance(traj).note == "needs at least 2 distinct ok trials, found 1"


def test_importance_needs_a_knob_that_varies() -> None:
    traj = trajectory([step(1, {"a": 1, "b": 1}, 1.0), step(2, {"a": 1, "b": 1, "c": None}, 2.0)])
    assert param_importance(traj).note


EASY, HARD = {"algo": "ring"}, {"algo": "tree"}


def test_a_configuration_good_only_in_the_easy_regime_is_a_trap() -> None:
    steps = [
        step(1, EASY, 10.0, load=0.0), step(2, HARD, 8.0, load=0.0), step(3, {"algo": "x"}, 7.0, load=0.0),
        step(4, EASY, 1.0, load=0.9), step(5, HARD, 6.0, load=0.9), step(6, {"algo": "x"}, 5.0, load=0.9),
    ]  # fmt: skip
    reg = regimes(trajectory(steps, ["load"]))
    assert reg is not None and reg.trap
    assert reg.verdict.startswith("Trap: the best configuration is below the median configuration in load=0.9")
    assert '{"algo": "tree"}' in reg.verdict  # the robust alternative
    hard = next(r for r in reg.rows if r.label == "0.9")
    assert (hard.best_mean, hard.best_min, hard.best_n, hard.configs) == (1.0, 1.0, 1, 3)


def test_a_configuration_good_everywhere_holds() -> None:
    steps = [step(1, EASY, 10.0, load=0.0), step(2, HARD, 8.0, load=0.0), step(3, EASY, 6.0, load=0.9),
             step(4, HARD, 5.0, load=0.9)]  # fmt: skip
    reg = regimes(trajectory(steps, ["load"]))
    assert reg is not None and not reg.trap
    assert reg.verdict.startswith("The best configuration holds in every observed regime (hardest: load=0.9")


def test_a_configuration_never_tried_in_a_regime_is_unproven() -> None:
    steps = [step(1, EASY, 10.0, load=0.0), step(2, HARD, 8.0, load=0.9)]
    reg = regimes(trajectory(steps, ["load"]))
    assert reg is not None and reg.trap and reg.verdict.startswith("Unproven")


def test_continuous_env_params_are_binned_into_quartiles() -> None:
    steps = [step(i, {"a": i % 2}, float(i), latency=float(i)) for i in range(1, 41)]
    reg = regimes(trajectory(steps, ["latency"]))
    assert reg is not None
    assert [r.label for r in reg.rows] == ["1 to 10", "10 to 20", "20 to 30", "30 to 40"]


def test_reading_tolerates_torn_and_out_of_order_rows(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.csv"
    path.write_text(
        "step,episode,action,reward,observation,status,elapsed_s\n"
        '1,1,"{""a"": 1}",1.0,[1.0],ok,0.1\n'
        '3,1,"{""a"": 2}",2.0,[2.0],ok,0.1\n'
        '2,1,"{""a"": 3}",3.0,[3.0],ok,0.1\n'
        '4,1,"{""a"": 3}",,[],constraint,0.1\n'
        '5,1,"{""a"": 4}",4.0,[4.0],o'
    )
    (tmp_path / "env.csv").write_text("step,load\n1,0.0\n3,0.5\n4,0.9\n5,0.")
    traj = read_trajectory(path)
    read_env(tmp_path / "env.csv", traj)
    assert [s.step for s in traj.steps] == [1, 3, 4]
    assert math.isnan(traj.steps[2].reward) and not traj.steps[2].scored
    assert traj.notes == [
        "trajectory.csv line 4: unparseable or out-of-order row; dropped",
        "trajectory.csv line 6: torn last line (interrupted run); dropped",
    ]
    assert [s.env["load"] for s in traj.steps] == [0.0, 0.5, 0.9]


def test_an_unexpected_header_is_a_note_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.csv"
    path.write_text("step,action,reward\n1,{},1\n")
    traj = read_trajectory(path)
    assert traj.steps == [] and "unexpected header" in traj.notes[0]


def test_files_written_by_the_real_trajectory_writer_are_read_back(tmp_path: Path) -> None:
    writer_module = pytest.importorskip("cloudai.trajectory.records")
    writer = writer_module.TrajectoryWriter(tmp_path, ["load", "sharp"])
    for n, (threads, load) in enumerate([(4, 0.0), (8, 0.5), (8, 0.9)], start=1):
        status = "failed" if n == 2 else "ok"
        writer.append(step=n, episode=1, action={"threads": threads, "algo": "ring"}, reward=float(n),
                      observation=[float(n), math.nan], status=status, elapsed_s=0.25,
                      env={"load": load, "sharp": n % 2 == 0})  # fmt: skip
    writer.close()
    with (tmp_path / "trajectory.csv").open("a") as fh:
        fh.write('4,1,"{""threads"":8}",4.0,[4.0],ok,0.1')  # complete but unterminated: never committed

    traj = read_trajectory(tmp_path / "trajectory.csv")
    read_env(tmp_path / "env.csv", traj)

    assert [s.step for s in traj.steps] == [1, 2, 3]
    assert traj.knobs == ["algo", "threads"]
    assert traj.steps[0].observation[0] == 1.0 and math.isnan(traj.steps[0].observation[1])  # as --resume reads it
    assert [s.env for s in traj.steps] == [
        {"load": 0.0, "sharp": False},
        {"load": 0.5, "sharp": True},
        {"load": 0.9, "sharp": False},
    ]
    assert traj.best() == traj.steps[2]
    assert traj.notes == ["trajectory.csv line 5: torn last line (interrupted run); dropped"]
