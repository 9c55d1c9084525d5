"""The confirmation estimates (``cloudai.reports.confirm``): mean, Student-t 95 % CI, failures, winner."""

from __future__ import annotations

import math
from pathlib import Path

from cloudai.reports.confirm import (
    ConfirmRow,
    Estimate,
    estimates,
    read_confirm,
    t95,
    verdict_lines,
    winner,
    write_confirm,
)


def test_mean_and_student_t_interval() -> None:
    rows = [ConfirmRow(4, 1, {"x": 1}), ConfirmRow(5, 1, {"x": 1}), ConfirmRow(6, 1, {"x": 1})]
    (e,) = estimates(rows, {4: ("ok", 1.0), 5: ("ok", 2.0), 6: ("ok", 3.0)})
    assert e.n == 3 and e.mean == 2.0
    assert math.isclose(e.ci95, 4.303 / math.sqrt(3))
    assert "mean 2 ± 2.484 (95 % CI, n=3)" in e.text()


def test_failed_repeats_are_counted_not_averaged_and_unrecorded_steps_are_left_out() -> None:
    rows = [
        ConfirmRow(4, 1, {"x": 1}),
        ConfirmRow(5, 1, {"x": 1}),
        ConfirmRow(6, 1, {"x": 1}),
        ConfirmRow(7, 2, {"x": 0}),
    ]
    (e,) = estimates(rows, {4: ("ok", 5.0), 5: ("failed", -1.0), 6: ("ok", 7.0)})
    assert e.rewards == (5.0, 7.0) and e.failed == 1 and e.steps == (4, 5, 6)


def test_winner_is_the_highest_lower_bound_and_none_without_scores() -> None:
    """b's mean is higher, but its interval reaches below a's: a is the better bet (issue 28 item 3)."""
    a, b = Estimate(1, {"x": 1}, (5.0, 5.0)), Estimate(2, {"x": 2}, (6.0, 4.0, 9.0))
    assert winner([a, b]) is a
    assert verdict_lines([a, b], "GB/s")[0].startswith("candidate 2's mean 6.33333 is higher, but its CI spans ±")
    c = Estimate(3, {"x": 3}, (7.0, 7.0))  # a higher mean, measured as tightly: the winner, nothing to explain
    assert winner([a, b, c]) is c and verdict_lines([a, c]) == []
    assert winner([Estimate(1, {"x": 1}, (5.0,)), Estimate(2, {"x": 2}, (6.0,))]).candidate == 2  # n=1: the mean
    close = [Estimate(4, {"x": 4}, (5.0, 6.0, 5.5)), Estimate(5, {"x": 5}, (5.2, 5.8, 5.6))]
    assert verdict_lines(close) == [
        "not separable from candidate 4 at n=3 (the 95 % intervals overlap): "
        "raise agent_config.confirm_repeats to tell them apart"
    ]
    assert winner([Estimate(1, {"x": 1}, (), failed=3)]) is None
    assert t95(1) == 12.706 and t95(500) == 1.96


def test_a_candidate_whose_repeats_failed_more_often_never_wins_on_its_good_ones() -> None:
    """The aiconfigurator traffic example: tp4 bs64 broke TPOT in 4 of 6 draws, its 2 good ones 641.7 each (CI 0);
    tp8 bs64 failed once in 6. The robust answer is the second, whatever the first's bound."""
    fragile = Estimate(1, {"tp": 4}, (641.691, 641.691), failed=4)
    robust = Estimate(3, {"tp": 8}, (300.0, 420.0, 380.0, 390.0, 400.0), failed=1)
    assert fragile.failure_rate == 4 / 6 and robust.failure_rate == 1 / 6
    assert winner([fragile, robust]) is robust
    assert verdict_lines([fragile, robust], "tokens/s/GPU")[0] == (
        "candidate 1's mean 641.691 is higher, but 4 of its 6 repeats failed (1 of candidate 3's)"
    )
    assert winner([Estimate(1, {"x": 1}, (5.0, 5.0)), Estimate(2, {"x": 2}, (9.0, 9.0), failed=1)]).candidate == 1


def test_confirm_csv_round_trip_and_a_file_from_before_draws(tmp_path: Path) -> None:
    write_confirm(tmp_path, [ConfirmRow(9, 2, {"b": "y"}, 0), ConfirmRow(8, 1, {"a": 1.5}, 0)])
    assert read_confirm(tmp_path) == [(8, 1, {"a": 1.5}, 0), (9, 2, {"b": "y"}, 0)]
    (tmp_path / "confirm.csv").write_text('step,candidate,action\n8,1,"{""a"": 1}"\n')
    assert read_confirm(tmp_path) == [(8, 1, {"a": 1}, -1)]
