"""Issue 15: results a user can trust. Resume refuses an edited test, seeded parallel runs repeat,
sweeps say why they stop short, warm start and ``enqueue`` (all through the real CLI and jobs)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.dse.conftest import Case, invoke

GRID = """name = "x"
test_template_name = "BashCmd"
agent_metrics = ["default"]
agent_reward_function = "identity"
[cmd_args]
cmd = "{model}"
x = [0, 1, 2]
y = 1
"""

# Trials of random duration (0-0.08 s): completion order differs between two runs.
RANDOM_DURATION = """name = "x"
test_template_name = "BashCmd"
agent = "optuna"
agent_steps = 12
agent_metrics = ["default"]
agent_reward_function = "identity"
agent_config = { seed = 7, max_parallel = 4, n_startup_trials = 4 }
[cmd_args]
cmd = "sleep 0.0$((RANDOM % 9)) && {model}"
x = { low = -5.0, high = 5.0 }
y = { low = -5.0, high = 5.0 }
"""


def test_resume_after_an_edit_is_refused_naming_the_change(case: Callable[..., Case]) -> None:
    c = case(GRID)
    assert invoke(c.args()).exit_code == 0
    run_dir = c.run_dir()
    before = (c.iteration_dir() / "trajectory.csv").read_text()
    (c.tests / "x.toml").write_text((c.tests / "x.toml").read_text().replace("y = 1", "y = 2"))
    result = invoke([*c.args(), "--resume", str(run_dir)])
    assert result.exit_code == 2, result.output
    assert "Tests[0] 't': cmd_args.y: 1 -> 2" in result.output
    assert "undo the edit" in result.output and f"--warm-start {run_dir.resolve()}" in result.output
    assert "Traceback" not in result.output
    assert (c.iteration_dir() / "trajectory.csv").read_text() == before  # nothing written


def test_resume_after_shortening_a_list_is_refused(case: Callable[..., Case]) -> None:
    c = case(GRID)
    assert invoke(c.args()).exit_code == 0
    (c.tests / "x.toml").write_text((c.tests / "x.toml").read_text().replace("x = [0, 1, 2]", "x = [0, 1]"))
    result = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert result.exit_code == 2 and "cmd_args.x: [0, 1, 2] -> [0, 1]" in result.output


def test_raising_agent_steps_extends_a_finished_study(case: Callable[..., Case]) -> None:
    c = case(GRID.replace("agent_metrics", 'agent = "random_search"\nagent_steps = 2\nagent_metrics'))
    assert invoke(c.args()).exit_code == 0
    assert len(c.trajectory()) == 2
    (c.tests / "x.toml").write_text((c.tests / "x.toml").read_text().replace("agent_steps = 2", "agent_steps = 3"))
    result = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(a)["x"] for a in c.trajectory().action) == [0, 1, 2]


def test_seeded_parallel_runs_repeat_whatever_the_timing(case: Callable[..., Case]) -> None:
    c = case(RANDOM_DURATION)
    actions = []
    for _ in range(2):
        assert invoke(c.args()).exit_code == 0
        actions.append(list(c.trajectory().action))
        shutil.rmtree(c.out)
    assert len(actions[0]) == 12
    assert actions[0] == actions[1]


def test_grid_smaller_than_agent_steps_says_so(case: Callable[..., Case]) -> None:
    c = case(GRID.replace("agent_metrics", "agent_steps = 5\nagent_metrics"))
    dry = invoke(c.args("dry-run"))
    assert dry.exit_code == 0 and "agent_steps = 5, but the grid has 3 point(s)" in dry.output
    shutil.rmtree(c.out)
    result = invoke(c.args())
    assert result.exit_code == 0
    assert "agent_steps = 5, but the grid has 3 point(s)" in result.output
    assert "stopped after 3 of 5 step(s)" in result.output and "the grid has 3 point(s), all tried" in result.output


def test_enqueued_points_run_first(case: Callable[..., Case]) -> None:
    test = RANDOM_DURATION.replace("n_startup_trials = 4", "n_startup_trials = 4, enqueue = [{ x = 2.0, y = 1.0 }]")
    c = case(test.replace("agent_steps = 12", "agent_steps = 3"))
    assert invoke(c.args()).exit_code == 0
    frame = c.trajectory()
    assert json.loads(frame.action[0]) == {"x": 2.0, "y": 1.0} and frame.reward[0] == 10.0
    shutil.rmtree(c.out)
    dry = invoke(c.args("dry-run"))
    assert dry.exit_code == 0 and 'step 1: {"x": 2.0, "y": 1.0}' in dry.output


def test_warm_start_tells_the_matching_trials_and_counts_the_rest(case: Callable[..., Case], tmp_path: Path) -> None:
    c = case(
        RANDOM_DURATION.replace("max_parallel = 4", "max_parallel = 1").replace("agent_steps = 12", "agent_steps = 6")
    )
    assert invoke(c.args()).exit_code == 0
    first = c.run_dir()
    inside = sum(0.0 <= json.loads(a)["x"] <= 5.0 for a in c.trajectory().action)
    (c.tests / "x.toml").write_text(
        (c.tests / "x.toml").read_text().replace("x = { low = -5.0, high = 5.0 }", "x = { low = 0.0, high = 5.0 }")
    )
    c2 = Case(tmp_path / "second")
    c2.root.mkdir()
    shutil.copytree(c.tests, c2.tests)
    shutil.copy(c.scenario, c2.scenario)
    result = invoke([*c2.args(), "--warm-start", str(first)])
    assert result.exit_code == 0, result.output
    told = f"{inside} earlier trial(s) told to the agent"
    assert told in result.output
    if inside < 6:
        assert f"{6 - inside} skipped" in result.output
    assert len(c2.trajectory()) == 6  # a new run: its own steps only


def test_warm_start_from_a_dir_that_is_not_a_run_is_bad_input(case: Callable[..., Case], tmp_path: Path) -> None:
    c = case(GRID)
    result = invoke([*c.args(), "--warm-start", str(tmp_path)])
    assert result.exit_code == 2 and "--warm-start" in result.output and "no run.json" in result.output
    assert not c.out.exists()


def test_confirm_re_runs_the_top_candidates_as_real_jobs(case: Callable[..., Case]) -> None:
    """``confirm = 2`` on a deterministic grid: each re-run is a job (not a cache hit), marked in confirm.csv."""
    test = GRID.replace("agent_metrics", "agent_config = { confirm = 2, confirm_repeats = 2 }\nagent_metrics")
    c = case(test.replace('cmd = "{model}"', 'cmd = "sleep 0.0$((RANDOM % 5)) && {model}"'))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    frame = c.trajectory()
    assert list(frame.step) == [1, 2, 3, 4, 5, 6, 7] and set(frame.status) == {"ok"}
    confirm = (c.iteration_dir() / "confirm.csv").read_text().splitlines()
    assert confirm == ["step,candidate,draw,action", '4,1,0,"{""x"": 2}"', '5,2,0,"{""x"": 1}"',
                       '6,1,1,"{""x"": 2}"', '7,2,1,"{""x"": 1}"']  # fmt: skip
    assert [int(d.name) for d in c.job_dirs()] == [1, 2, 3, 4, 5, 6, 7]
    line = 'candidate 1: confirmed: mean 10 ± 0 (95 % CI, n=2); action {"x": 2}'
    assert (
        f"recommended default: {line}" in result.output
        and "search: best of 3 step(s) is step 3: default 10 (a single measurement)" in result.output
    )
    best = (c.iteration_dir() / "best.toml").read_text()
    assert best.startswith(f"# Recommended (best.toml is it): {line}")
    report = (c.run_dir() / "report.html").read_text()
    assert "Recommended (best.toml): candidate 1: confirmed: mean 10 ± 0 (95 % CI, n=2)" in report


def test_raising_agent_steps_after_confirmation_searches_on(case: Callable[..., Case]) -> None:
    """Confirmation steps do not count toward agent_steps: a resumed, extended study searches the full count."""
    fields = 'agent = "random_search"\nagent_steps = 2\nagent_config = { confirm = 1, confirm_repeats = 2 }\n'
    test = GRID.replace("x = [0, 1, 2]", "x = [0, 1, 2, 3, 4, 5]").replace("agent_metrics", fields + "agent_metrics")
    c = case(test)
    assert invoke(c.args()).exit_code == 0
    assert len(c.trajectory()) == 4
    (c.tests / "x.toml").write_text((c.tests / "x.toml").read_text().replace("agent_steps = 2", "agent_steps = 4"))
    result = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert result.exit_code == 0, result.output
    confirm_steps = {
        int(line.split(",")[0]) for line in (c.iteration_dir() / "confirm.csv").read_text().splitlines()[1:]
    }
    search = [s for s in c.trajectory().step if s not in confirm_steps]
    assert len(search) == 4 and {3, 4} <= confirm_steps
    assert "recommended default: candidate 1: confirmed" in result.output


SYSTEM = 'name = "here"\nscheduler = "standalone"\n[global_env_vars]\nNCCL_ALGO = "{algo}"\n'


def test_resume_names_a_changed_system_knob_and_allows_run_only_settings(case: Callable[..., Case]) -> None:
    c = case(GRID.replace("agent_metrics", "agent_config = { max_parallel = 1 }\nagent_metrics"))
    system = c.root / "system.toml"
    system.write_text(SYSTEM.format(algo="ring"))
    assert invoke([*c.args(), "--system-config", str(system)]).exit_code == 0
    system.write_text(SYSTEM.format(algo="tree"))
    result = invoke([*c.args(), "--system-config", str(system), "--resume", str(c.run_dir())])
    assert result.exit_code == 2 and 'system.global_env_vars.NCCL_ALGO: "ring" -> "tree"' in result.output
    system.write_text(SYSTEM.format(algo="ring"))  # undo; parallelism and confirmation may change on a resume
    test = (c.tests / "x.toml").read_text().replace("max_parallel = 1", "max_parallel = 2, confirm = 1")
    (c.tests / "x.toml").write_text(test)
    result = invoke([*c.args(), "--system-config", str(system), "--resume", str(c.run_dir())])
    assert result.exit_code == 0, result.output
