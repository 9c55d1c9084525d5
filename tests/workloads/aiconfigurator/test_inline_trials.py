"""A model-backed trial run in cloudai's process (``Workload.evaluate``) is recorded exactly as its process is.

The Aiconfigurator trial asks the run's warm worker from cloudai's own process and writes the runner's files
(``runner.record``, the one function both paths call): no process per trial. These tests run the real package
(the installed environment, as ``test_aiconfigurator_env``; skipped without it) and compare, file by file and
field by field, with the same trial run as its argv by the standalone system; then ``--resume`` and the trial
cache of a real ``cloudai run`` whose trials are all in-process.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from cloudai.agents import AGENTS
from cloudai.agents.base import BaseAgent
from cloudai.cli import cli
from cloudai.config.system import StandaloneSystemConfig
from cloudai.envs.base import Feedback, Observation
from cloudai.jobs.spec import finish_job
from cloudai.systems.base import Job, JobSpec
from cloudai.systems.standalone import StandaloneSystem
from cloudai.workloads.aiconfigurator import Aiconfigurator, worker
from cloudai.workloads.aiconfigurator.catalog import ENV
from cloudai.workloads.base import JobContext

CACHE = Path(__file__).resolve().parents[3] / ".cache" / "install"
H200 = {"model_name": "meta-llama/Meta-Llama-3.1-70B", "system": "h200_sxm", "isl": 4000, "osl": 500}
POINTS = {
    "agg": {**H200, "agg": {"tp": 4, "batch_size": 8}},
    "disagg_on_16": {
        **H200,
        "total_gpus": 16,
        "disagg": {"p_workers": 2, "p_bs": 1, "d_tp": 4, "d_bs": 32, "d_workers": 2},
    },  # one replica of 10 GPUs: 6 idle
    "oom": {**H200, "system": "h100_sxm", "agg": {"tp": 1, "batch_size": 8}},  # 140 GB of weights on 80 GB
}


@pytest.fixture(scope="module")
def warm() -> Iterator[Path]:
    """A warm worker on the installed environment, asked as a run asks it (``worker.listening``); tagged, so no
    other test's worker (which its module stops when done, maybe mid-way through ours under xdist) is used."""
    if not ENV.installed(CACHE):
        pytest.skip(f"the aiconfigurator environment is not installed in {CACHE} (`cloudai install`, see .ci/run)")
    os.environ["CLOUDAI_AICONFIGURATOR_WORKER_TAG"] = f"test_inline_trials-{os.getpid()}"
    proc = worker.start(CACHE)
    try:
        assert proc is not None, "the tagged worker did not start"
        with worker.listening(worker.name(CACHE)):
            yield CACHE
    finally:
        del os.environ["CLOUDAI_AICONFIGURATOR_WORKER_TAG"]
        if proc is not None:
            worker.stop(proc)


def run_job(system: StandaloneSystem, spec: JobSpec) -> tuple[Job, dict[str, bytes]]:
    """``spec`` run to its end by ``system`` and finished as the env finishes a trial; its job dir's files."""
    job = system.submit(spec)
    while not job.done:
        system.wait([job], None)
    finish_job(job, Aiconfigurator(), ("tokens_per_s_per_gpu",))
    files = {path.name: path.read_bytes() for path in spec.job_dir.iterdir()}
    shutil.rmtree(spec.job_dir)  # the other path runs in the same dir: the argv (it names the dir) is the same
    return job, files


