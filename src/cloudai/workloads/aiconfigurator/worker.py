"""The warm worker's lifetime on cloudai's side: started before a run's first trial, stopped after its last.

``runner.py worker`` (see ``runner``'s docstring for the protocol) runs in the aiconfigurator environment as a
child of cloudai, outside every job, so the system's end-of-job cleanup never reaches it. Its first line says
whether it listens (``ready``) or another worker already does (``running``: a test session's, another run's; it
is used, not stopped). Anything else (the environment broke) leaves the trials to estimate cold, each in its own
process: slower, the same numbers.

While a worker listens, ``oom(request)`` asks it whether a configuration fits GPU memory and whether the model
takes it at all (``Aiconfigurator.constraint``), so a point the model rules out is ``infeasible`` before any step
is spent on it. Without one (a
Slurm run, ``CLOUDAI_AICONFIGURATOR_WORKER=0``, a dry run) it says nothing and such a point is a failed trial
with the model's reason, as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cloudai.steps import Evaluation
from cloudai.workloads.aiconfigurator import runner
from cloudai.workloads.aiconfigurator.catalog import ENV, RUNNER

LOG = logging.getLogger(__name__)
ASK_TIMEOUT_S = 120.0  # a first ask of a (system, backend) loads its database (~2 s); a stuck worker is not waited on
_listening: list[bytes] = []  # the socket name of the worker the current run holds open (none: no session)
_said: dict[str, str | None] = {}  # request JSON -> the model's OOM reason, or None (fits, or no answer to keep)
_answered: OrderedDict[str, dict[str, Any]] = OrderedDict()  # request JSON -> the estimate ``oom`` was answered
KEPT = 256  # answers kept for the trials of the points ``oom`` let through (a trial follows its check at once)
_out_of_memory: list[dict[str, Any]] = []  # the points (flat cmd_args) the model said do not fit, this run


# How the package refuses an MoE worker whose moe_tp x moe_ep is not its tp x dp: ``args.moe_problem`` cannot tell
# for moe_tp = moe_ep = 1, which a dense model takes with any tp (CloudAI's files write it) and an MoE model refuses.
# Once it said so for a model, the run knows the model is MoE (``remember_moe``) and the rule refuses 1 x 1 too.
WIDTH_MISMATCH = "Parallelism width mismatch"
_moe_models: set[str] = set()  # model_name values the model refused moe_tp = moe_ep = 1 for, this run


def oom(request: dict[str, Any]) -> str | None:
    """The model's own reason why it refuses ``request`` (``cli_estimate``'s keyword arguments): it does not fit
    GPU memory (``OOM: ...``), or the model rejects it before estimating (a MoE width other than the attention
    width, no data in the database for that MoE shape); None: it fits, or no worker to ask. Remembered per
    request for the run: a sampler redrawing a point it was refused pays a dict look-up. The worker answers with
    its memoised estimate, which the point's trial then reuses: a point that fits costs nothing extra."""
    if not _listening:
        return None
    key = json.dumps(request, sort_keys=True)
    if key in _said:
        return _said[key]
    try:
        answer = runner.ask_worker(_listening[-1], {"fits": request}, ASK_TIMEOUT_S)
    except (OSError, ValueError):  # the worker went away: the trial estimates itself, as without one
        return None
    _said[key] = None if answer.get("ok", True) else str(answer.get("reason") or "the model refuses it")
    if _said[key] is None and "answer" in answer:
        _answered[key] = answer["answer"]
        if len(_answered) > KEPT:
            _answered.popitem(last=False)
    return _said[key]


