"""Every trial that did not score says why, in job.json, trajectory.csv, the progress line and the report.

Real jobs through the real CLI: a BashCmd that exits 0 without metrics, one that fails with its own
error line, one that reports the wrong metric; and a trajectory written before the ``reason`` column.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd
from tests.dse.conftest import Case, invoke

from cloudai.jobs.reasons import failure_reason, returncode_text

BASH = """name = "x"
test_template_name = "BashCmd"
agent = "grid_search"
agent_metrics = ["{metric}"]
agent_reward_function = "identity"
[cmd_args]
cmd = ["{cmd_a}", "{cmd_b}"]
"""


MODEL_TEST = """name = "x"
test_template_name = "BashCmd"
agent_metrics = ["bus_bw", "default"]
[cmd_args]
cmd = "{model}"
drop = [false, true]
"""


def _case(case: Callable[..., Case], cmd_a: str, cmd_b: str, metric: str = "default") -> Case:
    return case(BASH.format(metric=metric, cmd_a=cmd_a, cmd_b=cmd_b))


def test_exit_0_without_metrics_is_failed_in_job_json_and_trajectory_alike(case: Callable[..., Case]) -> None:
    c = _case(case, "true", "echo broken >&2; exit 3")
    result = invoke(c.args())
    frame = c.trajectory()
    reasons = dict(zip(frame.step, frame.reason, strict=True))
    assert list(frame.status) == ["failed", "failed"]
    assert "no metrics.json" in reasons[1]
    assert reasons[2] == "exit code 3: broken"  # the code, then the tool's own last line
    jobs = {int(d.name): json.loads((d / "job.json").read_text()) for d in c.job_dirs()}
    assert jobs[1]["status"] == "failed" and jobs[1]["reason"] == reasons[1]
    assert jobs[2]["reason"] == reasons[2]
    assert f"failed reward=-1 best=- ({reasons[2]})" in result.output  # the progress line (not a TTY)
    report = (c.run_dir() / "report.html").read_text()
    assert "Trials that did not succeed (2)" in report and "exit code 3: broken" in report


def test_a_missing_metric_names_what_was_found(case: Callable[..., Case]) -> None:
    c = case(MODEL_TEST)
    invoke(c.args())
    frame = c.trajectory()
    assert list(frame.status) == ["ok", "failed"]
    assert frame.reason[1] == "metric 'bus_bw' missing; found: default"
    job = json.loads((c.iteration_dir() / "2" / "job.json").read_text())
    assert job["status"] == "failed" and job["reason"] == frame.reason[1]


def test_a_trajectory_without_the_reason_column_resumes_and_reports(case: Callable[..., Case]) -> None:
    c = case(MODEL_TEST.replace("drop = [false, true]", "x = [0, 1, 2]"))
    assert invoke(c.args()).exit_code == 0
    path = c.iteration_dir() / "trajectory.csv"
    old = pd.read_csv(path, keep_default_na=False).drop(columns=["reason"])  # as written before the column
    old.to_csv(path, index=False)
    result = invoke(["run", "--tests-dir", str(c.tests), "--test-scenario", str(c.scenario), "--resume",
                     str(c.run_dir())])  # fmt: skip
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(path, keep_default_na=False)
    assert list(frame.columns)[-1] == "reason" and list(frame.step) == [1, 2, 3]
    report = invoke(["generate-report", str(c.run_dir())])
    assert report.exit_code == 0, report.output


def test_reason_text_for_signals_and_output(tmp_path) -> None:
    assert returncode_text(-9) == "killed by signal 9 (SIGKILL)" and returncode_text(0) == ""
    (tmp_path / "stderr.txt").write_text("warming up\nerror: --algo must be ring or tree\n\n")
    assert failure_reason("", 2, tmp_path) == "exit code 2: error: --algo must be ring or tree"
    assert failure_reason("", -15, tmp_path).startswith("killed by signal 15 (SIGTERM): error:")