def test_an_in_process_trial_is_recorded_as_its_process_would_be(warm: Path, tmp_path: Path) -> None:
    """The same trial twice in one job dir, as its argv (a process asking the worker) and in cloudai's process:
    the same files, byte for byte (but the trial's own elapsed time on its last line of stdout), and the same
    ``job.json`` field for field (but the job id, a process id either way, and the times). An estimate, one with
    replicas on ``total_gpus``, and a failure with the model's reason (exit 1)."""
    system = StandaloneSystem(StandaloneSystemConfig(name="local", install_path=warm, output_path=tmp_path))
    workload = Aiconfigurator()
    for label, args in POINTS.items():
        context = JobContext(tmp_path / label, install_path=warm)
        evaluate = workload.evaluate(args, context)
        assert evaluate is not None, label  # a worker listens: the trial is not a process
        spec = JobSpec(label, tuple(workload.argv(args, context)), context.job_dir, ntasks=1, evaluate=evaluate)
        process, process_files = run_job(system, dataclasses.replace(spec, evaluate=None))
        inline, inline_files = run_job(system, spec)
        assert inline.job_id == str(os.getpid()) != process.job_id, label  # ran here, not in a child
        assert sorted(inline_files) == sorted(process_files), label
        for name, data in process_files.items():
            if name == "job.json":
                ours, theirs = json.loads(inline_files[name]), json.loads(data)
                times = ("job_id", "submitted_at", "started_at", "ended_at")
                assert sorted(ours) == sorted(theirs), label
                assert {k: v for k, v in ours.items() if k not in times} == {
                    k: v for k, v in theirs.items() if k not in times
                }, label
                assert ours["started_at"] <= ours["ended_at"], label
            elif name == "stdout.txt":
                assert _untimed(inline_files[name]) == _untimed(data), label
            else:
                assert inline_files[name] == data, (label, name)
        record = json.loads(inline_files["job.json"])
        if label == "oom":
            assert (record["status"], record["returncode"]) == ("failed", 1)
            assert record["reason"].startswith("exit code 1: OOM: the model")
        else:
            assert (record["status"], record["returncode"]) == ("ok", 0) and record["metrics"]["default"] > 0
    assert json.loads(process_files["report.json"])["answered_by"] == "the warm worker"


def _untimed(stdout: bytes) -> str:
    return re.sub(r"; trial [0-9.]+ ms$", "; trial X ms", stdout.decode(), flags=re.MULTILINE)


def test_without_a_worker_the_trial_is_its_process(warm: Path, tmp_path: Path) -> None:
    """No worker to ask (a Slurm run, a dry run) or the test's ``CLOUDAI_AICONFIGURATOR_WORKER = "0"``: no
    evaluation, the argv runs; a worker gone after the spec was built: the evaluation declines (None)."""
    workload, args = Aiconfigurator(), POINTS["agg"]
    off = JobContext(tmp_path, install_path=warm, env={"CLOUDAI_AICONFIGURATOR_WORKER": "0"})
    assert workload.evaluate(args, off) is None
    context = JobContext(tmp_path / "gone", install_path=warm)
    with worker.listening(b"\0cloudai-aiconfigurator-test-nobody-listens"):
        gone = workload.evaluate(args, context)
        assert gone is not None and gone(None) is None
    context.job_dir.mkdir()
    assert not list(context.job_dir.iterdir())  # it wrote nothing
    system = StandaloneSystem(StandaloneSystemConfig(name="local", install_path=warm, output_path=tmp_path))
    job, files = run_job(system, JobSpec("gone", tuple(workload.argv(args, context)), context.job_dir, evaluate=gone))
    assert job.job_id != str(os.getpid()) and job.status == "ok"  # the argv ran (and asked the worker it found)
    assert b"by the warm worker;" in files["stdout.txt"]


def test_no_answer_within_the_time_limit_is_the_jobs_timeout(tmp_path: Path) -> None:
    """A worker that takes the request and never answers: the job times out at its limit, as its process would
    have been stopped there (status, reason, returncode of a killed process), and is not run again as a process."""
    name = b"\0cloudai-aiconfigurator-test-silent-" + str(os.getpid()).encode()
    workload, context = Aiconfigurator(), JobContext(tmp_path / "1")
    system = StandaloneSystem(StandaloneSystemConfig(name="local", install_path=tmp_path, output_path=tmp_path))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent, worker.listening(name):
        silent.bind(name)
        silent.listen(1)  # the kernel completes the connection; nobody reads it
        argv = tuple(workload.argv(POINTS["agg"], context))
        evaluate = workload.evaluate(POINTS["agg"], context)
        job = system.submit(JobSpec("1", argv, context.job_dir, time_limit_s=0.2, evaluate=evaluate))
    assert (job.status, job.reason, job.returncode) == ("timeout", "time limit of 0.2s reached", -9)
    assert job.job_id == str(os.getpid()) and not system.live_jobs()
    assert (context.job_dir / "stderr.txt").read_text() == "no answer from the warm worker within the time limit\n"


