"""Report generation time for synthetic 10 000-step DSE trajectories and a 5 000-step live-RL run.

    uv run python benchmarks/bench_report.py [--steps N] [--keep] [--big-steps N] [--big-runs N] [--dse-runs N]
        [--against REV]

Writes a results dir in the layout `cloudai run` leaves (run.json, trajectory.csv, env.csv), times
``generate_report`` on it twice (cold: imports included; then warm) and prints wall and CPU seconds (CPU is
the steadier number on a busy machine). Then times what the end of every plain `cloudai run` adds
(``generate_report`` + ``print_summary`` in a fresh process) and lists any heavy module it imported (there
should be none).

Issue 39 item 6, what a user waits for, each the real CLI in a fresh process:
- the end of a 10-trial DSE: ``cloudai run`` of 10 optuna trials of Synthetic (duration 0), from the last
  trial's row in trajectory.csv (its mtime) to the process's exit; aim <= 0.3 s;
- ``cloudai generate-report`` of a 100 000-step run: wall time and peak RSS, next to a process that only reads
  the same records (``load_run``: the floor); aim <= 1 s.
``--against REV`` (default ``main``; ``''`` for none) runs both of these with REV's ``src/`` (``git archive``,
on PYTHONPATH) beside this tree's (the DSE ends: REV's first; generate-report: ``--big-runs`` rounds, each tree in
turn, medians), and says whether the two trees wrote byte-identical report.html and
summary.csv for the 100 000-step run (the fresh processes run with ``PYTHONHASHSEED=0``: Optuna's importance
order of equally important knobs follows the hash seed).
Issue 39 before -> after (this script on main 9d28f6b, then on the interactive report; 2 shared cores, same minute):
10-trial DSE end 0.82 s -> 0.13 s median; generate-report of 100 000 steps 4.94 -> 4.27 s CPU, peak RSS 258 ->
215 MiB (reading the records alone: 1.85 s, 169 MiB); generate_report of 10 000 steps 0.68 -> 0.36 s CPU warm.
Then the column reader and the tables of long runs (``--against main`` at e553009, the fixture as cloudai writes
trajectory.csv, 2 shared cores at load 4-8): 100 000 steps 6.43 -> 2.63 s CPU, peak RSS 339 -> 214 MiB, reading the
records alone 1.93 -> 1.10 s CPU; reports byte for byte the same; 10-trial DSE end 0.36 -> 0.31 s median;
generate_report of 10 000 steps 0.24 s CPU warm. On main's own fixture (actions as ``json.dumps`` writes them, no
reason column: the column reader makes each key) 6.17 -> 2.87 s CPU, 338 -> 215 MiB.
Then the exit and the imports (``--against main`` at dc59227, same conditions): 100 000 steps 2.42 -> 2.22 s CPU
(2.65 -> 2.37 s in a busier minute), peak RSS 215 -> 209 MiB: ``generate-report`` leaves its records to the OS at
exit instead of the collector's last passes (``gc.freeze`` at exit, ~0.3 s), and imports no pydantic; reports byte
for byte the same; 10-trial DSE end 0.110 -> 0.102 s median (8 interleaved runs each).
Then C passes over columns in the page's long loops and no young-generation pass over the records when the collector
comes back on (``--against main`` at 4ea3eae, ``--big-runs 3`` interleaved, 2 shared cores at load 3-5): 100 000
steps 2.13 -> 1.91 s CPU median (ranges 2.11-2.20 and 1.85-1.95), peak RSS 208 -> 205 MiB, reading the records
alone 1.03 -> 0.94 s CPU; reports byte for byte the same; 10-trial DSE end unchanged (0.152 vs 0.145 s median of
12 interleaved runs). Still ~2x the 1 s aim. Where the 1.9 s goes (py-spy): reading 100 000 rows into ``Step``
records ~0.8 s (the actions' JSON 0.15, their key check by re-encoding 0.15, csv 0.1, env.csv 0.17), Optuna's
import 0.15-0.2 s, the page ~0.9 s (regimes 0.2, knob charts 0.14, rows table 0.08, top table 0.07), each a few
passes over 10^5 objects where cache misses cost more than the bytecode: the next step is column records (no
object per step) through the report modules.
Then fewer objects per step and regimes over columns (``--against main`` at 6605985, ``--big-runs 5`` interleaved,
2 shared cores at load 3-4): 100 000 steps 1.89 -> 1.50 s CPU median (ranges 1.84-1.93 and 1.46-1.56), peak RSS
206 -> 161 MiB, reading the records alone 0.92 -> 0.71 s CPU and 166 -> 112 MiB; reports byte for byte the same;
10-trial DSE end unchanged (0.12 vs 0.12 s median of 12). What did it: a chunk's action cells read as one
JSON array (key strings made once per chunk, not per cell; ~0.06 s), one str per distinct status and reason (every
``status in SCORED`` and group by status then compares one object: ~0.06 s), each distinct observation cell decoded
once, env.csv's dicts built a column at a time, regimes' per-configuration means by ``np.unique``/``np.bincount``
(0.24 -> 0.15 s), knob boxes grouped by one stable sort and sorted in numpy (0.165 -> 0.135 s), the top table
skipping configurations with fewer steps than regimes without a call each (0.08 -> 0.06 s), a step chart's
envelope by ``min``/``max`` of each bin's slice (a 90 000-point series 6.7 -> 3.8 ms). Tried and dropped
(measured no faster): more C passes instead of one Python loop (each pass over 10^5 ``Step`` objects costs ~5-10 ms
in cache misses, whatever does it), a decoded-once float column, a hand-written ``Step.__init__``. Where the 1.5 s
goes now: imports ~0.25 s (numpy 0.1, which Optuna needs anyway, Optuna 0.07, the CLI 0.05), reading ~0.65 s (csv 0.1,
the actions' JSON and their key check ~0.2, ``Step`` objects ~0.1, env.csv ~0.1), the page ~0.6 s (regimes 0.15,
knob charts 0.13, importance 0.07, rows table 0.07, top table 0.06, the three step charts 0.09). The 1 s aim needs
the trajectory held as columns (one list or array per field, ``Step`` objects made only for the few rows a table
shows) through every report module: the reader already has the columns; the page's modules do not take them yet.
Then a few more C passes (``--against main`` at ee8e3bc, ``--big-runs 5`` interleaved, 2 shared cores at load 2-4):
100 000 steps 1.55 -> 1.52 s CPU median (ranges 1.49-1.63 and 1.46-1.57; 7 interleaved runs of the bare CLI: 1.55 ->
1.50), peak RSS 161 -> 157 MiB; reports byte for byte the same; 10-trial DSE end 0.17 vs 0.14 s median of 5. What
did it: the best-so-far line by numpy columns (24 -> 16 ms), a range param's ~2 10^4 distinct env floats labelled
by numpy (``RegimeBins.label_floats``; regimes 0.138 -> 0.129 s), the importance's distinct configurations by one
``dict(zip(...))``, the actions' key check without the encoder's cycle check (0.092 -> 0.081 s). Where the 1.5 s
goes now (py-spy, ``--nonblocking``): reading 0.64 s (csv 0.08, the actions' JSON 0.06 and their key check by
re-encoding 0.13, numbers 0.04, ``Step`` objects 0.03, env.csv 0.14), the page 0.70 s (regimes 0.15, knob charts
0.14, importance 0.12 with Optuna's import 0.05, best line and reward chart 0.08, top table 0.06, the rows table's
JSON 0.07), imports and start-up the rest. No single item left is over 10%; the 1 s aim still needs the columns
held on ``Trajectory`` through the page's modules (each pass over 10^5 ``Step`` objects ~5-10 ms of cache misses,
~30 such passes), and a key check cheaper than re-encoding every action (tried on paper: per-knob templates save
~20 ms at much risk).
Then two cores (``--against 6c03414``, ``--big-runs 7`` interleaved, the 2-core VM idle, five runs of this script):
100 000 steps 1.41-1.45 -> 0.96-1.04 s wall median (1.51-1.55 -> 1.65-1.78 s CPU), peak RSS 157 -> 143-158 MiB;
reports byte for byte the same; 10-trial DSE end unchanged, 0.10-0.15 s (no second process below ~20 000 steps).
One process reads the records (0.42 s) while an aide forked at the start (``reports.aide``) reads env.csv's columns,
re-encodes each chunk's action cells as they are read (~0.28 s in all: the reader takes each cell as its key
unchecked, the ~0.1 s re-encoding) and ranks the importance (Optuna's import off the path). Then the charts are drawn
in a child forked once the records are read (``reports.forked``, ~0.32 s) beside the page's head, top table and
regimes here (~0.32 s); copy-on-write faults and the aide cost each side ~0.05 s, the CPU's rise. numpy is imported
once before the forks; the records are left to the OS at exit (their freeing, ~0.05 s, had moved to the return
once Optuna no longer held them). On one CPU (``taskset -c 0``) no fork: 1.37-1.40 -> 1.31-1.34 s.
Then the three processes rebalanced (``--against 6c03414 --big-runs 7``, the VM idle): 100 000 steps 1.44 -> 0.95 s
and 1.48 -> 1.00 s wall median in two runs (1.54-1.58 -> 1.62-1.67 s CPU); reports byte for byte the same. The aide
imported Optuna once the records were read, as the page's two halves began: three busy processes on two cores. It
now imports it while this process reads (the aide had ~0.15 s free there; it waits ~0.01 s on the aide in all), and
the top table makes step lists only for the configurations it can show (``regime_top``: 0.065 -> 0.049 s). The
phases now, each process busy in each: start-up 0.12 s, reading 0.40 s (the aide: env.csv, Optuna's import, the
key checks), the page's halves 0.31 s each (the aide ranks the importance beside them), 0.03 s to write and exit.
What is left is CPU (~1.6 s over two cores, ~0.1 s of it copy-on-write faults of the records in both halves).
The script uses only the CLI and the public API, so the same file measures any checkout (``--against``, or run
it with that checkout's environment: ``cd /work/main && uv run python <this file>``). Its fresh
processes use a bytecode cache (as an installed cloudai does; ``PYTHONDONTWRITEBYTECODE`` is dropped for them and
``PYTHONPYCACHEPREFIX`` points into the scratch dir), warmed by one untimed run of each.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_trial_cost import source_tree  # beside this script (sys.path[0])

KNOBS = {
    "threads": [1, 2, 4, 8, 16, 32, 64, 128],
    "algo": ["ring", "tree", "nvls"],
    "chunk_kib": None,  # continuous 64..4096
    "use_sharp": [True, False],
}


def synthetic_run(root: Path, steps: int, seed: int = 0, *, kind: str = "dse") -> Path:
    """``kind``: ``dse`` (mixed statuses, env.csv), ``wide`` (every step ok, one knob with a new value per
    step: thousands of categories) or ``live`` (a live-RL run, episodes of 50 steps)."""
    rng = random.Random(seed)
    run = root / f"bench-{kind}_2026-11-23_07-00-00"
    it_dir = run / "Tests.1" / "0"
    it_dir.mkdir(parents=True)
    entry = {"id": "Tests.1", "test_name": "nccl", "workload": "NcclTest", "iterations": 1, "agent_driven": True,
             "live_rl": False, "agent": "optuna", "agent_metrics": ["default"], "reward_function": "inverse",
             "env_params": ["background_load", "link_latency_us"],
             "env_param_regimes": {"background_load": {"candidates": ["0.0", "0.3", "0.6", "0.9"]},
                                   "link_latency_us": {"low": 0.5, "high": 20.0, "log": False, "bins": 3}}}  # fmt: skip
    if kind == "live":
        entry.update(live_rl=True, agent="bandit")
    manifest = {"scenario": "bench-scenario", "started_at": time.time(), "system": "standalone", "entries": [entry]}
    (run / "run.json").write_text(json.dumps(manifest))
    with (it_dir / "trajectory.csv").open("w", newline="") as tf, (it_dir / "env.csv").open("w", newline="") as ef:
        traj, env = csv.writer(tf), csv.writer(ef)
        traj.writerow(["step", "episode", "action", "reward", "observation", "status", "elapsed_s", "reason"])
        env.writerow(["step", "background_load", "link_latency_us"])
        action: dict = {}
        for step in range(1, steps + 1):
            status = "ok" if kind != "dse" else rng.choices(["ok", "cached", "failed", "constraint"], [90, 5, 3, 2])[0]
            if status != "cached" or not action:  # a cached step repeats an earlier action
                action = {k: rng.choice(v) if v else round(rng.uniform(64, 4096), 1) for k, v in KNOBS.items()}
                if kind == "wide":
                    action["variant"] = f"v{step}"  # a categorical knob with as many values as steps
            load, latency = rng.choice([0.0, 0.3, 0.6, 0.9]), round(rng.uniform(0.5, 20.0), 3)
            busbw = math.log2(action["threads"]) * (1.3 if action["algo"] == "tree" else 1.0) * (1 - 0.5 * load)
            reward = -1.0 if status in ("failed", "constraint") else busbw + rng.gauss(0, 0.2)
            episode = 1 + (step - 1) // 50 if kind == "live" else 1
            reason = {"failed": "exit code 1", "constraint": "broke bus_bw >= 1"}.get(status, "")
            cells = [as_written(action), round(reward, 4), as_written([busbw]), status, 1.0, reason]
            traj.writerow([step, episode, *cells])
            env.writerow([step, load, latency])
    return run


def as_written(value: object) -> str:
    """JSON as cloudai's trajectory writer puts it in a cell: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


