"""A big report's second processes (``reports.aide``, ``reports.forked``): answers from the other process when it
gives them, the same answers computed here whenever it does not, and the same page either way.

The unit tests fork this test process directly (``Aide.fork``; ``beside(fork=True)``): the functions they send
are pure and the children exit with ``os._exit``. The page is compared in fresh processes, where the report's own
rules (``forkable``: no other thread) let it fork, with the size thresholds lowered.
"""

from __future__ import annotations

import csv
import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cloudai.reports import aide, forked
from cloudai.reports.trajectory import action_key, read_steps_row_by_row, read_trajectory
from cloudai.reports.trajectory_cells import canonical_array
from cloudai.trajectory.records import TrajectoryWriter

HERE = os.getpid()


def whose() -> int:
    return os.getpid()


def only_here(value: int) -> int:
    """Raises anywhere but in the test's own process."""
    if os.getpid() != HERE:
        raise RuntimeError("not in the aide")
    return value * 2


def big(size: int) -> bytes:
    return b"x" * size


@pytest.fixture
def running() -> object:
    started = aide.Aide.fork()
    assert started is not None
    token = aide._current.set(started)
    yield started
    aide._current.reset(token)
    started.close()


def test_an_aide_answers_from_its_own_process(running: aide.Aide) -> None:
    assert aide.running()
    first, second = aide.later(whose), aide.later(whose)
    assert second.result() == first.result() == running.pid != os.getpid()


def test_what_the_aide_fails_is_computed_here(running: aide.Aide) -> None:
    failed, fine = aide.later(only_here, 21), aide.later(whose)
    assert failed.result() == 42  # raised in the aide: computed here
    assert fine.result() == running.pid  # the aide carries on after a failure


def test_an_answer_too_big_for_the_shared_memory_is_computed_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aide, "SHARED_BYTES", 1 << 16)
    started = aide.Aide.fork()
    assert started is not None
    token = aide._current.set(started)
    try:
        assert aide.later(big, 1 << 20).result() == big(1 << 20)
        assert aide.later(whose).result() == started.pid
    finally:
        aide._current.reset(token)
        started.close()


def test_a_killed_aide_costs_time_not_answers(running: aide.Aide) -> None:
    pending = aide.later(whose)
    os.kill(running.pid, signal.SIGKILL)  # the fixture's close() reaps it
    assert pending.result() in (running.pid, os.getpid())  # answered before it died, or computed here
    assert aide.later(whose).result() == os.getpid()


def test_without_an_aide_later_computes_here_and_nothing_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    with aide.started(False) as none:
        assert none is None and not aide.running()
        assert aide.later(whose).result() == os.getpid()
    monkeypatch.setattr(aide, "forkable", lambda: False)  # one CPU, no os.fork, or another thread running
    with aide.started(True) as refused:
        assert refused is None and aide.later(whose).result() == os.getpid()


def test_no_fork_beside_another_thread() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not aide.forkable()
    finally:
        release.set()
        other.join()


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """``beside`` forks whatever other threads this worker runs (its children only run the tests' pure functions and
    leave by ``os._exit``)."""
    monkeypatch.setattr(aide, "forkable", lambda: True)


@pytest.mark.usefixtures("forking")
def test_beside_returns_what_the_child_built_and_rebuilds_what_it_failed() -> None:
    assert forked.beside(whose, whose, fork=True)[0] != os.getpid()
    assert forked.beside(lambda: only_here(4), lambda: "here", fork=True) == (8, "here")  # failed there: made here
    assert forked.beside(whose, whose, fork=False) == (os.getpid(), os.getpid())


@pytest.mark.usefixtures("forking")
def test_a_fork_refused_by_the_system_builds_everything_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    assert forked.beside(whose, whose, fork=True) == (os.getpid(), os.getpid())
    assert aide.Aide.fork() is None


@pytest.mark.usefixtures("forking")
def test_beside_kills_and_reaps_its_child_when_here_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    children: list[int] = []
    fork = os.fork

    def recorded() -> int:
        pid = fork()
        if pid:
            children.append(pid)
        return pid

    def here() -> None:
        raise KeyError("boom")

    monkeypatch.setattr(os, "fork", recorded)
    with pytest.raises(KeyError):
        forked.beside(signal.pause, here, fork=True)  # the child would wait forever
    assert len(children) == 1
    with pytest.raises(ChildProcessError):  # reaped already: no zombie left behind
        os.waitpid(children[0], os.WNOHANG)


def _write(path: Path, cells: list[str]) -> None:
    rows = [f'{i},1,"{cell.replace(chr(34), chr(34) * 2)}",1.0,[1.0],ok,0.5,\n' for i, cell in enumerate(cells, 1)]
    path.write_text("step,episode,action,reward,observation,status,elapsed_s,reason\n" + "".join(rows))


