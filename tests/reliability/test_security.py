"""Security properties: values are data (never shell code), names stay inside the results dir, secrets stay secret.

* cmd_args and env values with quotes, ``;``, ``$()``, backticks and newlines reach the job
  literally, through the real workload, system and rendered script (hypothesis), and through
  the real CLI;
* no scenario name or test id, however spelled, puts a file outside the output root;
* a failing dotted ``env_class`` import (or a run) never prints or writes the environment's
  secrets.

Bearer tokens over the wire are covered by tests/gym/test_remote_faults.py (client) and
tests/serve/ (server).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import REPO, cloudai

from cloudai.config.scenario import load_scenario
from cloudai.config.system import StandaloneSystemConfig
from cloudai.errors import ConfigError
from cloudai.jobs.spec import job_dir
from cloudai.run.rundir import create_run_dir
from cloudai.systems.base import JobSpec
from cloudai.systems.standalone import StandaloneSystem
from cloudai.workloads.base import JobContext
from cloudai.workloads.bash_cmd import BashCmd

CANARY = "/tmp/cloudai-reliability-pwned"
ATTACKS = [
    f"; touch {CANARY}",
    f"$(touch {CANARY})",
    f"`touch {CANARY}`",
    f"' ; touch {CANARY} ; '",
    f'" ; touch {CANARY} ; "',
    f"\ntouch {CANARY}\n",
    "$((1+1))${HOME}$HOME",
    "\\'\\\"\\\\",
    "a\\\nb",
]
SHELLISH = st.sampled_from(list("'\";$()`\\\n\t |&<>*?!{}[]~#=%x-"))
VALUES = st.one_of(
    st.sampled_from(ATTACKS),
    st.text(SHELLISH, max_size=24),
    st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",), exclude_characters="\x00"), max_size=24),
)
PRINT = "printenv -0 CLOUDAI_VALUE; printf '%s\\0'"  # the env value, then every argument, NUL-separated


def _run_job(spec: JobSpec) -> bytes:
    system = StandaloneSystem(StandaloneSystemConfig())
    job = system.submit(spec)
    while not job.done:
        system.wait([job], timeout=None)
    assert job.returncode == 0, (spec.job_dir / "stderr.txt").read_text()
    return (spec.job_dir / "stdout.txt").read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(VALUES, min_size=1, max_size=4), env_value=VALUES)
def test_values_reach_the_job_literally(tmp_path: Path, args: list[str], env_value: str) -> None:
    cmd_args = {"cmd": PRINT, **{f"a{i}": value for i, value in enumerate(args)}}
    directory = tmp_path / f"job{abs(hash((tuple(args), env_value)))}"
    argv = BashCmd().argv(cmd_args, JobContext(job_dir=directory))
    spec = JobSpec("j", tuple(argv), directory, {"CLOUDAI_VALUE": env_value})
    expected = b"".join(f"{v}\0".encode() for v in [env_value, *(f"--a{i}={v}" for i, v in enumerate(args))])
    assert _run_job(spec) == expected
    script = StandaloneSystem(StandaloneSystemConfig()).render(spec)  # what dry-run and cmd.sh show
    rendered = subprocess.run(["bash", "-c", script], capture_output=True, check=True)
    assert rendered.stdout == expected
    assert not Path(CANARY).exists()


def _toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, but DEL must be escaped too."""
    return json.dumps(value).replace("\x7f", "\\u007f")


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(VALUES, min_size=4, max_size=8))
def test_values_from_toml_reach_the_job_literally_through_the_cli(tmp_path: Path, values: list[str]) -> None:
    root = tmp_path / f"r{abs(hash(tuple(values)))}"
    args = "\n".join(f"a{i} = {_toml_string(v)}" for i, v in enumerate(values))
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "e.toml").write_text(
        f'name = "e"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = {_toml_string(PRINT)}\n{args}\n'
        f"[extra_env_vars]\nCLOUDAI_VALUE = {_toml_string(values[0])}\n"
    )
    (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "e"\ntest_name = "e"\n')
    result = cloudai("run", "--tests-dir", root / "tests", "--test-scenario", root / "s.toml",
                     "--output-dir", root / "out")  # fmt: skip
    assert result.returncode == 0, result.stderr
    (stdout,) = (root / "out").glob("*/e/0/stdout.txt")
    expected = [values[0], *(f"--a{i}={v}" for i, v in enumerate(values))]
    assert stdout.read_bytes() == b"".join(f"{v}\0".encode() for v in expected)
    assert not Path(CANARY).exists()


NAMES = st.one_of(
    st.sampled_from(["..", ".", "../x", "a/../../b", "/etc", "a/b", "..\\x", "~", "x\\..\\..", "-", ".hidden"]),
    st.text(st.sampled_from(list("./\\~-_ax:")), min_size=1, max_size=12),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES, test_id=NAMES)
def test_names_and_ids_cannot_escape_the_output_dir(tmp_path: Path, name: str, test_id: str) -> None:
    from cloudai.config.test import WorkloadConfig

    scenario = tmp_path / "s.toml"
    scenario.write_text(f'name = {json.dumps(name)}\n[[Tests]]\nid = {json.dumps(test_id)}\ntest_name = "sleep"\n')
    tests = {"sleep": (WorkloadConfig(name="sleep", test_template_name="Sleep"), tmp_path / "sleep.toml")}
    try:
        loaded = load_scenario(scenario, tests)
    except ConfigError as exc:
        assert "not allowed" in str(exc)
        return
    root = tmp_path / "out" / "root"
    run_dir = create_run_dir(root, loaded.name)
    target = job_dir(run_dir, loaded.entries[0], 0)
    assert root.resolve() in target.resolve().parents and target.resolve().parent.parent == run_dir.resolve()


SECRET = "s3cr3t-7f1e9c-never-print-me"
BROKEN_MODULES = {
    "needs_dep.py": "import os\nimport cloudai_reliability_missing_dependency\n",
    "raises.py": "import os\nTOKEN = os.environ['CLOUDAI_GYM_TOKEN']\nraise RuntimeError('cannot start: bad config')\n",
    "ctor.py": "import os\n\nclass Env:\n    def __init__(self, horizon=1):\n"
    "        self.token = os.environ['CLOUDAI_GYM_TOKEN']\n        raise ValueError('bad horizon')\n",
}
ENV_CLASSES = ["needs_dep.Env", "raises.Env", "os.environ", "os.getenv", "os._Environ", "os.Environn",
               "no_such_module_xyz.Env", "ctor.Env"]  # fmt: skip


@pytest.fixture
def secret_env(tmp_path: Path) -> dict[str, str]:
    """The environment with secrets set and a directory of broken env modules on PYTHONPATH."""
    modules = tmp_path / "modules"
    modules.mkdir()
    for name, text in BROKEN_MODULES.items():
        (modules / name).write_text(text)
    path = os.pathsep.join([str(modules), str(REPO)])
    return {**os.environ, "PYTHONPATH": path, "CLOUDAI_GYM_TOKEN": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET}


def _files_containing(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()] if root.exists() else []


@pytest.mark.parametrize("classes", [ENV_CLASSES[:-1], ENV_CLASSES[-1:]], ids=["import", "construct"])
def test_env_class_errors_do_not_leak_secrets(tmp_path: Path, secret_env: dict[str, str], classes: list[str]) -> None:
    """Import errors are all reported by one run (one entry per class); a constructor error fails the run."""
    (tmp_path / "tests").mkdir()
    scenario = 'name = "s"\n'
    for i, env_class in enumerate(classes):
        (tmp_path / "tests" / f"l{i}.toml").write_text(
            f'name = "l{i}"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 2\n'
            f'[cmd_args]\nlive_rl_mode = true\nenv_class = "{env_class}"\nhorizon = 2\n'
        )
        scenario += f'[[Tests]]\nid = "t{i}"\ntest_name = "l{i}"\n'
    (tmp_path / "s.toml").write_text(scenario)
    out = tmp_path / "out"
    args = ["--tests-dir", tmp_path / "tests", "--test-scenario", tmp_path / "s.toml", "--output-dir", out]
    result = cloudai("run", "-v", "--log-file", tmp_path / "log.txt", *args, env=secret_env, cwd=tmp_path)
    assert result.returncode in (1, 2), result.stderr
    for env_class in classes:  # each failure is reported, naming its class
        assert env_class in result.stdout + result.stderr, f"{env_class} not reported"
    assert SECRET not in result.stdout + result.stderr
    assert _files_containing(tmp_path, SECRET) == []  # the log file and anything written under out/
    if len(classes) > 1:
        verify = cloudai("verify-configs", "-v", tmp_path / "tests", tmp_path / "s.toml", env=secret_env)
        assert verify.returncode == 2 and SECRET not in verify.stdout + verify.stderr
        assert all(c in verify.stderr for c in classes), verify.stderr


@pytest.mark.slow
def test_runs_never_write_the_environment(tmp_path: Path, secret_env: dict[str, str]) -> None:
    """A live-RL run and a DSE run of jobs, with secrets in the environment: none reaches a results file."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "l.toml").write_text(
        'name = "l"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 4\n'
        'agent_metrics = ["throughput"]\nagent_reward_function = "identity"\n'
        '[cmd_args]\nlive_rl_mode = true\nenv_class = "cloudai.gym.examples.ServingSim"\nhorizon = 2\n'
    )
    (tmp_path / "tests" / "d.toml").write_text(
        'name = "d"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "echo running"\nx = [1, 2]\n'
    )
    out = tmp_path / "out"
    for test in ("l", "d"):
        scenario = tmp_path / f"{test}.scenario.toml"
        scenario.write_text(f'name = "{test}"\n[[Tests]]\nid = "t"\ntest_name = "{test}"\n')
        result = cloudai("run", "-v", "--tests-dir", tmp_path / "tests", "--test-scenario", scenario,
                         "--output-dir", out, env=secret_env, cwd=tmp_path)  # fmt: skip
        assert result.returncode in (0, 1), result.stderr
        assert SECRET not in result.stdout + result.stderr
    assert len(list(out.glob("*/t/0/trajectory.csv"))) == 2
    assert _files_containing(out, SECRET) == []