PLAIN_REPORT = """
import contextlib, io, sys, time
from pathlib import Path
start, cpu = time.perf_counter(), time.process_time()
from cloudai.reports import generate_report, print_summary
run = Path(sys.argv[1])
generate_report([run])
with contextlib.redirect_stdout(io.StringIO()):
    print_summary(run)
heavy = [m for m in ("matplotlib", "optuna", "numpy", "pandas") if m in sys.modules]
print(f"{time.perf_counter() - start:.3f} {time.process_time() - cpu:.3f} {heavy}")
"""


def plain_run(root: Path, jobs: int = 3) -> Path:
    """A plain results dir as `cloudai run` leaves it: what the end of every plain run reports on."""
    run = root / "plain-scenario_2026-11-23_07-00-00"
    entries = [{"id": f"Tests.{i}", "test_name": "sleep", "workload": "Sleep"} for i in range(jobs)]
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"scenario": "plain-scenario", "entries": entries}))
    for e in entries:
        job = run / e["id"] / "0"
        job.mkdir(parents=True)
        record = {"status": "ok", "started_at": 0.0, "ended_at": 1.0}
        (job / "job.json").write_text(json.dumps(record))
        (job / "metrics.json").write_text(json.dumps({"default": 1.0}))
    return run


def timed(run: Path) -> tuple[float, float]:
    from cloudai.reports import generate_report

    start, cpu = time.perf_counter(), time.process_time()
    generate_report([run])
    return time.perf_counter() - start, time.process_time() - cpu