def evaluation(request: dict[str, Any], total_gpus: int | None, job_dir: Path) -> Evaluation | None:
    """The trial of ``request`` run in cloudai's process (``Workload.evaluate``): it asks the worker the run holds
    open and writes the job dir's files with ``runner.record``, as the trial process would (the same files, the
    same stdout, the same exit code), without the process (~60 ms idle) around a ~3 ms estimate. None without a
    worker to ask (a Slurm run, a dry run, ``CLOUDAI_AICONFIGURATOR_WORKER=0``): the trial is its process. The
    evaluation itself declines (None) when the worker has gone (it ended mid-run; or, without a time limit, gave
    no answer in ``ASK_TIMEOUT_S``): the system then runs the process, which estimates itself, as it always did.
    No answer within the job's time limit is the job's timeout, as its process would have been stopped there."""
    if not _listening:
        return None
    name = _listening[-1]

    def run(time_limit_s: float | None) -> tuple[int, str, str] | None:
        start = time.perf_counter()
        answer = _answered.pop(json.dumps(request, sort_keys=True), None)  # ``oom`` asked it a moment ago
        try:
            answer = answer or runner.ask_worker(name, request, time_limit_s or ASK_TIMEOUT_S)
        except TimeoutError:  # with a time limit: past it, as its process would be (the system says timeout)
            return (1, "", "no answer from the warm worker within the time limit\n") if time_limit_s else None
        except (OSError, ValueError):
            return None
        code, text = runner.record(job_dir, request, total_gpus, answer, runner.WARM, start)
        return code, text, ""

    return run


@contextlib.contextmanager
def listening(name: bytes) -> Iterator[None]:
    """Within the block, ``oom`` asks the worker listening on ``name``."""
    _listening.append(name)
    try:
        yield
    finally:
        _listening.remove(name)
        if not _listening:
            forget()


def forget() -> None:
    """Drop what this run learned of the model (its answers, what does not fit, which models are MoE): a run knows
    only its own steps (the benchmark's searches share one worker, not their knowledge)."""
    _said.clear()
    _answered.clear()
    _out_of_memory.clear()
    _moe_models.clear()


def remember_moe(model_name: str) -> None:
    """Keep that the model refused a width mismatch of ``model_name`` (an MoE model), for the run's rule."""
    if _listening:
        _moe_models.add(model_name)


def moe_models() -> set[str]:
    """The ``model_name`` values this run's model refused a MoE width mismatch for (``remember_moe``)."""
    return _moe_models


def out_of_memory() -> list[dict[str, Any]]:
    """The points (flat ``cmd_args``) the model said do not fit GPU memory in this run (``remember_oom``)."""
    return _out_of_memory


def remember_oom(point: dict[str, Any]) -> None:
    """Keep a point the model said does not fit, for the run's vectorised rule (``Aiconfigurator.constraint_mask``)."""
    if _listening and point not in _out_of_memory:
        _out_of_memory.append(point)


@contextlib.contextmanager
def warm_worker(install_path: Path) -> Iterator[None]:
    """A warm worker for the trials run inside the block (none when the environment is not installed or
    ``CLOUDAI_AICONFIGURATOR_WORKER=0``)."""
    if os.environ.get("CLOUDAI_AICONFIGURATOR_WORKER", "1") == "0" or not ENV.installed(install_path):
        yield
        return
    proc, said = launch(install_path)
    try:
        if said in ("ready", "running"):
            with listening(name(install_path)):
                yield
        else:
            yield
    finally:
        if proc is not None:
            stop(proc)


def name(install_path: Path) -> bytes:
    """The abstract socket name the worker of the environment at ``install_path`` listens on."""
    return runner.worker_name(str(ENV.path(install_path)))


def start(install_path: Path) -> subprocess.Popen[str] | None:
    """Start a worker; the process when this call started one that listens, else None."""
    return launch(install_path)[0]


def launch(install_path: Path) -> tuple[subprocess.Popen[str] | None, str]:
    """Start a worker: the process when this call started one that listens (else None), and its first line
    (``ready``; ``running``: another worker listens; anything else: none does)."""
    with open(ENV.path(install_path) / "cloudai-worker.log", "a") as log:
        proc = subprocess.Popen(
            [str(ENV.python(install_path)), str(RUNNER), "worker"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            start_new_session=True,  # a Ctrl-C to cloudai's group is cloudai's to handle; it stops the worker
        )
    assert proc.stdout is not None
    said = proc.stdout.readline().strip()
    if said == "ready":
        return proc, said
    proc.wait()
    if said != "running":
        LOG.warning("the aiconfigurator worker did not start (%s); trials estimate cold", said or "no answer")
    return None, said


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
