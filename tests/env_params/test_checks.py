"""Every env_params validation rule: the file, the TOML field and a message that says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cloudai.agents import AGENTS
from cloudai.cli import cli
from cloudai.config.scenario import load_scenario
from cloudai.config.test import load_tests
from cloudai.errors import ConfigError, Problem
from cloudai.plan.env_param_checks import check_env_params
from cloudai.space import entry_knobs, parse_space

HEAD = """name = "x"
test_template_name = "Synthetic"
agent = "{agent}"
agent_steps = 5
[cmd_args]
algo = ["ring", "tree"]
message_size = 1024
background_load = [0.0, 0.5, 0.9]
jitter = {{ low = 0.0, high = 0.3 }}
"""
SCENARIO = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n'


def problems(tmp_path: Path, tail: str, *, agent: str = "optuna", scenario: str = SCENARIO) -> list[Problem]:
    """Load a test (HEAD + tail) and scenario as the CLI does, then run the env_params checks."""
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "x.toml").write_text(HEAD.format(agent=agent) + tail)
    (tmp_path / "s.toml").write_text(scenario)
    try:
        entry = load_scenario(tmp_path / "s.toml", load_tests(tmp_path / "tests")).entries[0]
    except ConfigError as exc:
        return exc.problems
    space = parse_space(entry_knobs(entry.cmd_args, entry.extra_env_vars, entry.num_nodes))
    return check_env_params(entry, space, AGENTS.get(entry.agent.name))


def one(found: list[Problem]) -> Problem:
    assert len(found) == 1, found
    return found[0]


def test_valid_declarations_pass(tmp_path: Path) -> None:
    tail = "[env_params.background_load]\nweights = [0.5, 0.3, 0.2]\n[env_params.jitter]\ndistribution = 'normal'\n"
    assert problems(tmp_path, tail + "mean = 0.1\nstd = 0.05\n") == []
    assert problems(tmp_path, "[env_params.background_load]\n[env_params.jitter]\n") == []


def test_unknown_field(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.backgroud_load]\n"))
    assert p.file == str(tmp_path / "s.toml") and p.field == "Tests[0].env_params.backgroud_load"
    assert "no cmd_args.backgroud_load" in p.message and "background_load" in (p.hint or "")


def test_scalar_cmd_arg(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.message_size]\n"))
    assert p.field == "Tests[0].cmd_args.message_size" and "scalar 1024" in p.message and "list" in (p.hint or "")


@pytest.mark.parametrize("weights", ["[0.5, 0.5]", "[1, 1, 1, 1]"])
def test_weights_length(tmp_path: Path, weights: str) -> None:
    p = one(problems(tmp_path, f"[env_params.background_load]\nweights = {weights}\n"))
    assert p.field == "Tests[0].env_params.background_load.weights" and "3 candidate(s)" in p.message


@pytest.mark.parametrize(("weights", "message"), [("[0.5, -0.1, 0.6]", "negative"), ("[0, 0, 0]", "all be zero")])
def test_bad_weights_are_refused_at_load(tmp_path: Path, weights: str, message: str) -> None:
    p = one(problems(tmp_path, f"[env_params.background_load]\nweights = {weights}\n"))
    assert p.file == str(tmp_path / "tests" / "x.toml") and p.field == "env_params.background_load.weights"
    assert message in p.message


def test_distribution_on_a_list(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.background_load]\ndistribution = 'uniform'\n"))
    assert p.field == "Tests[0].env_params.background_load.distribution" and "weights" in (p.hint or "")


def test_weights_on_a_range(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.jitter]\nweights = [1, 2]\n"))
    assert p.field == "Tests[0].env_params.jitter.weights" and "is a range" in p.message


@pytest.mark.parametrize("given", ["", "mean = 0.1\n", "std = 0.1\n"])
def test_normal_needs_mean_and_std(tmp_path: Path, given: str) -> None:
    p = one(problems(tmp_path, f"[env_params.jitter]\ndistribution = 'normal'\n{given}"))
    assert p.field == "env_params.jitter" and "needs both mean and std" in p.message


def test_mean_without_normal(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.jitter]\nmean = 0.1\n"))
    assert p.field == "env_params.jitter" and "only to distribution = 'normal'" in p.message


def test_normal_mean_outside_the_range(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.jitter]\ndistribution = 'normal'\nmean = 0.5\nstd = 0.1\n"))
    assert p.field == "Tests[0].env_params.jitter.mean" and "outside" in p.message


def test_loguniform_needs_a_positive_low(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.jitter]\ndistribution = 'loguniform'\n"))
    assert p.field == "Tests[0].env_params.jitter.distribution" and "low > 0" in p.message


def test_unknown_spec_key(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.jitter]\ndistrib = 'uniform'\n"))
    assert p.field == "env_params.jitter.distrib"


def test_agent_that_does_not_sample(tmp_path: Path) -> None:
    p = one(problems(tmp_path, "[env_params.background_load]\n", agent="grid_search"))
    assert p.field == "Tests[0].env_params" and "'grid_search' does not sample env_params" in p.message
    assert "bandit, optuna, random_search" in p.message


def test_a_table_whose_leaves_the_agent_sweeps(tmp_path: Path) -> None:
    """A knob is either sampled or swept (declaring it removes it from the action space); a table can be both."""
    p = one(problems(tmp_path, "[cmd_args.nccl]\nproto = ['ll', 'simple']\nthreads = 4\n[env_params.nccl]\n"))
    assert p.field == "Tests[0].env_params.nccl" and "swept by the agent: nccl.proto" in p.message
    assert '[env_params."nccl.proto"]' in (p.hint or "")


def test_a_dotted_leaf_is_a_knob(tmp_path: Path) -> None:
    assert problems(tmp_path, "[cmd_args.nccl]\nproto = ['ll', 'simple']\n[env_params.'nccl.proto']\n") == []


def test_num_nodes_is_not_an_env_param(tmp_path: Path) -> None:
    scenario = SCENARIO + "num_nodes = [1, 2]\n[Tests.env_params.num_nodes]\n"
    p = one(problems(tmp_path, "", scenario=scenario))
    assert p.field == "Tests[0].env_params.num_nodes" and "cmd_args only" in p.message


def test_entry_env_params_replace_the_tests(tmp_path: Path) -> None:
    scenario = SCENARIO + "[Tests.env_params.algx]\n"
    p = one(problems(tmp_path, "[env_params.background_load]\n", scenario=scenario))
    assert p.field == "Tests[0].env_params.algx" and "algo" in (p.hint or "")


def test_every_problem_at_once(tmp_path: Path) -> None:
    tail = "[env_params.nope]\n[env_params.message_size]\n[env_params.jitter]\nweights = [1]\n"
    found = problems(tmp_path, tail, agent="grid_search")
    assert [p.field for p in found] == [
        "Tests[0].env_params",
        "Tests[0].env_params.nope",
        "Tests[0].cmd_args.message_size",
        "Tests[0].env_params.jitter.weights",
    ]


def test_the_cli_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    problems(tmp_path, "[env_params.background_load]\nweights = [1, 2]\n")
    out = tmp_path / "out"
    args = ["--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "s.toml", "--output-dir", out]
    result = CliRunner().invoke(cli, ["run", *map(str, args)])
    assert result.exit_code == 2, result.output
    assert "x.toml: env_params.background_load.weights" in result.output and "2 weight(s)" in result.output
    assert not out.exists() or not any(out.iterdir())