def read_only(run: Path) -> float:
    """The floor of any report: reading the records (``load_run``: run.json, trajectory.csv, env.csv)."""
    from cloudai.reports.load import load_run

    start = time.perf_counter()
    load_run(run)
    return time.perf_counter() - start


def bounded(root: Path, steps: int, live_steps: int) -> None:
    """Issue 18: the report's cost at scale, warm (imports paid), next to reading the same records."""
    for kind, n, what in (("wide", steps, "ok steps, a knob with one category per step"),
                          ("live", live_steps, "live-RL steps in episodes of 50")):  # fmt: skip
        run = synthetic_run(root, n, kind=kind)
        timed(run)  # imports and caches
        (wall, cpu), floor = timed(run), read_only(run)
        print(f"report of {n} {what}: {wall:.2f} s ({cpu:.2f} s CPU; aim <= 0.5 s) vs reading the records "
              f"{floor:.2f} s -> {wall / floor:.1f}x")  # fmt: skip


DSE_TEST = """name = "bench"
test_template_name = "Synthetic"
agent = "optuna"
agent_steps = 10
agent_config = { seed = 1, n_startup_trials = 4 }
[cmd_args]
duration_s = 0
message_size = [1048576, 268435456]
chunk_kb = { low = 64, high = 8192, log = true, dtype = "int" }
num_channels = [1, 4, 8]
"""


