"""Agent-driven entries are checked before anything is written: exit 2, the file and field named."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.dse.conftest import Case, invoke

BASE = """name = "x"
test_template_name = "BashCmd"
{fields}
[cmd_args]
cmd = "{model}"
{knobs}
"""


@pytest.mark.parametrize(
    ("fields", "knobs", "field", "message"),
    [
        ("agent_config = { max_paralel = 2 }", "x = [1, 2]", "x.toml: agent_config.max_paralel", "unknown field"),
        ("agent_config = { max_parallel = 0 }", "x = [1, 2]", "x.toml: agent_config.max_parallel", "greater than"),
        ('agent = "optuna"\nagent_config = { n_startup_trials = "x" }', "x = [1, 2]",
         "x.toml: agent_config.n_startup_trials", "integer"),
        ("", "x = { low = 0, high = 1 }", "x.toml: cmd_args.x", "without grid_points"),
        ('agent = "random_search"', "x = { low = 0, high = 1 }", "x.toml: agent_steps", "needs agent_steps"),
        ('agent_reward_function = "inverted"', "x = [1, 2]", "x.toml: agent_reward_function", "unknown reward"),
        ('agent = "grid"', "x = [1, 2]", "x.toml: agent", "unknown agent"),
        ('agent_metrics = ["a", "a"]', "x = [1, 2]", "x.toml: agent_metrics", "twice"),
    ],
)  # fmt: skip
def test_bad_agent_entry(case: Callable[..., Case], fields: str, knobs: str, field: str, message: str) -> None:
    c = case(BASE.replace("{fields}", fields).replace("{knobs}", knobs))
    result = invoke(c.args())
    assert result.exit_code == 2, result.output
    assert field in result.output and message in result.output  # the test file is the one that is wrong
    assert "used by Tests[0] (id 't')" in result.output  # ... and the scenario entry that pulled it in
    assert not c.out.exists()


def test_grid_points_make_a_range_sweepable(case: Callable[..., Case]) -> None:
    c = case(
        BASE.replace("{fields}", "").replace("{knobs}", "x = { low = 0, high = 3, dtype = 'int', grid_points = 4 }")
    )
    result = invoke(c.args("dry-run"))
    assert result.exit_code == 0, result.output
    assert "4 grid points" in result.output


def test_mixed_scenario_names_both_kinds(case: Callable[..., Case]) -> None:
    scenario = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n[[Tests]]\nid = "p"\ntest_name = "x"\n'
    scenario += "  [Tests.cmd_args]\n  x = 1\n"
    c = case(BASE.replace("{fields}", "").replace("{knobs}", "x = [1, 2]"), scenario)
    result = invoke(c.args())
    assert result.exit_code == 2
    assert "agent-driven tests (t)" in result.output and "plain tests (p)" in result.output
    assert not c.out.exists()


def test_single_sbatch_with_live_rl_is_refused(case: Callable[..., Case]) -> None:
    c = case(
        BASE.replace("{fields}", "agent_steps = 3").replace(
            "{knobs}", 'live_rl_mode = true\nenv_class = "cloudai.gym.examples.ServingSim"'
        )
    )
    result = invoke(c.args("run", "--single-sbatch"))
    assert result.exit_code == 2, result.output
    assert "Tests[0].cmd_args.live_rl_mode" in result.output and "--single-sbatch" in result.output
    assert not c.out.exists()
