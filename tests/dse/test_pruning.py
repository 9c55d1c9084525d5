"""Pruning on the standalone system: a pruned trial's process group is gone and the step recorded ``pruned``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests.dse.conftest import Case, invoke

from cloudai.workloads.synthetic import Synthetic

PRUNING = """name = "x"
test_template_name = "Synthetic"
agent = "optuna"
agent_steps = 7
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
[agent_config]
seed = 0
n_startup_trials = 2
pruner = {{ type = "percentile", percentile = 10.0, n_startup_trials = 2, poll_s = 0.05 }}
[cmd_args]
duration_s = {duration}
progress_chunks = 10
message_size = [1048576, 268435456]
num_channels = [1, 2, 4, 8, 16]
algo = ["ring", "tree"]
"""


def check_pruned_run(c: Case, gone: Callable[[dict], bool]) -> pd.DataFrame:
    """Some step was pruned: recorded with its last intermediate value, its job cancelled and gone."""
    frame = c.trajectory()
    assert (frame.status != "cached").sum() == 7
    pruned = frame[frame.status == "pruned"]
    assert len(pruned) >= 1, frame[["step", "status", "reward"]]
    for row in pruned.to_dict("records"):
        job_dir = c.iteration_dir() / str(row["step"])
        job = json.loads((job_dir / "job.json").read_text())
        assert job["status"] == "cancelled" and job["reason"] == "pruned"
        assert gone(job)
        progress = Synthetic().progress(job_dir)
        assert 1 <= len(progress) < 10 and not (job_dir / "metrics.json").exists()  # stopped early
        seen = [value for _, value in progress]
        assert json.loads(row["observation"])[0] in seen  # its last intermediate value (judged then)
        assert row["reward"] == json.loads(row["observation"])[0]
    return frame


def _group_gone(job: dict) -> bool:
    try:
        os.killpg(int(job["job_id"]), 0)
    except ProcessLookupError:
        return True
    return False


def test_pruned_trials_are_stopped_and_recorded(case: Callable[..., Case]) -> None:
    c = case(PRUNING.format(duration=1.0))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    frame = check_pruned_run(c, _group_gone)
    assert f"{(frame.status == 'pruned').sum()} pruned" in result.output
    full = frame[frame.status == "ok"]
    for step in full.step:  # full trials ran every chunk
        assert len(Synthetic().progress(c.iteration_dir() / str(step))) == 10


def test_pruner_with_several_objectives_is_exit_2(case: Callable[..., Case]) -> None:
    test = PRUNING.format(duration=0).replace(
        'agent_metrics = ["bus_bw"]', 'agent_objectives = { bus_bw = "max", latency_us = "min" }'
    )
    result = invoke(case(test).args())
    assert result.exit_code == 2 and "agent_config.pruner" in result.output, result.output


def test_progress_reader_stops_at_a_torn_line(tmp_path: Path) -> None:
    (tmp_path / "progress.txt").write_text("1 10.5\n2 11\n3 1")
    assert Synthetic().progress(tmp_path) == [(1, 10.5), (2, 11.0)]
    assert Synthetic().progress(tmp_path / "missing") == []


@pytest.mark.parametrize("pruner", ["median", "percentile", "successive_halving", "hyperband"])
def test_every_pruner_type_builds(pruner: str) -> None:
    from cloudai.agents.optuna_pruners import PrunerConfig, build_pruner

    assert build_pruner(PrunerConfig(type=pruner)) is not None  # pyright: ignore[reportArgumentType]


def _first_line_verdict(config: dict[str, Any], strong: list[float], weak: list[float], last: float) -> bool:
    """Prune verdict on a trial whose first progress line is ``last``, after ``strong`` trials ran to the end
    and ``weak`` ones were stopped after their first line, under ``agent_config.pruner = config``."""
    import optuna

    from cloudai.agents.optuna_pruners import PrunerConfig, build_pruner

    study = optuna.create_study(direction="maximize", pruner=build_pruner(PrunerConfig.model_validate(config)))
    for value in [*strong, *weak]:
        trial = study.ask()
        trial.report(value, 1)
        trial.should_prune()  # successive halving records the trial at its first rung here
        if value in strong:
            study.tell(trial, value)
        else:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    trial = study.ask()
    trial.report(last, 1)
    return trial.should_prune()


def test_default_pruner_keeps_the_top_quarter_of_every_trial_at_a_rung() -> None:
    """The default (successive halving) ranks a trial among every trial that reached the same progress line,
    pruned ones included. Median ranks it among the finished ones only, which pruning leaves with the strong
    few: there a trial in the top quarter of all is still pruned."""
    strong, weak = [50.0, 52.0, 54.0], [float(v) for v in range(10, 19)]
    assert not _first_line_verdict({}, strong, weak, 51.0)  # 3rd of 13: in the top quarter
    assert _first_line_verdict({}, strong, weak, 49.0)  # 4th of 13: not
    assert _first_line_verdict({"type": "median", "n_startup_trials": 1}, strong, weak, 51.0)  # < median 52


def test_default_pruner_uses_optunas_reduction_factor() -> None:
    """Six trials at the first rung: Optuna's factor 4 keeps the best one; a factor of 3 (set) keeps two."""
    strong, weak = [10.0], [1.0, 2.0, 3.0, 4.0]
    assert _first_line_verdict({}, strong, weak, 9.0)
    assert not _first_line_verdict({}, strong, weak, 10.0)
    assert not _first_line_verdict({"reduction_factor": 3}, strong, weak, 9.0)
