"""A plain run shows progress between its header and the final table: lines per job ended, or a live display."""

from __future__ import annotations

import io
import time
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from cloudai.cli import cli
from cloudai.run.plain_progress import PlainProgress
from cloudai.systems.base import Job, JobSpec, JobStatus

SCENARIO = """name = "s"
[[Tests]]
id = "a"
test_name = "sleep"
iterations = 2
[[Tests]]
id = "b"
test_template_name = "BashCmd"
[Tests.cmd_args]
cmd = "echo 'error: no such flag --algo' >&2; exit 4"
"""


def test_a_plain_run_prints_one_line_per_job_ended(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "sleep.toml").write_text(
        'name = "sleep"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 0\n'
    )
    (tmp_path / "s.toml").write_text(SCENARIO)
    args = ["run", "--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(tmp_path / "s.toml"),
            "--output-dir", str(tmp_path / "out")]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Running scenario"))
    ended = [line for line in lines[header + 1 :] if line.startswith("[jobs ")]
    assert len(ended) == 3 and ended[-1].startswith("[jobs 3/3] ")
    assert any("b.0 failed: exit code 4: error: no such flag --algo" in line for line in ended)
    assert sum(" ok (" in line for line in ended) == 2


def _job(name: str, status: JobStatus, reason: str = "", started: float | None = None) -> Job:
    job = Job(JobSpec(name, ("true",), Path("/nonexistent") / name), "1", status, reason=reason)
    job.started_at = started
    if status.final:
        job.ended_at = time.time()
    return job


def test_a_terminal_shows_queued_running_done_elapsed_and_the_pending_reason() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120, record=True)
    now = time.time()
    with PlainProgress(4, lambda line: None, tty=True, console=console) as progress:
        assert progress.poll_s is not None  # the runner wakes up to show a job starting
        progress.started(_job("t.0", JobStatus.PENDING, reason="Resources"))
        progress.started(_job("t.1", JobStatus.RUNNING, started=now - 65))
        progress.finished(_job("t.2", JobStatus.OK, started=now - 3))
        assert progress.counts() == "2 queued, 1 running, 1 done"
    text = console.export_text()
    assert "pending: Resources" in text  # squeue's reason, as the Slurm system records it
    assert "running  65." in text or "running  66." in text  # elapsed since the job started
    assert "2 queued, 1 running, 1 done" in text and "t.2" in text and "ok" in text