def child_env() -> dict[str, str]:
    """The environment of the timed processes: the caller's, with a bytecode cache of their own."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cache = str(Path(tempfile.gettempdir()) / "cloudai-bench-report-pycache")
    return {**env, "PYTHONPYCACHEPREFIX": cache, "PYTHONHASHSEED": "0"}


def end_of_dse(root: Path, src: Path | None = None) -> float:
    """Seconds from the last trial's row in trajectory.csv to the exit of the ``cloudai run`` that wrote it
    (``src``: another tree's ``src/``)."""
    shutil.rmtree(root, ignore_errors=True)
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "bench.toml").write_text(DSE_TEST)
    (root / "s.toml").write_text('name = "bench"\n[[Tests]]\nid = "t"\ntest_name = "bench"\n')
    args = [sys.executable, "-m", "cloudai", "run", "--tests-dir", str(root / "tests"),
            "--test-scenario", str(root / "s.toml"), "--output-dir", str(root / "out")]  # fmt: skip
    env = child_env() | {"CLOUDAI_REPORT": "inline"} | ({"PYTHONPATH": str(src)} if src else {})
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"cloudai run failed:\n{done.stdout}\n{done.stderr}")
    (trajectory,) = (root / "out").glob("*/t/0/trajectory.csv")
    return ended - trajectory.stat().st_mtime


