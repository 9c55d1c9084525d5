"""A report's cost stays bounded at any run length: what its charts draw of a long run, and that the page says so."""

from __future__ import annotations

import csv
import gc
import json
import math
import random
from pathlib import Path

import pytest
from tests.reports.report_builders import TRAJECTORY_HEADER, entry, parse, write_manifest

from cloudai.errors import ConfigError
from cloudai.reports import generate_report
from cloudai.reports.chartdata import Rows
from cloudai.reports.pareto import pareto_indices
from cloudai.reports.plots_knobs import JITTER, MAX_CATEGORIES, box_stats, categorical, numeric
from cloudai.reports.plots_measure import pareto
from cloudai.reports.thin import MAX_POINTS, changes, envelope, even
from cloudai.reports.trajectory import Step


def test_envelope_keeps_the_lowest_and_highest_point_of_every_bin() -> None:
    rng = random.Random(1)
    points = [(float(x), rng.gauss(0, 1) + (8.0 if x == 4321 else 0.0)) for x in range(10_000)]
    kept = envelope(points, limit=100)

    assert len(kept) <= 100
    assert [x for x, _ in kept] == sorted(x for x, _ in kept)  # still in step order
    assert (4321.0, points[4321][1]) in kept  # a lone outlier survives
    for b in range(25):  # limit // 4 bins
        chunk = points[len(points) * b // 25 : len(points) * (b + 1) // 25]
        assert min(chunk, key=lambda p: p[1]) in kept and max(chunk, key=lambda p: p[1]) in kept


def test_short_series_are_drawn_whole() -> None:
    points = [(float(x), float(x % 7)) for x in range(MAX_POINTS)]
    assert envelope(points) == points and even(points) == points
    assert len(even(list(range(10 * MAX_POINTS)))) <= MAX_POINTS


def test_changes_draws_the_same_step_line() -> None:
    xs = list(range(1, 13))
    ys = [math.nan, math.nan, 1.0, 1.0, 1.0, 2.5, 2.5, 2.5, 2.5, 3.0, 3.0, 3.0]
    kx, ky = changes(xs, ys)

    assert len(kx) == 5  # first, 1.0, 2.5, 3.0, last
    for x, y in zip(xs, ys, strict=True):  # where="post": each point holds until the next
        held = ky[max(i for i, k in enumerate(kx) if k <= x)]
        assert held == y or (math.isnan(held) and math.isnan(y))


def write_wide(run: Path, steps: int, categories: int) -> Path:
    """An agent run whose ``variant`` knob takes ``categories`` values, every step ok."""
    write_manifest(run, [entry("Tests.1", agent="optuna")], scenario="wide")
    it_dir = run / "Tests.1" / "0"
    it_dir.mkdir(parents=True)
    with (it_dir / "trajectory.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(TRAJECTORY_HEADER)
        for step in range(1, steps + 1):
            action = {"variant": f"v{step % categories}", "threads": 2 ** (step % 8)}
            reward = float(step % 13)
            writer.writerow([step, 1, json.dumps(action), reward, json.dumps([reward]), "ok", 1.0])
    return run


def test_the_page_says_when_a_long_run_is_drawn_as_its_outline(tmp_path: Path) -> None:
    long_run = parse(generate_report([write_wide(tmp_path / "long", MAX_POINTS + 1, 3)]))
    short_run = parse(generate_report([write_wide(tmp_path / "short", MAX_POINTS, 3)]))

    outline = f"a longer series is drawn as the lowest and highest point of each of {MAX_POINTS // 4} step bins"
    assert outline in long_run.all_text
    assert "Plots against step" not in short_run.all_text


def test_the_page_says_which_values_of_a_wide_categorical_knob_are_drawn(tmp_path: Path) -> None:
    page = parse(generate_report([write_wide(tmp_path / "wide", 300, 150)]))

    assert "variant: the 20 most often tried of its 150 values are drawn." in page.all_text
    assert "threads:" not in page.all_text  # 8 values: every one drawn, nothing to say


def test_a_failed_report_gives_the_garbage_collector_back(tmp_path: Path) -> None:
    assert gc.isenabled()
    with pytest.raises(ConfigError):
        generate_report([tmp_path / "missing"])
    assert gc.isenabled()
    gc.disable()
    try:
        generate_report([write_wide(tmp_path / "run", 20, 3)])
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


def steps_of(rewards: list[float], knob: list[object] | None = None) -> list[Step]:
    """Scored steps 1.. with these rewards (and knob ``k`` set to ``knob[i]``)."""
    pairs = enumerate(zip(rewards, knob or [None] * len(rewards), strict=True))
    return [Step(i + 1, 1, {"k": v}, r, [r], "ok", 1.0, json.dumps({"k": v})) for i, (r, v) in pairs]


@pytest.mark.parametrize("objectives", [2, 3])
def test_the_pareto_chart_of_a_long_run_draws_its_front_and_a_sample_of_the_rest(objectives: int) -> None:
    rng = random.Random(0)
    points = [[rng.random() for _ in range(objectives)] for _ in range(3 * MAX_POINTS)]
    steps = steps_of([p[0] for p in points])
    rows = Rows("r", [], [f"m{i}" for i in range(objectives)], "reward")
    front = set(pareto_indices(points, ["max"] * objectives))

    chart = pareto(rows, steps, points, list(range(objectives)), [f"m{i}" for i in range(objectives)],
                   ["max"] * objectives)  # fmt: skip

    grey, red = chart["series"]
    assert sorted(red["rows"]) == sorted(rows.refs(steps[i] for i in front))  # the whole front
    assert len(grey["rows"]) <= MAX_POINTS  # an even sample of the dominated, and the title says so
    assert f"an even sample of the {len(points) - len(front)} dominated points is drawn" == chart["title"]
    assert len(rows) == len(grey["rows"]) + len(front)  # the table holds only what is drawn
    assert chart.get("kind") == (None if objectives == 2 else "parallel")


def test_a_log_knob_is_drawn_on_a_log_axis_from_its_own_column() -> None:
    rows = Rows("r", ["k"], [], "reward")
    chart = numeric(rows, steps_of([0.0, 1.0, 2.0], [10.0, 100.0, 1000.0]), "knob:0", log=True)

    assert chart["xlog"] is True
    ((series),) = chart["series"]
    assert (series["x"], series["y"]) == ("knob:0", "reward")
    assert rows.table()["cols"]["knob:0"] == [10.0, 100.0, 1000.0]


def test_a_wide_categorical_knob_draws_its_most_tried_values_from_every_point() -> None:
    pairs = [(f"v{i}", float(r)) for i in range(50) for r in range(60 - i)]  # v0 tried most, each with rewards 0..
    steps = steps_of([r for _, r in pairs], [v for v, _ in pairs])
    rows = Rows("r", ["k"], [], "reward")

    chart, shown, of = categorical(rows, steps, [str(s.action["k"]) for s in steps])

    assert (shown, of) == (MAX_CATEGORIES, 50)
    assert [t[1] for t in chart["ticks"]] == [f"v{i}" for i in range(MAX_CATEGORIES)]
    assert [b[4] for b in chart["boxes"]] == [(59 - i) / 2 for i in range(MAX_CATEGORIES)]  # medians of all points
    ((series),) = chart["series"]
    assert all(abs(x - round(x)) <= JITTER for x in series["xs"])  # each point beside its own box


def test_boxes_are_tukeys_as_matplotlib_drew_them() -> None:
    import numpy as np

    rng = random.Random(3)
    for n in (1, 2, 5, 40):
        values = [rng.gauss(0, 1) for _ in range(n)] + ([9.0] if n > 5 else [])  # an outlier past the whisker
        q1, med, q3 = np.percentile(values, [25, 50, 75])
        inside = [v for v in values if q1 - 1.5 * (q3 - q1) <= v <= q3 + 1.5 * (q3 - q1)]
        assert box_stats(values) == pytest.approx((q1, q3, med, min(min(inside), q1), max(max(inside), q3)))