GRID = """name = "t"
test_template_name = "Aiconfigurator"
agent = "{agent}"
agent_steps = 4
[cmd_args]
model_name = "meta-llama/Meta-Llama-3.1-70B"
system = "h200_sxm"
isl = 4000
osl = 500
  [cmd_args.agg]
  tp = [2, 4]
  batch_size = [8, 16]
"""


class _Repeat(BaseAgent):
    """Asks two points, then each again: the second asks must come from the trial cache."""

    name = "aiconf_repeat"
    plan: ClassVar[list[dict[str, Any]]] = [
        {"agg.tp": 2, "agg.batch_size": 8}, {"agg.tp": 4, "agg.batch_size": 16},
        {"agg.tp": 2, "agg.batch_size": 8}, {"agg.tp": 4, "agg.batch_size": 16},
    ]  # fmt: skip

    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None:
        asked = self.env.next_step - 1
        return (self.env.next_step, self.plan[asked]) if asked < len(self.plan) else None

    def update_policy(self, feedback: Feedback) -> None:
        pass


def cloudai_run(warm: Path, root: Path, agent: str, *more: str) -> list[dict[str, str]]:
    """``cloudai run`` of GRID with ``agent`` in this process (its trials then run in this process's id); rows."""
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "tests" / "t.toml").write_text(GRID.format(agent=agent))
    (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    system = f'name = "local"\nscheduler = "standalone"\ninstall_path = "{warm}"\noutput_path = "{root / "out"}"\n'
    (root / "system.toml").write_text(system)
    args = ["run", "--system-config", root / "system.toml", "--tests-dir", root / "tests",
            "--test-scenario", root / "s.toml", *more]  # fmt: skip
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with next((root / "out").glob("*/t/0/trajectory.csv")).open() as f:
        return list(csv.DictReader(f))


def test_resume_and_the_cache_treat_in_process_trials_as_jobs(
    warm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grid run in-process, cut after its second row (a crash) and resumed: the same rows as the uninterrupted
    run, the recorded steps untouched, the others run again (their first dirs set aside). Then a repeated point is
    a cache hit: no job dir, the measurement repeated."""
    rows = cloudai_run(warm, tmp_path, "grid_search")
    iteration = next((tmp_path / "out").glob("*/t/0"))
    assert [r["status"] for r in rows] == ["ok"] * 4
    assert {json.loads((iteration / r["step"] / "job.json").read_text())["job_id"] for r in rows} == {str(os.getpid())}
    kept = {step: (iteration / step / "job.json").read_bytes() for step in ("1", "2")}
    trajectory = iteration / "trajectory.csv"
    trajectory.write_text("".join(trajectory.read_text().splitlines(keepends=True)[:3]))  # header, steps 1 and 2
    resumed = cloudai_run(warm, tmp_path, "grid_search", "--resume", iteration.parents[1])

    def measured(row: dict[str, str]) -> tuple[str, ...]:
        return row["step"], row["action"], row["observation"], row["reward"], row["status"]

    assert [measured(r) for r in resumed] == [measured(r) for r in rows]
    assert {step: (iteration / step / "job.json").read_bytes() for step in ("1", "2")} == kept
    assert sorted(p.name for p in iteration.iterdir() if p.is_dir()) == ["1", "2", "3", "3.cancelled", "4",
                                                                        "4.cancelled"]  # fmt: skip

    monkeypatch.setitem(AGENTS._loaded, _Repeat.name, _Repeat)  # pyright: ignore[reportPrivateUsage]
    rows = cloudai_run(warm, tmp_path / "cache", _Repeat.name)
    assert [r["status"] for r in rows] == ["ok", "ok", "cached", "cached"]
    assert [r["observation"] for r in rows[2:]] == [r["observation"] for r in rows[:2]]
    iteration = next((tmp_path / "cache" / "out").glob("*/t/0"))
    assert sorted(p.name for p in iteration.iterdir() if p.is_dir()) == ["1", "2"]