def in_child(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one fresh process running ``argv`` (``env``: added)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env() | (env or {}))
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{argv} failed: {child.stderr.read().decode() if child.stderr else status}")
    child.returncode = 0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: KiB


READ_ONLY = (
    "import sys; from pathlib import Path; from cloudai.reports.load import load_run; load_run(Path(sys.argv[1]))"
)


def big_report(root: Path, steps: int, srcs: dict[str, Path | None], runs: int = 3) -> None:
    """``cloudai generate-report`` of a ``steps``-step run in a fresh process, against reading its records, for
    each tree of ``srcs`` (label -> its ``src/``, None: this one): ``runs`` of each, the trees in turn within each
    round (a busy minute weighs on both), their medians printed. Every tree's report.html and summary.csv must be
    byte for byte the same (``PYTHONHASHSEED`` fixed: Optuna's importance order of equal knobs follows it)."""
    run = synthetic_run(root / "big", steps)
    pages: dict[str, bytes] = {}
    found: dict[str, list[tuple[float, ...]]] = {label: [] for label in srcs}
    envs = {label: {"PYTHONPATH": str(src)} if src else {} for label, src in srcs.items()}
    for label in srcs:
        in_child([sys.executable, "-m", "cloudai", "generate-report", str(run)], envs[label])  # bytecode, page cache
        in_child([sys.executable, "-c", READ_ONLY, str(run)], envs[label])
    for _ in range(runs):
        for label in srcs:
            report = in_child([sys.executable, "-m", "cloudai", "generate-report", str(run)], envs[label])
            floor = in_child([sys.executable, "-c", READ_ONLY, str(run)], envs[label])
            found[label].append((*report, *floor))
            pages[label] = (run / "report.html").read_bytes() + (run / "summary.csv").read_bytes()
    size = (run / "report.html").stat().st_size / 1024
    for label, rows in found.items():
        medians = (statistics.median(column) for column in zip(*rows, strict=True))
        wall, cpu, rss, floor_wall, floor_cpu, floor_rss = medians
        cpus = sorted(r[1] for r in rows)
        print(f"[{label}] cloudai generate-report of {steps} steps (fresh process, median of {runs}): {wall:.2f} s "
              f"({cpu:.2f} s CPU, range {cpus[0]:.2f}-{cpus[-1]:.2f}; aim <= 1 s), peak RSS {rss:.0f} MiB, "
              f"{size:.0f} KiB report; reading the records alone: {floor_wall:.2f} s ({floor_cpu:.2f} s CPU), "
              f"{floor_rss:.0f} MiB")  # fmt: skip
    if len(pages) > 1:
        same = len(set(pages.values())) == 1
        print(f"report.html and summary.csv of every tree byte for byte the same: {'yes' if same else 'NO'}")


