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
