"""The routing rule (``plan.route.is_agent_driven``): which tests an agent runs, which run as plain jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from cloudai.errors import ConfigError
from cloudai.plan.load import Plan, load_plan

SYNTHETIC = 'test_template_name = "Synthetic"\nagent_steps = 2\n'
CASES = {
    "scalars": ('[cmd_args]\nalgo = "ring"\n', "", False),
    "a_list": ('[cmd_args]\nalgo = ["ring", "tree"]\n', "", True),
    "a_range": ("[cmd_args]\nchunk_kb = { low = 64, high = 512, grid_points = 3 }\n", "", True),
    "env_var_list": ('[extra_env_vars]\nNCCL_ALGO = ["a", "b"]\n', "", True),
    "num_nodes_list": ("", "num_nodes = [1, 2]\n", True),
    "live_rl": ('[cmd_args]\nlive_rl_mode = true\nenv_class = "cloudai.gym.examples.ServingSim"\n', "", True),
}


def _plan(tmp_path: Path, tests: dict[str, tuple[str, str]]) -> Plan:
    (tmp_path / "tests").mkdir()
    entries = []
    for i, (name, (test_body, entry_body)) in enumerate(tests.items()):
        (tmp_path / "tests" / f"t{i}.toml").write_text(f'name = "t{i}"\n{SYNTHETIC}{test_body}')
        entries.append(f'[[Tests]]\nid = "{name}"\ntest_name = "t{i}"\n{entry_body}')
    (tmp_path / "s.toml").write_text('name = "s"\n' + "".join(entries))
    return load_plan(None, tmp_path / "tests", tmp_path / "s.toml")


@pytest.mark.parametrize("case", list(CASES))
def test_route(tmp_path: Path, case: str) -> None:
    test_body, entry_body, agent_driven = CASES[case]
    plan = _plan(tmp_path, {case: (test_body, entry_body)})
    assert plan.checked[case].agent_driven is agent_driven


def test_mixed_scenario_names_both_kinds(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        _plan(tmp_path, {"plain": CASES["scalars"][:2], "swept": CASES["a_list"][:2]})
    message = str(raised.value)
    assert "plain" in message and "swept" in message


def test_dse_excluded_args_pass_a_list_whole(tmp_path: Path) -> None:
    """CloudAI's ``dse_excluded_args``: a list there is the value (a list of phases), not a knob to sweep."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(
        'name = "t"\ntest_template_name = "NcclTest"\ndse_excluded_args = ["cmd_args.phases"]\n'
        "[cmd_args]\nphases = [1, 2]\nstepfactor = [2, 4]\n[cmd_args.plan]\nsteps = [3, 4]\n"
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "a"\ntest_name = "t"\n'
                                     'dse_excluded_args = ["cmd_args.phases", "cmd_args.plan"]\n')  # fmt: skip
    checked = load_plan(None, tmp_path / "tests", tmp_path / "s.toml").checked["a"]
    assert [d.name for d in checked.space.dims] == ["stepfactor"]  # the scenario's list replaced the test's
    assert checked.space.fixed["phases"] == [1, 2] and checked.space.fixed["plan"] == {"steps": [3, 4]}


def test_dse_excluded_args_must_name_cmd_args(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(
        'name = "t"\ntest_template_name = "Sleep"\ndse_excluded_args = ["phases"]\n[cmd_args]\nseconds = 0\n'
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "a"\ntest_name = "t"\n')
    with pytest.raises(ConfigError) as caught:
        load_plan(None, tmp_path / "tests", tmp_path / "s.toml")
    assert "dse_excluded_args" in str(caught.value) and "'phases' is not a cmd_args path" in str(caught.value)