@pytest.mark.parametrize(
    "cells",
    [
        ['{"a":1,"b":"x"}', '{"b":"x","a":1}', '{"a": 1,"b":"x"}'],  # unsorted, spaced: the same configuration
        ['{"a":"}', '{","b":1}', '{"c":1} , {"d":2}'],  # parsed as one array, split elsewhere than the cells
    ],
)
def test_cells_taken_as_their_own_keys_are_read_again_unless_the_aide_finds_them_canonical(
    tmp_path: Path, cells: list[str], running: aide.Aide
) -> None:
    path = tmp_path / "trajectory.csv"
    _write(path, cells)
    trusted = read_trajectory(path, trusted=True)  # each chunk's check by the aide
    reference = read_steps_row_by_row(path, [])
    assert [(s.step, s.action, s.key) for s in trusted.steps] == [(s.step, s.action, s.key) for s in reference]
    assert all(s.key == action_key(s.action) for s in trusted.steps)


def _run(root: Path, steps: int = 600) -> Path:
    """A results dir as ``cloudai run`` writes it: every scored and failed status, env params with regimes."""
    rng = random.Random(3)
    entry = {"id": "t", "test_name": "t", "workload": "Synthetic", "agent_driven": True, "agent": "optuna",
             "agent_metrics": ["bw"], "reward_function": "identity", "env_params": ["load", "jitter"],
             "env_param_regimes": {"load": {"candidates": ["0.0", "0.5"]},
                                   "jitter": {"low": 0.0, "high": 1.0, "log": False, "bins": 3}}}  # fmt: skip
    run = root / "run"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"scenario": "s", "started_at": 0.0, "entries": [entry]}))
    writer = TrajectoryWriter(run / "t" / "0", ("load", "jitter"))
    for step in range(1, steps + 1):
        action = {"algo": rng.choice(["ring", "tree"]), "n": rng.choice([1, 2, 4, 8]), "x": round(rng.random(), 3)}
        status = rng.choice(["ok"] * 8 + ["cached", "failed", "constraint"])
        reward = rng.gauss(float(action["n"]), 1.0) if status in ("ok", "cached") else math.nan
        writer.append(step=step, episode=1, action=action, reward=reward, observation=[reward], status=status,
                      elapsed_s=rng.random(), env={"load": rng.choice([0.0, 0.5]), "jitter": rng.random()},
                      reason="" if status in ("ok", "cached") else "exit code 1")  # fmt: skip
    writer.close()
    return run


def test_a_damaged_trajectory_read_with_the_aides_verdict_is_read_as_without(tmp_path: Path) -> None:
    path = _run(tmp_path, 300) / "t" / "0" / "trajectory.csv"
    lines = path.read_text().splitlines(keepends=True)
    lines[10] = '10,1,"{""algo"":",1.0,[1.0],ok,0.5,\n'  # not JSON
    lines[20] = lines[20].replace(',""n"":', ', ""n"":', 1)  # JSON, not as cloudai writes it
    lines[30] = '30,,"{""algo"":""ring""}",1.0,[1.0],ok,0.5,\n'  # no episode
    path.write_text("".join(lines) + '301,1,"{""algo')  # a torn last line
    trusted, plain = read_trajectory(path, trusted=True), read_trajectory(path)  # the checks made here
    assert [(s.step, s.key, str(s.reward)) for s in trusted.steps] == [
        (s.step, s.key, str(s.reward)) for s in plain.steps
    ]
    assert trusted.notes == plain.notes and len(plain.notes) == 2  # the bad JSON, the torn line


def test_a_cloudai_trajectory_is_canonical_chunk_by_chunk(tmp_path: Path) -> None:
    path = _run(tmp_path, 50) / "t" / "0" / "trajectory.csv"
    with path.open() as fh:
        cells = list(dict.fromkeys(row[2] for row in list(csv.reader(fh))[1:]))
    assert canonical_array(f"[{','.join(cells)}]")
    assert not canonical_array(f"[{','.join(cells).replace(':', ': ', 1)}]")


REPORT = """
import os, sys
from pathlib import Path
from cloudai.reports import aide, generate, render
forks = []
if sys.argv[2] == "two":
    aide.AIDE_BYTES, render.FORK_STEPS = 1, 1
    fork = os.fork
    def counted():
        forks.append(os.getpid())
        return fork()
    os.fork = counted
else:
    aide.AIDE_BYTES, render.FORK_STEPS = 1 << 62, 1 << 62
generate.generate_report([Path(sys.argv[1])])
print(len(forks))
"""


def test_a_page_built_in_three_processes_is_the_page_built_in_one(tmp_path: Path) -> None:
    run = _run(tmp_path)
    pages = {}
    for mode, forks in (("one", 0), ("two", 2)):  # the aide, then the page's second half
        done = subprocess.run([sys.executable, "-c", REPORT, str(run), mode], capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": "0"}, check=True)  # fmt: skip
        assert done.stdout.split() == [str(forks)]
        pages[mode] = (run / "report.html").read_bytes() + (run / "summary.csv").read_bytes()
    assert pages["one"] == pages["two"]
