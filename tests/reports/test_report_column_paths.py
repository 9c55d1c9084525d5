"""The report's column shortcuts give what the plain per-step (or per-value) definition gives.

Long runs take shortcuts through whole columns (``regimes``: a configuration's mean from one dict of the rewards,
the repeated ones averaged apart; ``chartdata``: a column of finite floats as it is; ``plots_measure``: the
observations by ``itemgetter``; ``plots_knobs``: the box rewards by position). Each is checked here against the
definition written out step by step, on data with the cases the shortcuts must tell apart: configurations
measured again in one regime and once in another, -0.0 and infinite rewards, ``1`` and ``True`` as env values,
float noise, short observations.
"""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path
from statistics import fmean

import pytest

from cloudai.reports import env_csv, plots, trajectory
from cloudai.reports import regimes as regimes_module
from cloudai.reports.chartdata import Rows, finite, finites, scalar, scalars
from cloudai.reports.plots_knobs import HALF, box_stats, knob_effects
from cloudai.reports.plots_measure import _column, _value
from cloudai.reports.regimes import labeller, regimes
from cloudai.reports.trajectory import Step, Trajectory, read_steps_row_by_row, read_trajectory
from cloudai.space import RegimeBins
from cloudai.trajectory.records import TrajectoryWriter

BINS = {"load": RegimeBins(candidates=("0.0", "0.5")), "mode": RegimeBins(candidates=("1", "true", "x"))}


def _trajectory(seed: int) -> Trajectory:
    """80 steps over 6 configurations (each measured several times, in one regime or several), every reward
    status, rewards of -0.0 and +inf, a ``mode`` env param taking 1, True and "x", one step with no ``load``."""
    rng = random.Random(seed)
    actions = [{"algo": a, "n": n} for a in ("ring", "tree") for n in (1, 2, 4)]
    steps = []
    for n in range(1, 81):
        action = rng.choice(actions)
        status = rng.choice(["ok"] * 6 + ["cached", "failed"])
        reward = math.nan if status == "failed" else rng.choice([-0.0, 0.0, 1.5, 2.25, rng.gauss(3, 1)])
        reward = math.inf if n == 40 else reward
        env: dict[str, object] = {"load": rng.choice([0.0, 0.5]), "mode": rng.choice([1, True, "x"])}
        if n == 7:
            del env["load"]
        key = json.dumps(action, sort_keys=True, separators=(",", ":"))
        steps.append(Step(n, 1, action, reward, [reward], status, 0.5, key, env))  # pyright: ignore[reportArgumentType]
    return Trajectory(steps, ["algo", "n"], ["load", "mode"])


def _naive_rows(traj: Trajectory, best: Step, bins: dict[str, RegimeBins] | None) -> list[tuple[object, ...]]:
    """``regimes``' rows by their definition: every scored step into its regime and configuration, one by one."""
    rows = []
    for param in traj.env_params:
        label_of = bins[param].label if bins else labeller([s.env.get(param) for s in traj.steps])
        groups: dict[str, dict[str, list[float]]] = {}
        for s in traj.scored():
            if (value := s.env.get(param)) is not None:
                groups.setdefault(label_of(value), {}).setdefault(s.key, []).append(s.reward)
        order = {label: i for i, label in enumerate(bins[param].labels())} if bins else {}
        for label in sorted(groups, key=lambda g: (order.get(g, len(order)), g)):
            means = {k: fmean(r) for k, r in groups[label].items()}
            mine = groups[label].get(best.key, [])
            best_mean = means.get(best.key, math.nan)
            beaten = sum(m > best_mean for m in means.values()) / len(means) if mine else math.nan
            rows.append((param, label, best_mean, min(mine, default=math.nan), len(mine), fmean(means.values()),
                         len(means), beaten))  # fmt: skip
    return rows


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("binned", [True, False])
def test_regime_rows_are_those_of_each_step_grouped_one_by_one(seed: int, binned: bool) -> None:
    traj = _trajectory(seed)
    best = traj.best()
    assert best is not None
    found = regimes(traj, best, BINS if binned else None)
    assert found is not None
    rows = [(r.param, r.label, r.best_mean, r.best_min, r.best_n, r.all_mean, r.configs, r.beaten_by)
            for r in found.rows]  # fmt: skip
    assert repr(rows) == repr(_naive_rows(traj, best, BINS if binned else None))  # repr: -0.0 is not 0.0
    assert len({r.label for r in found.rows if r.param == "mode"}) == 3  # 1 and True apart
    assert any(r.configs < sum(1 for s in traj.scored() if s.env.get(r.param) is not None) for r in found.rows)


