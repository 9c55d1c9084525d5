"""The report's column reader and its tables for long runs give what reading the records row by row gives.

trajectory.csv is read a chunk of rows at a time, column by column when every row of the chunk parses
(``iter_steps``), and the top table estimates only the configurations that can rank (``regime_top``'s
``limit``). Here a run written by the real ``TrajectoryWriter`` (every status, env_params, a resumed run with
a gap and a confirmation) is read both ways, clean and damaged, at several chunk sizes: same steps, same notes,
same page, same tables.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import shutil
from pathlib import Path

import pytest

from cloudai.reports import regimes
from cloudai.reports.confirm import ConfirmRow, write_confirm
from cloudai.reports.env_csv import read_env
from cloudai.reports.load import AgentRun, load_run
from cloudai.reports.regime_top import regime_top
from cloudai.reports.render import run_page
from cloudai.reports.trajectory import Trajectory, action_key, iter_steps, read_steps_row_by_row, read_trajectory
from cloudai.trajectory.records import TrajectoryWriter

ENV = ("load", "jitter")
REASONS = {"failed": "exit code 3", "constraint": "broke lat <= 5", "infeasible": "OOM: 90 GiB > 80 GiB",
           "timeout": "time limit 2 s", "pruned": "pruned at 0.3"}  # fmt: skip
ENTRY = {"id": "t", "test_name": "t", "workload": "Synthetic", "agent_driven": True, "agent": "optuna",
         "agent_metrics": ["bw", "lat"], "reward_function": "identity", "env_params": list(ENV),
         "units": {"bw": "GB/s"},
         "env_param_regimes": {"load": {"candidates": ["0.0", "0.5"], "weights": [0.7, 0.3]},
                               "jitter": {"low": 0.0, "high": 1.0, "log": False, "bins": 3}}}  # fmt: skip
CANDIDATES = [{"algo": "ring", "n": 4, "x": 0.5}, {"algo": "tree", "n": 2, "x": 0.25}]


def _action(rng: random.Random) -> dict[str, object]:
    return {"algo": rng.choice(["ring", "tree", "nvls"]), "n": rng.choice([1, 2, 4]), "x": rng.choice([0.25, 0.5])}


def _append(writer: TrajectoryWriter, rng: random.Random, step: int, action: dict, status: str, load: float) -> None:
    bw = {"ring": 10.0, "tree": 12.0, "nvls": 8.0, "collnet": 13.0}[str(action["algo"])] * (1 - load) + rng.gauss(
        0, 0.5
    )
    scored = status in ("ok", "cached")
    observation = [bw, rng.choice([1.5, math.nan])] if scored else [math.nan, math.nan]
    writer.append(step=step, episode=1, action=action, reward=bw if scored else math.nan, observation=observation,
                  status=status, elapsed_s=0.0 if status == "infeasible" else rng.uniform(0.1, 2.0),
                  env={"load": load, "jitter": rng.random()}, reason=REASONS.get(status, ""))  # fmt: skip


def _run(root: Path) -> Path:
    """A results dir: 600 search steps over 26 configurations (8 measured in one regime only) and every status,
    resumed after a gap, then 2 candidates re-run 4 times each (confirm.csv)."""
    rng = random.Random(7)
    run = root / "run"
    it_dir = run / "t" / "0"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"scenario": "s", "started_at": 0.0, "entries": [ENTRY]}))
    statuses = ["ok"] * 80 + ["cached"] * 6 + ["failed", "constraint", "infeasible", "timeout", "pruned"] * 3
    writer = TrajectoryWriter(it_dir, ENV)
    for step in range(1, 401):
        if step % 50 == 0:  # measured once, on a quiet network only: no value over the regimes
            _append(writer, rng, step, {"algo": "collnet", "n": step // 50, "x": 0.5}, "ok", 0.0)
            continue
        _append(writer, rng, step, _action(rng), rng.choice(statuses), rng.choice([0.0, 0.5]))
    writer.close()
    writer = TrajectoryWriter(it_dir, ENV, resume=True)  # a resumed run: steps 401-419 were never recorded
    for step in range(420, 620):
        _append(writer, rng, step, _action(rng), rng.choice(statuses), rng.choice([0.0, 0.5]))
    confirm = []
    for draw in range(4):
        for candidate, action in enumerate(CANDIDATES, start=1):
            step = 620 + 2 * draw + candidate
            _append(writer, rng, step, action, "ok", [0.0, 0.5][draw % 2])
            confirm.append(ConfirmRow(step, candidate, action, draw))
    writer.close()
    write_confirm(it_dir, confirm)
    (it_dir / "best.toml").write_text("")
    return run


def _damage(run: Path) -> None:
    """Rows a column of the chunk cannot take: bad JSON, an empty episode, an action not as cloudai writes it,
    JSON with spaces around it, a step out of order, a torn last line; a damaged env.csv row and env cells that
    are not floats."""
    path = run / "t" / "0" / "trajectory.csv"
    rows = list(csv.reader(io.StringIO(path.read_text())))
    rows[30][2] = '{"algo": "ring"'  # bad JSON
    rows[75][1] = ""  # parse_row reads episode 0
    rows[140][2] = json.dumps(dict(reversed(json.loads(rows[140][2]).items())))  # keys unsorted, spaces
    rows[141][4] = f" {rows[141][4]} "
    rows[200][0] = "5"  # out of order
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    path.write_text(text.getvalue() + '700,1,"{""algo"":""ring""')  # torn
    env = run / "t" / "0" / "env.csv"
    lines = env.read_text().split("\n")
    lines[50] = "x,0.5"
    for n, load in ((60, "v1.2"), (61, "1"), (62, "true")):  # a word with a '.', an int, a bool
        step, _, jitter = lines[n].split(",")
        lines[n] = f"{step},{load},{jitter}"
    env.write_text("\n".join(lines))


def _row_by_row(it_dir: Path) -> Trajectory:
    notes: list[str] = []
    steps = read_steps_row_by_row(it_dir / "trajectory.csv", notes)
    traj = Trajectory(steps, list(dict.fromkeys(k for s in steps for k in s.action)), notes=notes)
    read_env(it_dir / "env.csv", traj)
    return traj


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fast-reader")
    clean = _run(root / "clean")
    damaged = root / "damaged" / "run"
    shutil.copytree(clean, damaged)
    _damage(damaged)
    return {"clean": clean, "damaged": damaged}


@pytest.mark.parametrize("kind", ["clean", "damaged"])
def test_columns_give_the_steps_and_notes_of_rows(runs: dict[str, Path], kind: str) -> None:
    it_dir = runs[kind] / "t" / "0"
    rows_notes: list[str] = []
    rows = [repr(s) for s in read_steps_row_by_row(it_dir / "trajectory.csv", rows_notes)]
    for chunk in (2, 7, 64, 4096):
        notes: list[str] = []
        assert [repr(s) for s in iter_steps(it_dir / "trajectory.csv", notes, chunk)] == rows, chunk
        assert notes == rows_notes, chunk
    reference = _row_by_row(it_dir)
    traj = read_trajectory(it_dir / "trajectory.csv")
    read_env(it_dir / "env.csv", traj)
    assert [repr(s) for s in traj.steps] == [repr(s) for s in reference.steps]  # env joined too
    assert traj.notes == reference.notes and traj.knobs == reference.knobs
    loads = [s.env.get("load") for s in traj.steps]
    assert {type(v) for v in loads} == ({float, str, int, bool, type(None)} if kind == "damaged" else {float})
    if kind == "damaged":
        assert len(traj.notes) == 5 and any("torn last line" in n for n in traj.notes)
        unsorted = next(s for s in traj.steps if s.step == 140)  # its cell is not its key: the key is made
        assert unsorted.key == action_key(unsorted.action) and unsorted.key.startswith('{"algo":')


@pytest.mark.parametrize("kind", ["clean", "damaged"])
def test_the_page_and_tables_are_those_of_the_row_by_row_records(runs: dict[str, Path], kind: str) -> None:
    run = load_run(runs[kind])
    (fast,) = run.agent_runs
    assert fast.confirmed and {s.status for s in fast.trajectory.steps} >= set(REASONS) | {"ok", "cached"}
    slow = _row_by_row(runs[kind] / "t" / "0")
    spec = run.entries[0].regime_spec
    assert spec is not None
    table = regime_top(slow, spec, fast.confirmed)
    assert [r.rank for r in table[:3]] == ["candidate 1", "candidate 2", "searched"]
    assert any(r.rank == "not in every regime" for r in table)
    for limit in (1, 3, 10, 17, len(table), len(table) + 5):
        assert repr(regime_top(fast.trajectory, spec, fast.confirmed, limit)) == repr(table[:limit]), limit
    assert repr(regimes.regimes(fast.trajectory, bins=spec.bins)) == repr(regimes.regimes(slow, bins=spec.bins))
    page = run_page(run)
    run.agent_runs = [AgentRun("t", 0, slow, confirmed=fast.confirmed, reasons=fast.reasons)]
    assert page == run_page(run)
