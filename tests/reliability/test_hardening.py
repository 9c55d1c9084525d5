"""Issue 17's fault and security cases beyond the bad-input corpus and containment (test_containment.py).

* files that are not files: a metrics.json that is ``/dev/zero`` or a FIFO fails its trial with a
  reason and the sweep goes on; a test TOML that is a FIFO is refused, not waited on;
* unbounded work from a small file: ``grid_points = 10**9`` and ``iterations = 10**6`` dry-run in
  bounded memory (an address-space limit) and write a bounded number of scripts;
* the CLI's last line of defence: an unexpected exception is one ``internal error`` line, exit 1;
* scripts: a name that is not an environment variable name, and a newline bound for an ``#SBATCH``
  line, are refused by every renderer; values stay single shell words;
* secrets: no job environment (standalone, Slurm's ``sbatch``) holds cloudai's tokens.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import cloudai

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import StandaloneSystemConfig
from cloudai.errors import ConfigError
from cloudai.space import Categorical, Range, Space
from cloudai.systems.base import JobSpec
from cloudai.systems.hidden_env import hide_env_var, job_environ
from cloudai.systems.slurm.commands import SlurmCommands
from cloudai.systems.slurm.render import render_sbatch
from cloudai.systems.slurm.single_sbatch import ScriptStep, render_single_sbatch
from cloudai.systems.standalone import StandaloneSystem

METRICS = """case "$MODE" in
  zero) ln -s /dev/zero metrics.json ;;
  fifo) mkfifo metrics.json ;;
  ok) echo '{"default": 2}' > metrics.json ;;
esac
"""


def _scenario(root: Path, test: str, scenario: str = "") -> list[str]:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "tests" / "t.toml").write_text(test)
    (root / "s.toml").write_text(f'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n{scenario}')
    return ["--tests-dir", str(root / "tests"), "--test-scenario", str(root / "s.toml"), "--output-dir",
            str(root / "out")]  # fmt: skip


def test_metrics_json_that_is_not_a_file_fails_its_trial_only(tmp_path: Path) -> None:
    (tmp_path / "m.sh").write_text(METRICS)
    args = _scenario(
        tmp_path,
        f'name = "t"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "sh {tmp_path / "m.sh"}"\n'
        '[extra_env_vars]\nMODE = ["zero", "fifo", "ok"]\n',
    )
    result = cloudai("run", *args, timeout=120)
    assert result.returncode == 0, result.stderr  # the ok trial is the best; the others cost one trial each
    (iteration,) = (tmp_path / "out").glob("*/t/0")
    with (iteration / "trajectory.csv").open() as fh:
        rows = {json.loads(r["action"])["extra_env_vars.MODE"]: r for r in csv.DictReader(fh)}
    assert {mode: row["status"] for mode, row in rows.items()} == {"zero": "failed", "fifo": "failed", "ok": "ok"}
    reasons = {m: json.loads((iteration / rows[m]["step"] / "job.json").read_text())["reason"] for m in rows}
    assert "not a regular file (a character device)" in reasons["zero"]
    assert "not a regular file (a FIFO)" in reasons["fifo"]


def test_a_toml_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    args = _scenario(tmp_path, 'name = "t"\ntest_template_name = "Sleep"\n')
    os.mkfifo(tmp_path / "tests" / "pipe.toml")
    result = cloudai("run", *args, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "pipe.toml" in result.stderr and "not a regular file (a FIFO)" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_billion_point_range_grid_costs_no_memory() -> None:
    space = Space({}, (Range("x", 0.0, 1.0, grid_points=10**9), Range("n", 1, 10**12, dtype="int", grid_points=10**9),
                       Categorical("a", ("p", "q"))))  # fmt: skip
    tracemalloc.start()
    try:
        last = space.grid_point(space.grid_size - 1)
        assert space.grid_size == 2 * 10**18 and last == {"x": 1.0, "n": 10**12, "a": "q"}
        assert space.grid_index(last) == space.grid_size - 1
        assert tracemalloc.get_traced_memory()[1] < 1024 * 1024
    finally:
        tracemalloc.stop()


def _limited(argv: list[str], limit_bytes: int) -> subprocess.CompletedProcess[str]:
    """The CLI with an address-space limit: materialising a 10**9 grid would fail, not swap."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "cloudai", *argv], capture_output=True, text=True, timeout=120,
                          preexec_fn=limit)  # fmt: skip


@pytest.mark.parametrize("agent", ["grid_search", "bandit"])
def test_dry_run_of_a_huge_grid_is_bounded(tmp_path: Path, agent: str) -> None:
    args = _scenario(
        tmp_path,
        f'name = "t"\ntest_template_name = "Synthetic"\nagent = "{agent}"\n[cmd_args]\nalgo = ["ring", "tree"]\n'
        "message_size = 1048576\nduration_s = 0\njitter = { low = 0.0, high = 0.5, grid_points = 1000000000 }\n",
    )
    result = _limited(["dry-run", *args], 2 * 1024**3)
    assert result.returncode == 0, result.stderr
    assert "2000000000 grid points" in result.stdout
    (run_dir,) = (tmp_path / "out").iterdir()
    assert len(list(run_dir.glob("t/0/*/cmd.sh"))) == 5  # the agent's first trials, not the grid


