"""The optuna agent's study: a journal file ``optuna.load_study`` opens, equal to trajectory.csv, rebuilt on resume."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.dse.conftest import Case, invoke

from cloudai.agents.optuna_storage import JOURNAL_FILE, fresh_storage, load_study, study_name

TEST = """name = "x"
test_template_name = "Synthetic"
agent = "optuna"
agent_steps = {steps}
agent_objectives = {{ bus_bw = "max", latency_us = "min" }}
agent_constraints = {{ latency_us = "<= 3000" }}
agent_config = {{ seed = 5, n_startup_trials = 3 }}
[cmd_args]
duration_s = 0
message_size = [1048576, 16777216, 268435456]
num_channels = [1, 2, 4, 8]
"""


def _same_trials(c: Case) -> None:
    frame = c.trajectory()
    study = load_study(c.iteration_dir())
    trials = sorted(study.trials, key=lambda t: t.user_attrs["step"])
    assert [t.user_attrs["step"] for t in trials] == list(frame.step)
    assert [t.user_attrs["status"] for t in trials] == list(frame.status)
    assert [t.params for t in trials] == [json.loads(a) for a in frame.action]
    for trial, obs, status in zip(trials, frame.observation, frame.status, strict=True):
        bus_bw, latency = json.loads(obs)
        if status == "ok":
            assert trial.values == [bus_bw, latency]
        assert (trial.constraints["latency_us <= 3000"] > 0) == (latency > 3000)
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]


def test_load_study_gives_the_trajectory_and_the_summary_names_the_dashboard(case: Callable[..., Case]) -> None:
    c = case(TEST.format(steps=8))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    _same_trials(c)
    assert f"optuna-dashboard {(c.iteration_dir() / JOURNAL_FILE).resolve()}" in result.output


def test_resume_rebuilds_a_missing_study_from_the_trajectory(case: Callable[..., Case]) -> None:
    c = case(TEST.format(steps=5))
    assert invoke(c.args()).exit_code == 0
    (c.iteration_dir() / JOURNAL_FILE).unlink()
    c.tests.joinpath("x.toml").write_text(TEST.format(steps=9))
    result = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert result.exit_code == 0, result.output
    assert (c.trajectory().status != "cached").sum() == 9  # measurements: resume keeps agent_steps' meaning
    _same_trials(c)


def test_a_rebuild_killed_before_its_end_leaves_the_previous_journal_whole(case: Callable[..., Case]) -> None:
    """Issue 29 item 4: the journal is rebuilt beside the old one and renamed over it once the replay is done; a
    kill mid-replay (here: the rebuild never published) used to leave 0 of its trials."""
    import optuna

    c = case(TEST.format(steps=5))
    assert invoke(c.args()).exit_code == 0
    before = len(load_study(c.iteration_dir()).trials)
    assert before == len(c.trajectory())
    storage, publish = fresh_storage(c.iteration_dir())  # a resume starts its rebuild...
    study = optuna.create_study(storage=storage, study_name=study_name(c.iteration_dir()), directions=["maximize"])
    study.add_trial(optuna.trial.create_trial(params={}, distributions={}, value=1.0))  # ...replays one trial, dies
    assert len(load_study(c.iteration_dir()).trials) == before  # the old journal, whole
    publish()
    assert len(load_study(c.iteration_dir()).trials) == 1  # the rebuilt one, in its place
    assert not list(c.iteration_dir().glob(f"{JOURNAL_FILE}.new"))