def main() -> None:
    parser = argparse.ArgumentParser(description="Time generate_report on a synthetic trajectory.")
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep the results dir and print its path")
    parser.add_argument("--live-steps", type=int, default=5_000)
    parser.add_argument("--big-steps", type=int, default=100_000)
    parser.add_argument("--dse-runs", type=int, default=5, help="10-trial runs timed (their median is shown)")
    parser.add_argument("--big-runs", type=int, default=3, help="generate-report runs per tree (median shown)")
    parser.add_argument("--against", default="main", help="git revision measured beside this tree ('' for none)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cloudai-bench-report-"))
    stack = contextlib.ExitStack()
    try:
        srcs: dict[str, Path | None] = {"this": None}
        if args.against:
            srcs = {args.against[:8]: stack.enter_context(source_tree(args.against)), **srcs}
        for label, src in srcs.items():
            end_of_dse(root / "dse", src)  # warms the bytecode cache
            ends = sorted(end_of_dse(root / "dse", src) for _ in range(args.dse_runs))
            print(f"[{label}] end of a 10-trial DSE (last trial to exit, {args.dse_runs} runs): median "
                  f"{statistics.median(ends):.2f} s, range {ends[0]:.2f}-{ends[-1]:.2f} s (aim <= 0.3 s)")  # fmt: skip
        big_report(root, args.big_steps, srcs, args.big_runs)
        run = synthetic_run(root, args.steps)
        (cold, cold_cpu), (warm, warm_cpu) = timed(run), timed(run)
        size_kib = (run / "report.html").stat().st_size / 1024
        print(f"generate_report: {args.steps} steps with env.csv in {cold:.2f} s ({cold_cpu:.2f} s CPU), "
              f"imports included; {warm:.2f} s ({warm_cpu:.2f} s CPU) warm; "
              f"{size_kib:.0f} KiB report")  # fmt: skip
        plain = [sys.executable, "-c", PLAIN_REPORT, str(plain_run(root))]
        subprocess.run(plain, capture_output=True, check=True, env=child_env())  # warms the bytecode cache
        done = subprocess.run(plain, capture_output=True, text=True, check=True, env=child_env())
        wall, cpu, heavy = done.stdout.split(" ", 2)
        print(
            f"end-of-run report of a plain run (3 jobs, cold process): {wall} s ({cpu} s CPU); heavy imports: {heavy}"
        )
        bounded(root, args.steps, args.live_steps)
        if args.keep:
            print(run / "report.html")
    finally:
        stack.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
