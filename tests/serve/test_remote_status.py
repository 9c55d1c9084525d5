"""A trial's status crosses the wire: a ``constraint`` step on ``cloudai serve`` is ``constraint`` for the client.

The served test is a real ``Synthetic`` DSE test (nvls with 32 channels is infeasible); the client is
``cloudai run`` on a live-RL test pointing at it (``env_url``), in-process through click's runner.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner
from tests.serve.serving import served

from cloudai.cli import cli
from cloudai.gym.from_toml import load_env
from cloudai.serve.app import create_app


def _served_tomls(root: Path) -> tuple[Path, Path]:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "syn.toml").write_text(
        'name = "syn"\ntest_template_name = "Synthetic"\nagent = "grid_search"\nagent_steps = 4\n'
        'agent_metrics = ["bus_bw"]\nagent_reward_function = "identity"\n'
        '[cmd_args]\nduration_s = 0\nalgo = ["ring", "nvls"]\nnum_channels = [4, 32]\n'
    )
    scenario = root / "scenario.toml"
    scenario.write_text('name = "served"\n[[Tests]]\nid = "Tests.syn"\ntest_name = "syn"\n')
    return root / "tests", scenario


def _client_tomls(root: Path, url: str) -> tuple[Path, Path]:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "remote.toml").write_text(
        'name = "remote"\ntest_template_name = "LiveRL"\nagent = "grid_search"\nagent_steps = 4\n'
        f'agent_metrics = ["bus_bw"]\n[cmd_args]\nlive_rl_mode = true\nenv_url = "{url}"\n'
    )
    scenario = root / "scenario.toml"
    scenario.write_text('name = "client"\n[[Tests]]\nid = "Tests.remote"\ntest_name = "remote"\n')
    return root / "tests", scenario


def test_a_constraint_step_on_the_server_is_a_constraint_step_for_the_client(tmp_path: Path) -> None:
    tests, scenario = _served_tomls(tmp_path / "server")
    loaded = load_env(tests, scenario, output_dir=tmp_path / "server" / "out")
    try:
        with served(create_app(loaded.env, name="Tests.syn")) as url:
            c_tests, c_scenario = _client_tomls(tmp_path / "client", url)
            args = ["run", "--tests-dir", str(c_tests), "--test-scenario", str(c_scenario)]
            result = CliRunner().invoke(cli, [*args, "--output-dir", str(tmp_path / "client" / "out")])
            assert result.exit_code == 0, result.output
    finally:
        loaded.env.close()
    (client_file,) = (tmp_path / "client" / "out").glob("*/Tests.remote/0/trajectory.csv")
    with client_file.open() as fh:
        rows = {json.dumps(json.loads(r["action"]), sort_keys=True): r for r in csv.DictReader(fh)}
    infeasible = rows[json.dumps({"algo": "nvls", "num_channels": 32}, sort_keys=True)]
    assert infeasible["status"] == "infeasible"  # the server's rule refused it: no job ran
    assert "nvls supports at most 16 channels" in infeasible["reason"]
    feasible = rows[json.dumps({"algo": "ring", "num_channels": 4}, sort_keys=True)]
    assert feasible["status"] == "ok" and feasible["reason"] == ""