def test_dry_run_of_a_million_iterations_writes_a_few(tmp_path: Path) -> None:
    args = _scenario(tmp_path, 'name = "t"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 0\n',
                     "iterations = 1000000\n")  # fmt: skip
    result = _limited(["dry-run", *args], 2 * 1024**3)
    assert result.returncode == 0, result.stderr
    assert "1000000 iterations; scripts for the first 5 written" in result.stdout
    (run_dir,) = (tmp_path / "out").iterdir()
    assert sorted(p.name for p in (run_dir / "t").iterdir()) == ["0", "1", "2", "3", "4"]


def test_an_unexpected_exception_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cloudai.cli import cli

    def broken(*args: object) -> None:
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr("cloudai.plan.load.load_plan", broken)
    args = _scenario(tmp_path, 'name = "t"\ntest_template_name = "Sleep"\n')
    result = CliRunner().invoke(cli, ["dry-run", *args])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == ["internal error: ZeroDivisionError: division by zero second line "
                     "(run with -v for the traceback; please report)"]  # fmt: skip
    verbose = CliRunner().invoke(cli, ["dry-run", "-v", *args])
    assert verbose.exit_code == 1 and "Traceback" in verbose.output and "ZeroDivisionError" in verbose.output


SLURM = SlurmSystemConfig.model_validate({"name": "c", "default_partition": "p", "partitions": [{"name": "p"}]})


def _renders(spec: JobSpec) -> list[object]:
    """Every renderer's output for ``spec`` (or the error it raised)."""
    out: list[object] = []
    renderers = [
        lambda: StandaloneSystem(StandaloneSystemConfig()).render(spec),
        lambda: render_sbatch(spec, SLURM),
        lambda: render_single_sbatch([ScriptStep(spec)], SLURM, spec.job_dir, "single"),
    ]
    for render in renderers:
        try:
            out.append(render())
        except ConfigError as exc:
            out.append(exc)
    return out


@pytest.mark.parametrize("name", ["X;touch p;Y", "A=B", "", "A B", "A\nB", "1X"])
def test_every_renderer_refuses_a_bad_env_name(tmp_path: Path, name: str) -> None:
    for out in _renders(JobSpec("j", ("true",), tmp_path, {name: "v"})):
        assert isinstance(out, ConfigError) and repr(name) in str(out)


def test_no_newline_reaches_an_sbatch_header(tmp_path: Path) -> None:
    evil = "a\n#SBATCH --output=/tmp/x"
    with pytest.raises(ConfigError, match="newline"):
        render_sbatch(JobSpec(evil, ("true",), tmp_path), SLURM)
    with pytest.raises(ConfigError, match="newline"):
        render_sbatch(JobSpec("j", ("true",), tmp_path / "x\ny"), SLURM)
    with pytest.raises(ConfigError, match="newline"):
        render_single_sbatch([ScriptStep(JobSpec("j", ("true",), tmp_path))], SLURM, tmp_path, evil)


def test_values_stay_one_shell_word(tmp_path: Path) -> None:
    """The rendered scripts run as written (``srun`` stood in by a function that drops its flags)."""
    value = "a\nb;$(touch p)`x`'\""
    spec = JobSpec("j", ("bash", "-c", 'printf %s "$V"; printf %s "$0"', value), tmp_path, {"V": value})
    srun = 'srun() { while [[ $1 == -* ]]; do shift; done; "$@"; }\n'
    for script in _renders(spec)[:2]:
        assert isinstance(script, str)
        done = subprocess.run(["bash", "-c", srun + script], capture_output=True, text=True, cwd=tmp_path)
        assert done.stdout == value * 2, done.stderr
    assert not (tmp_path / "p").exists()


SECRET = "tok-5e3c-never-in-a-job"


def test_tokens_never_reach_a_job(tmp_path: Path) -> None:
    args = _scenario(tmp_path, 'name = "t"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "printenv"\n')
    env = {**os.environ, "CLOUDAI_GYM_TOKEN": SECRET, "CLOUDAI_SERVE_TOKEN": SECRET, "KEEP_ME": "visible"}
    result = cloudai("run", *args, env=env)
    assert result.returncode == 0, result.stderr
    (stdout,) = (tmp_path / "out").glob("*/t/0/stdout.txt")
    assert "KEEP_ME=visible" in stdout.read_text() and SECRET not in stdout.read_text()


def test_sbatch_runs_without_the_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sbatch`` exports its own environment to the job: the commands we run never carry the tokens."""
    monkeypatch.setenv("CLOUDAI_GYM_TOKEN", SECRET)
    monkeypatch.setenv("MY_SERVER_TOKEN", SECRET)
    hide_env_var("MY_SERVER_TOKEN")  # what ``cloudai serve --token-var`` and ``env_token_var`` do
    printed = SlurmCommands(timeout_s=30).run(["printenv"]).stdout
    assert "PATH=" in printed and SECRET not in printed
    assert "MY_SERVER_TOKEN" not in job_environ() and "CLOUDAI_GYM_TOKEN" not in job_environ()