NOISY = [0.6000000000000001, -0.0, 1e-320, 1e300, 3.0, 0.1 + 0.2]
COLUMNS = [NOISY, [*NOISY, math.inf], [*NOISY, math.nan], [*NOISY, 2], [*NOISY, True], [*NOISY, None], [1, 2],
           ["a", None], [{"b": 0.6000000000000001}, [1.5]], []]  # fmt: skip


@pytest.mark.parametrize("values", COLUMNS)
def test_chart_columns_are_each_value_as_finite_and_scalar_make_it(values: list[object]) -> None:
    assert repr(finites(list(values))) == repr(list(map(finite, values)))
    assert repr(scalars(list(values))) == repr(list(map(scalar, values)))


def test_an_observation_column_is_each_step_value() -> None:
    def at(n: int, observation: list[object]) -> Step:
        return Step(n, 1, {}, 1.0, observation, "ok", 0.1, "{}")  # pyright: ignore[reportArgumentType]

    whole = [at(1, [1.5, 2.0]), at(2, [math.nan, -0.0]), at(3, [0.25, 3.5])]
    for steps in (whole, [*whole, at(4, [7.0])], [*whole, at(5, [7.0, 2])], [*whole, at(6, [7.0, True])]):
        for index in (0, 1, 2):
            assert repr(_column(steps, index)) == repr([_value(s, index) for s in steps])


def test_a_knob_box_is_of_the_finite_rewards_of_its_value() -> None:
    traj = _trajectory(4)
    traj.steps[10].action.pop("algo")  # a step that does not set the knob is in no box
    charts, _ = knob_effects(Rows("r", traj.knobs, ["m"], "reward"), traj)
    boxes = charts[0]["boxes"]
    assert isinstance(boxes, list)
    ticks = charts[0]["ticks"]
    assert isinstance(ticks, list)
    for (x, label, _), box in zip(ticks, boxes, strict=True):
        rewards = [s.reward for s in traj.scored() if s.action.get("algo") == label and math.isfinite(s.reward)]
        assert box == (x, HALF, *box_stats(rewards))
    assert any(math.isinf(s.reward) and s.action.get("algo") for s in traj.scored())  # one was left out


def test_knobs_that_first_appear_in_a_later_chunk_are_listed_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = TrajectoryWriter(tmp_path, ())
    for n in range(1, 41):  # a new knob at steps 9, 17 and 30: chunks of 8 rows without one take the shortcut
        action = {
            "a": n,
            **({"z": 1} if n >= 9 else {}),
            **({"b": 2} if n >= 17 else {}),
            **({"c": 3} if n == 30 else {}),
        }
        writer.append(step=n, episode=1, action=action, reward=1.0, observation=[1.0], status="ok", elapsed_s=0.1,
                      env={}, reason="")  # fmt: skip
    writer.close()
    monkeypatch.setattr(trajectory, "CHUNK_ROWS", 8)
    traj = read_trajectory(tmp_path / "trajectory.csv")
    steps = read_steps_row_by_row(tmp_path / "trajectory.csv", [])
    assert traj.knobs == list(dict.fromkeys(k for s in steps for k in s.action)) == ["a", "z", "b", "c"]
    assert [repr(s) for s in traj.steps] == [repr(s) for s in steps]


