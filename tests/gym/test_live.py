"""Live RL in-process through ``cloudai run``, as a user types it: episodes, done, env_params, resume, errors."""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import pytest
from tests.conftest import CONF, REPO, cloudai
from tests.dse.conftest import invoke
from tests.gym.live_case import LiveCase, episodes

SERVING = 'live_rl_mode = true\nenv_class = "cloudai.gym.examples.ServingSim"\n'


@pytest.mark.parametrize(("name", "steps", "horizon"), [("bandit", 400, 50), ("random", 200, 40)])
def test_conf_examples_run_episode_after_episode(tmp_path: Path, name: str, steps: int, horizon: int) -> None:
    result = cloudai("run", "--tests-dir", CONF / "common/test",
                     "--test-scenario", CONF / f"common/test_scenario/live_serving_{name}.toml",
                     "--output-dir", tmp_path, cwd=REPO)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = tmp_path.iterdir()
    all_rows = _rows(run_dir / "serving" / "0", "trajectory.csv")
    # live RL confirms its best: 3 candidates re-run 3 times after the search (steps in confirm.csv)
    assert [int(r["step"]) for r in all_rows] == list(range(1, steps + 10))  # monotonic across resets
    confirm = (run_dir / "serving" / "0" / "confirm.csv").read_text().splitlines()[1:]
    assert [int(line.split(",")[0]) for line in confirm] == list(range(steps + 1, steps + 10))
    rows = all_rows[:steps]
    grouped = episodes(rows)
    assert list(grouped) == list(range(1, steps // horizon + 1))
    assert all(len(group) == horizon for group in grouped.values())  # done at the horizon ends each episode
    assert {r["status"] for r in rows} == {"ok"}
    best = run_dir / "serving" / "0" / "best.toml"
    assert "(reward = the live server's reward; a single measurement)." in best.read_text()
    assert best.read_text().startswith("# Recommended (best.toml is it): candidate")
    if name == "random":  # no agent_metrics: the server's names label every observed value (issue 30 item 5)
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["entries"][0]["agent_metrics"] == ["throughput", "p99_latency_ms", "queue_depth"]
        header = (run_dir / "serving" / "0" / "trials.csv").read_text().splitlines()[0].split(",")
        assert header[-3:] == ["throughput", "p99_latency_ms", "queue_depth"] and "default" not in header
    report = (run_dir / "report.html").read_text()  # the re-runs are drawn as confirmation, not as one more episode
    shown = report[report.index('data-section="episodes"') :]
    assert f"The 9 confirmation re-runs (steps {steps + 1}-{steps + 9}) are not an episode" in shown
    assert f'<td class="num">{steps // horizon + 1}</td>' not in shown.split("</table>")[0]
    if name == "random":  # best.toml runs unchanged: a live episode with the best knobs fixed
        tests = tmp_path / "best_tests"
        tests.mkdir()
        (tests / "best.toml").write_text(best.read_text())
        scenario = tmp_path / "best_scenario.toml"
        scenario.write_text(f'name = "again"\n[[Tests]]\nid = "again"\ntest_name = "live_serving_{name}_best"\n')
        again = cloudai("run", "--tests-dir", tests, "--test-scenario", scenario, "--output-dir", tmp_path / "again")
        assert again.returncode == 0, again.stdout + again.stderr
        (rerun,) = (tmp_path / "again").iterdir()
        assert len(_rows(rerun / "again" / "0", "trajectory.csv")) == steps + 3  # every knob fixed: 1 candidate
    if name == "bandit":
        env = _rows(run_dir / "serving" / "0", "env.csv")
        assert [r["step"] for r in env] == [r["step"] for r in all_rows]
        for group in grouped.values():  # drawn at the episode start, in force for the whole episode
            assert len({env[int(r["step"]) - 1]["load_scale"] for r in group}) == 1
        assert len({r["load_scale"] for r in env}) > 1


def _rows(directory: Path, name: str) -> list[dict[str, str]]:
    with (directory / name).open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_done_on_slo_collapse_ends_the_episode_early(tmp_path: Path) -> None:
    case = LiveCase(tmp_path).write(
        'agent = "random_search"\nagent_steps = 60\nagent_metrics = ["queue_depth", "throughput"]\n'
        "agent_config = { seed = 2, confirm = 0 }\n[cmd_args]\n" + SERVING + "horizon = 15\nbase_load = 150.0\n"
        "collapse_queue = 60.0\n"
    )
    result = case.run()
    assert result.returncode == 0, result.stdout + result.stderr
    rows = case.rows()
    assert [int(r["step"]) for r in rows] == list(range(1, 61))
    grouped = episodes(rows)
    *finished, _last = grouped.values()
    for group in finished:
        queues = [r["observation"][0] for r in group]
        assert all(q <= 60.0 for q in queues[:-1]), "the episode went on after a collapse"
        assert len(group) == 15 or queues[-1] > 60.0, "the episode ended without done"
    assert any(len(group) < 15 for group in finished), "no collapse happened: the test proves nothing"


def test_resets_pass_seed_and_env_params_and_fixed_fields_reach_the_server(tmp_path: Path) -> None:
    case = LiveCase(tmp_path).write(
        'agent = "random_search"\nagent_steps = 10\nagent_metrics = ["t", "seed", "load_scale", "z", "x"]\n'
        "agent_config = { seed = 4, confirm = 0 }\n[cmd_args]\nlive_rl_mode = true\n"
        'env_class = "tests.gym.live_envs.EchoEnv"\nevery = 3\n'
        "x = [1, 2]\ny = { low = 0.25, high = 0.5 }\nz = 1\nload_scale = [0.5, 2.0]\n[env_params.load_scale]\n"
    )
    result = case.run()
    assert result.returncode == 0, result.stdout + result.stderr
    rows, env = case.rows(), case.rows("env.csv")
    assert [int(r["episode"]) for r in rows] == [1, 1, 1, 2, 2, 2, 3, 3, 3, 4]
    assert [r["observation"][0] for r in rows] == [1, 2, 3] * 3 + [1]  # the server was reset each episode
    assert [r["observation"][1] for r in rows] == [4] * 3 + [-1] * 7  # the agent's seed on the first reset only
    assert [r["step"] for r in env] == [r["step"] for r in rows]
    assert [float(e["load_scale"]) for e in env] == [r["observation"][2] for r in rows]  # what the server got
    assert all(r["observation"][3] == 1 for r in rows)  # z is fixed: sent with every step, not chosen
    assert all(set(r["action"]) == {"x", "y"} and r["observation"][4] == r["action"]["x"] for r in rows)
    assert all(0.25 <= r["action"]["y"] <= 0.5 for r in rows)


def test_a_crashing_server_leaves_a_resumable_run(tmp_path: Path) -> None:
    marker = tmp_path / "fail"
    marker.touch()
    case = LiveCase(tmp_path).write(
        'agent = "random_search"\nagent_steps = 40\nagent_config = { seed = 1, confirm = 0 }\n'
        "[cmd_args]\nlive_rl_mode = true\n"
        f'env_class = "tests.gym.live_envs.FailingSim"\nfail_file = "{marker}"\nfail_after = 25\n'
        "load_scale = [0.5, 1.0]\n[cmd_args.env_kwargs]\nhorizon = 10\n[env_params.load_scale]\n"
    )
    result = case.run()
    assert result.returncode == 1
    expected = "GymServerError: step (tests.gym.live_envs.FailingSim): RuntimeError: injected crash"
    assert expected in result.stdout + result.stderr
    failure = (case.trial_dir / "dse_failure.txt").read_text()
    assert "injected crash" in failure
    assert "where:  at step 26 (the last step started)" in failure  # the failing step, not the one before it
    before = (case.trial_dir / "trajectory.csv").read_text()
    assert [int(r["step"]) for r in case.rows()] == list(range(1, 26))  # every finished step is recorded
    assert len(case.rows("env.csv")) == 25

    marker.unlink()
    command = re.search(r"^resume: (.+)$", failure, re.MULTILINE)
    assert command is not None
    args = shlex.split(command.group(1))
    assert args[:2] == ["cloudai", "run"] and args[-2:] == ["--resume", str(case.run_dir().resolve())]
    resumed = cloudai(*args[1:], cwd=REPO)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    rows = case.rows()
    assert (case.trial_dir / "trajectory.csv").read_text().startswith(before)  # no completed step re-run
    assert [int(r["step"]) for r in rows] == list(range(1, 41))
    assert [int(r["episode"]) for r in rows[24:27]] == [3, 4, 4]  # the server state is gone: a new episode
    assert [r["step"] for r in case.rows("env.csv")] == [r["step"] for r in rows]
    assert not (case.trial_dir / "dse_failure.txt").exists()


AGENT = 'agent = "random_search"\nagent_steps = 5\n'
LIVE = "[cmd_args]\nlive_rl_mode = true\n"
FACTORY_ERRORS = {
    "bare": (LIVE + 'env_class = "ServingSim"\n', "is not a dotted path to a class"),
    "no_module": (LIVE + 'env_class = "nosuch_pkg.Sim"\n', "no module 'nosuch_pkg'"),
    "no_class": (LIVE + 'env_class = "cloudai.gym.examples.ServingSimm"\n',
                 "has no class 'ServingSimm'.*\\n  hint: did you mean 'ServingSim'"),
    "no_protocol": (LIVE + 'env_class = "cloudai.gymserver.spaces.ContinuousSpace"\n',
                    "does not implement GymServer: no action_space, observation_space, reset, step"),
    "not_class": (LIVE + 'env_class = "cloudai.gym.examples.METRICS"\n', "is a list, not a class"),
    "bad_kwarg": ("[cmd_args]\n" + SERVING + "[cmd_args.env_kwargs]\nhorizn = 3\n",
                  "env_kwargs.horizn: .*takes no argument 'horizn'\\n  hint: did you mean 'horizon'"),
    "neither": (LIVE, "needs env_class or env_url"),
    "both": ("[cmd_args]\n" + SERVING + 'env_url = "http://127.0.0.1:1"\n', "give env_class or env_url, not both"),
    "bad_url": (LIVE + 'env_url = "ftp://x"\n', "'ftp://x' is not an http"),
    "bad_timeout": ("[cmd_args]\n" + SERVING + "env_timeout_s = 0\n", "env_timeout_s: 0 is not a positive number"),
    "no_steps": ('agent = "random_search"\n[cmd_args]\n' + SERVING, "agent_steps: live RL needs agent_steps"),
}  # fmt: skip


def test_every_factory_error_fails_validation_at_once(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    scenario = 'name = "bad"\n'
    for name, (test, _) in FACTORY_ERRORS.items():
        agent = "" if name == "no_steps" else AGENT
        (tests / f"{name}.toml").write_text(f'name = "{name}"\ntest_template_name = "LiveRL"\n{agent}{test}')
        scenario += f'[[Tests]]\nid = "{name}"\ntest_name = "{name}"\n'
    (tmp_path / "scenario.toml").write_text(scenario)
    result = cloudai("run", "--tests-dir", tests, "--test-scenario", tmp_path / "scenario.toml",
                     "--output-dir", tmp_path / "out", cwd=REPO)  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    for index, (name, (_, expected)) in enumerate(FACTORY_ERRORS.items()):  # each in its test file, with its entry
        expected = expected.replace("\\n  hint", "[^\\n]*\\n  hint")  # the entry is named before the hint
        pattern = rf"{name}.toml: [^\n]*{expected}"
        assert re.search(pattern, result.stderr), (pattern, result.stderr)
        assert f"used by Tests[{index}] (id '{name}')" in result.stderr
    assert not (tmp_path / "out").exists()  # nothing written


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("[cmd_args]\n" + SERVING + "horizon = 0\n",
         "env_class: constructing cloudai.gym.examples.ServingSim raised ValueError: horizon"),
        ("[cmd_args]\n" + SERVING + "max_batchsize = [1, 2]\n",
         "max_batchsize: cloudai.gym.examples.ServingSim has no knob 'max_batchsize'.*did you mean 'max_batch_size'"),
        ("[cmd_args]\n" + SERVING + "max_batch_size = [3, 8]\n", "max_batch_size: 3 is not a value"),
        ("[cmd_args]\n" + SERVING + "kv_cache_fraction = { low = 0.1, high = 0.9 }\n", "outside \\[0.5, 0.95\\]"),
        ('agent_metrics = ["thruput"]\n[cmd_args]\n' + SERVING, "agent_metrics: the server observes no 'thruput'"),
    ],
)  # fmt: skip
def test_errors_known_once_the_server_exists(tmp_path: Path, test: str, expected: str) -> None:
    case = LiveCase(tmp_path).write(AGENT + test)
    result = invoke(["run", "--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(tmp_path / "scenario.toml"),
                     "--output-dir", str(case.out)])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert re.search(expected, result.output, re.DOTALL), result.output
    assert not list(case.out.rglob("trajectory.csv"))  # no step was recorded


def test_live_rl_rejects_single_sbatch(tmp_path: Path) -> None:
    result = LiveCase(tmp_path).write(AGENT + "[cmd_args]\n" + SERVING).run("--single-sbatch")
    assert result.returncode == 2 and "cannot run with --single-sbatch" in result.stderr, result.stderr
