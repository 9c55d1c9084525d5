"""Live RL over several environments at once (``agent_config.max_parallel``), and ``episodes.jsonl``.

``RendezvousEnv`` makes every step wait until 4 instances step together: a run that stepped them one at a time
would break its barrier and fail. The records must still be step-aligned, in step order, one episode per id.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from cloudai.cli import cli

SCENARIO = 'name = "live"\n[[Tests]]\nid = "t"\ntest_name = "x"\n'


def live_test(steps: int, parallel: int, agent: str = "random_search", env: str = "RendezvousEnv") -> str:
    kwargs = f"env_kwargs = {{ parties = {parallel} }}\n" if env == "RendezvousEnv" else ""
    return (
        f'name = "x"\ntest_template_name = "LiveRL"\nagent = "{agent}"\nagent_steps = {steps}\n'
        f"agent_config = {{ seed = 5, max_parallel = {parallel}, confirm = 0 }}\n"
        f'agent_metrics = ["t", "x"]\n[cmd_args]\nlive_rl_mode = true\nenv_class = "tests.gym.live_envs.{env}"\n'
        f"{kwargs}x = [0, 1, 2]\ny = {{ low = 0.0, high = 1.0 }}\n"
    )


def run(tmp_path: Path, test: str, *extra: str) -> Path:
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "x.toml").write_text(test)
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    args = ["run", "--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(tmp_path / "scenario.toml")]
    if "--resume" not in extra:
        args += ["--output-dir", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "out").iterdir()
    return run_dir / "t" / "0"


def records(trial_dir: Path) -> tuple[list[dict[str, str]], list[dict]]:
    with (trial_dir / "trajectory.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    lines = (trial_dir / "episodes.jsonl").read_text().splitlines()
    return rows, [json.loads(line) for line in lines]


def test_four_environments_step_at_once_and_the_records_stay_aligned(tmp_path: Path) -> None:
    trial = run(tmp_path, live_test(steps=12, parallel=4))
    rows, steps = records(trial)
    assert [int(r["step"]) for r in rows] == list(range(1, 13))
    assert all(r["status"] == "ok" for r in rows), [r["reason"] for r in rows]
    assert [s["step"] for s in steps] == list(range(1, 13))
    by_env: dict[int, list[dict]] = {}
    for record in steps:
        by_env.setdefault(record["env_id"], []).append(record)
    assert sorted(by_env) == [0, 1, 2, 3]
    for env_steps in by_env.values():  # 3 steps each: one whole episode (the env's done after 3)
        assert [s["step_in_episode"] for s in env_steps] == [1, 2, 3]
        assert [s["terminated"] for s in env_steps] == [False, False, True]
        assert {s["episode_in_env"] for s in env_steps} == {1}
        assert len({s["episode"] for s in env_steps}) == 1
        assert [s["observation"][0] for s in env_steps] == [1.0, 2.0, 3.0]  # t counts within its own instance
    assert len({s["episode"] for s in steps}) == 4  # one global id per (environment, episode)
    assert [int(r["episode"]) for r in rows] == [s["episode"] for s in steps]  # trajectory.csv agrees
    returns = {s["episode"]: 0.0 for s in steps}
    for s in steps:
        returns[s["episode"]] += s["reward"]
    report = (trial.parent.parent / "report.html").read_text()
    assert f"4 episode(s): mean return {sum(returns.values()) / 4:.6g} ± " in report  # the report's summary


def test_episodes_jsonl_loads_in_pandas_with_one_schema(tmp_path: Path) -> None:
    trial = run(tmp_path, live_test(steps=6, parallel=2))
    frame = pd.read_json(trial / "episodes.jsonl", lines=True)
    expected = ["step", "episode", "env_id", "episode_in_env", "step_in_episode", "observation", "action", "reward",
                "terminated", "truncated", "info"]  # fmt: skip
    assert list(frame.columns) == expected
    assert len(frame) == 6 and frame["terminated"].dtype == bool
    assert all(set(info) == {"status", "reason", "env_params"} for info in frame["info"])
    assert all(len(obs) == 2 for obs in frame["observation"])


def test_resume_continues_both_records(tmp_path: Path) -> None:
    trial = run(tmp_path, live_test(steps=4, parallel=2))
    (tmp_path / "tests" / "x.toml").write_text(live_test(steps=8, parallel=2))
    run(tmp_path, live_test(steps=8, parallel=2), "--resume", str(trial.parent.parent))
    rows, steps = records(trial)
    assert [int(r["step"]) for r in rows] == list(range(1, 9))
    assert [s["step"] for s in steps] == list(range(1, 9))
    old, new = {s["episode"] for s in steps[:4]}, {s["episode"] for s in steps[4:]}
    assert not old & new  # the server state is gone after a resume: new episodes, new ids


def test_one_environment_records_episodes_too(tmp_path: Path) -> None:
    trial = run(tmp_path, live_test(steps=5, parallel=1, env="EchoEnv"))
    _, steps = records(trial)
    assert [s["env_id"] for s in steps] == [0] * 5
    assert [s["step_in_episode"] for s in steps] == [1, 2, 3, 1, 2]
    assert [s["episode_in_env"] for s in steps] == [1, 1, 1, 2, 2]