def test_the_best_step_is_worked_out_again_when_steps_change() -> None:
    traj = _trajectory(5)
    traj.steps = [s for s in traj.steps if math.isfinite(s.reward) or s.status == "failed"]  # no inf: one to beat
    first = traj.best()
    assert first is not None and traj.best() is first
    better = Step(81, 1, {"algo": "ring", "n": 8}, first.reward + 1, [0.0], "ok", 0.5, '{"algo":"ring","n":8}')
    traj.steps.append(better)
    assert traj.best() is better
    traj.steps = traj.steps[:-1]
    assert traj.best() is first
    assert traj.episodes == 1


def _repeating_file(path: Path) -> None:
    """trajectory.csv and env.csv with repeated cells: actions as cloudai writes them and (in the second half)
    with spaces and unsorted keys, observations of a few outcomes (null among them), env values 1, True, "x"."""
    rng = random.Random(9)
    actions = [{"algo": a, "n": n} for a in ("ring", "tree") for n in (1, 2.5)]
    outcomes = ["[1.5,null]", "[2.0,3.0]", "[]", "[-0.0,1]"]
    rows, env_rows = [], []
    for n in range(1, 61):
        action = rng.choice(actions)
        text = json.dumps(action, sort_keys=True, separators=(",", ":"))
        if n > 30 and rng.random() < 0.5:
            text = json.dumps(dict(reversed(action.items())))
        status = rng.choice(["ok", "ok", "cached", "failed"])
        rows.append([n, 1, text, rng.choice(["1.5", "", "-0.0"]), rng.choice(outcomes), status, 0.5, ""])
        env_rows.append([n, rng.choice(["0.5", "0.25"]), rng.choice(["1", "true", "x", ""]), rng.choice(["2", "3"])])
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["step", "episode", "action", "reward", "observation", "status", "elapsed_s", "reason"])
        writer.writerows(rows)
    with (path.parent / "env.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([["step", "load", "mode", "k"], *env_rows])


@pytest.mark.parametrize("chunk", [3, 16, 4096])
def test_repeated_cells_read_once_give_each_row_own_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    path = tmp_path / "trajectory.csv"
    _repeating_file(path)
    rows = read_steps_row_by_row(path, [])
    assert len({s.key for s in rows}) == 4 and len({json.dumps(s.observation) for s in rows}) == 4
    assert [s.key for s in rows] == [trajectory.action_key(s.action) for s in rows]  # spaces: keys re-encoded
    monkeypatch.setattr(trajectory, "CHUNK_ROWS", chunk)
    traj = read_trajectory(path)
    assert [repr(s) for s in traj.steps] == [repr(s) for s in rows]
    for column in ("status", "observation"):  # one object per distinct cell of a chunk
        values = [getattr(s, column) for s in traj.steps[:chunk]]
        assert len({id(v) for v in values}) == len({json.dumps(v) for v in values}), column
    env_csv.read_env(path.parent / "env.csv", traj)
    expected = [{"load": float(r[1]), "mode": {"1": 1, "true": True, "x": "x", "": None}[r[2]], "k": int(r[3])}
                for r in list(csv.reader((path.parent / "env.csv").open()))[1:]]  # fmt: skip
    assert repr([s.env for s in traj.steps]) == repr(expected)
    assert len({id(s.env) for s in traj.steps}) == len(traj.steps)  # each step its own env dict


@pytest.mark.parametrize("regimes_seen", [0, 1, 3])
def test_pair_means_and_worst_regime_are_those_of_each_step(regimes_seen: int) -> None:
    """``regime_means``: each (regime, configuration) pair's mean is ``fmean`` of its rewards (one reward: itself
    + 0.0), the worst regime mean is kept for the configurations measured in every regime (none without one)."""
    import numpy as np

    from cloudai.reports.regime_means import pair_means

    rng = random.Random(regimes_seen)
    steps = [(rng.randrange(regimes_seen) if regimes_seen else -1, rng.randrange(9),
              rng.choice([-0.0, 0.1, 0.2, 0.7, math.inf, rng.gauss(0, 1)])) for _ in range(200)]  # fmt: skip
    steps += [(r, 9, -0.0) for r in range(regimes_seen)]  # configuration 9: once in each regime, a -0.0
    regime, config, rewards = (np.array(column) for column in zip(*steps, strict=True))
    found = pair_means(regime.astype(np.intp), config.astype(np.intp), rewards.astype(np.float64), regimes_seen, 10)
    groups: dict[tuple[int, int], list[float]] = {}
    for r, c, value in steps:
        if r >= 0:
            groups.setdefault((r, c), []).append(value)
    for r in range(regimes_seen):
        codes, means = found.regime(r)
        expected = {c: fmean(v) for (g, c), v in sorted(groups.items()) if g == r}
        assert repr(dict(zip(codes.tolist(), means.tolist(), strict=True))) == repr(expected)
    worst = {c: min(fmean(v) for (_, k), v in groups.items() if k == c) for c in range(10)
             if regimes_seen and all((r, c) in groups for r in range(regimes_seen))}  # fmt: skip
    assert repr(found.worst(regimes_seen, 10)) == repr(worst)
    if regimes_seen:
        assert 9 in worst and found.mean_of(0, 99) is None


def test_a_long_box_and_its_groups_are_those_of_sorted_and_a_pass_per_label(monkeypatch: pytest.MonkeyPatch) -> None:
    """``box_stats`` sorts a long list of floats in numpy (stable: -0.0 and 0.0 keep their order, so a quartile
    that lands on one is the one ``sorted`` gives); ``plots_knobs._positions`` is each label's positions, labels in
    order of first appearance (a pass over the column per label)."""
    from cloudai.reports import plots_knobs

    rng = random.Random(3)
    for values in ([rng.choice([-0.0, 0.0, 1.5, rng.gauss(0, 1)]) for _ in range(2001)], [-0.0, 0.0] * 600):
        assert len(values) >= plots_knobs.SORT_IN_C
        assert repr(plots_knobs._sorted(values)) == repr(sorted(values))
        in_numpy = plots_knobs.box_stats(values)
        monkeypatch.setattr(plots_knobs, "SORT_IN_C", len(values) + 1)
        assert repr(in_numpy) == repr(plots_knobs.box_stats(values))
        monkeypatch.undo()
    labels = [rng.choice(["a", "b", "c", "1", "True"]) for _ in range(500)]
    by_pass = {label: [i for i, found in enumerate(labels) if found == label] for label in dict.fromkeys(labels)}
    assert plots_knobs._positions(labels) == by_pass
    assert list(plots_knobs._positions(labels)) == list(by_pass)


CANONICAL = ['{"algo":"ring","n":1}', '{"algo":"tree","n":2.5,"x":[{"a":1}]}', "{}", '{"s":"a b"}', '{"s":"\\u00e9"}']
SPLIT_ELSEWHERE = [  # each array reads as as many objects as there are cells, but not each cell's own
    ['{"a":[{"b":1}', '{"c":1}]}', '{"x":1},{"y":1}'],
    ['{"a":1} , {"b":2}', '{"c":[{"d":1}', '{"e":1}]}'],
]
NOT_CANONICAL = [
    '{"n": 1}',
    '{"n":1,"algo":"ring"}',
    '{"n":1.50}',
    '{"n":-0}',
    '{"s":"é"}',
    '{"n":1,"n":2}',
    '{"n":1e3}',
    '{"s":"},{"}',
    '{"x":[{"a":1},{"b":null}]}',
]  # the last two: canonical, but "},{" inside


def test_action_cells_read_as_one_array_only_when_that_is_each_cell_reading() -> None:
    from cloudai.reports.trajectory_cells import action_cells

    actions, keys = action_cells(CANONICAL)
    assert actions == [json.loads(t) for t in CANONICAL] and keys == CANONICAL
    assert next(iter(actions[0])) is next(iter(actions[1])) == "algo"  # one key string for the chunk
    for cells in SPLIT_ELSEWHERE:
        with pytest.raises(ValueError):
            action_cells(cells)  # the cell-by-cell reading: not JSON, so the chunk is read row by row
    for text in NOT_CANONICAL:
        cells = [CANONICAL[0], text, CANONICAL[1]]
        actions, keys = action_cells(cells)
        assert actions == [json.loads(t) for t in cells] and keys is None, text


@pytest.mark.parametrize("seed", [1, 2])
def test_an_envelope_keeps_each_bin_first_lowest_and_highest(seed: int) -> None:
    """``thin.envelope_index`` finds a bin's extremes by ``min``/``max`` of its slice and ``index``: the positions
    ``min(rows, key=ys.__getitem__)`` gives, on ties, -0.0 beside 0.0, shared float objects and NaN."""
    from cloudai.reports.thin import envelope_index

    rng = random.Random(seed)
    shared = 0.5
    ys = [rng.choice([rng.gauss(0, 1), -0.0, 0.0, 1.0, shared, math.nan]) for _ in range(5003)]
    ys[:3] = [math.nan, shared, -0.0]
    bins, limit = 1500 // 4, 1500
    keep = set(range(0, len(ys), -(-len(ys) // (limit - 2 * bins))))
    for b in range(bins):
        rows = range(len(ys) * b // bins, len(ys) * (b + 1) // bins)
        keep |= {min(rows, key=ys.__getitem__), max(rows, key=ys.__getitem__)}
    assert envelope_index(ys, limit) == sorted(keep)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_best_so_far_by_columns_is_that_of_each_step_in_turn(seed: int) -> None:
    """The long run's best-so-far line (numpy columns) equals the step-by-step one: the first scored step sets it
    even at -inf, ties keep the earliest (-0.0 before 0.0), +inf stays, NaN before any scored step, time spent
    skips non-finite durations (a -0.0 one sums to 0.0)."""
    rng = random.Random(seed)
    traj = _trajectory(seed)
    for s in traj.steps[:3]:
        s.status, s.scored = "failed", False  # no best yet: NaN, no setter
    traj.steps[3].reward, traj.steps[3].status, traj.steps[3].scored = -math.inf, "ok", True
    for s in traj.steps:
        s.elapsed_s = rng.choice([0.5, -0.0, 0.0, math.nan, math.inf, rng.random()])
    traj.steps[0].elapsed_s = -0.0
    columns = plots._best_changes_columns(traj.steps)
    one_by_one = plots._best_changes(traj)  # 80 steps: the step-by-step path
    assert len(traj.steps) < plots.COLUMNS_FROM
    assert columns[0] == one_by_one[0] and columns[2] == one_by_one[2]
    assert list(map(repr, columns[1])) == list(map(repr, one_by_one[1]))  # NaN and the sign of zero too
    assert list(map(repr, columns[3])) == list(map(repr, one_by_one[3]))
    assert math.isnan(columns[1][0]) and columns[2][0] is None and columns[1][1] == -math.inf


@pytest.mark.parametrize(("low", "high", "count"), [(0.0, 1.0, 3), (5.0, 25.0, 3), (-2.5, 7.0, 4), (0.1, 0.3, 3)])
def test_range_labels_by_columns_are_each_value_label(low: float, high: float, count: int) -> None:
    """A range param's floats labelled by numpy columns get ``RegimeBins.label`` of each: at and next to every
    edge, below and above the range, -0.0; a log scale and a list param are left to ``label``."""
    bins = RegimeBins(low=low, high=high, count=count)
    rng = random.Random(count)
    edges = [low + (high - low) * i / count for i in range(count + 1)]
    values = [rng.uniform(low - 1, high + 1) for _ in range(500)] + [-0.0, 0.0, low - 1e9, high + 1e9]
    values += [v for e in edges for v in (e, math.nextafter(e, -math.inf), math.nextafter(e, math.inf))]
    assert bins.label_floats(values) == list(map(bins.label, values))
    assert RegimeBins(low=0.1, high=10.0, log=True).label_floats(values) is None
    assert RegimeBins(candidates=("0.0", "0.5")).label_floats(values) is None
    many = values * 2 + [None] * 3
    assert regimes_module._labels(many, bins.label, bins) == [None if v is None else bins.label(v) for v in many]
