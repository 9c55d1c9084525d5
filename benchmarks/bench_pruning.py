"""Pruning (issue 16): wall-clock to reach 98 % of the optimum with and without Optuna's pruner.

    uv run python benchmarks/bench_pruning.py [--seeds 5] [--first-seed 0] [--steps 40] [--duration 2]
        [--pruner '{ type = "percentile", percentile = 25.0, n_startup_trials = 3, poll_s = 0.02 }']

The landscape is ``Synthetic`` on the recommended space (4 nodes, 256 MiB; algo, chunk_kb 64-8192
log, num_channels 1-32) where each trial takes ``--duration`` seconds and writes 10 progress lines
(``progress_chunks``: the running mean of per-chunk measurements with 5 % noise each, which a
trial's first line already ranks with Spearman 0.98 against its final bus_bw over the space).
Each seed runs the real CLI twice, optuna TPE (same seed) without and with ``--pruner``, by
default the default pruner (successive halving, Optuna's reduction factor 4: a trial goes on past
progress lines 1 and 4 only while in the top quarter of every trial that got that far), read
every 0.02 s (a tenth of the time between two progress lines of a 2 s trial).

The pruning run gets twice the steps (``--steps`` x 2): its steps are cheaper, and what counts is
the wall-clock to the target, not the number of trials. Printed per seed and in total: the
wall-clock from the first job's submission to the end of the first job whose bus_bw reached 98 %
of the grid optimum (``synthetic_model.optimum``; job.json times), the whole sweep's wall, the
final best, and the ratios without/with pruning. A seed that never reaches 98 % counts its whole sweep (and is marked).

Measured on a 2-core machine (load average 0.1 at the start, 0.0 at the end), seeds 0-4:

    seed 0: plain 41.0 s | pruning 23.7 s (14.3 s of it in full trials), 48 pruned
    seed 1: plain 49.0 s | pruning 28.8 s (20.6 s), 56 pruned
    seed 2: plain 14.3 s | pruning  7.1 s ( 6.1 s), 60 pruned
    seed 3: plain 10.2 s | pruning  6.6 s ( 6.1 s), 67 pruned
    seed 4: plain 28.5 s | pruning 10.7 s ( 6.1 s), 57 pruned
    total wall to 98 %: plain 143.0 s, pruning 76.9 s -> 1.86x less (in full trials: 142.7 s, 53.2 s)

every seed reaching 98 % both ways (final best 55.5-56.1 GB/s with pruning, 55.9-56.1 without).
Seeds 5-9 (``--first-seed 5``): 155.4 s vs 71.5 s, 2.17x: five seeds are a small sample.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cloudai.reports.background import wait_for_report
from cloudai.workloads.synthetic_model import optimum as grid_optimum
from cloudai.workloads.synthetic_model import recommended_space

TEST = """name = "bench"
test_template_name = "Synthetic"
agent = "optuna"
agent_steps = {steps}
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
[agent_config]
seed = {seed}
{pruner}
[cmd_args]
duration_s = {duration}
progress_chunks = {chunks}
message_size = 268435456
algo = ["ring", "tree", "nvls", "collnet"]
chunk_kb = {{ low = 64, high = 8192, log = true, dtype = "int" }}
num_channels = {{ low = 1, high = 32, dtype = "int" }}
"""
CHUNKS = 10
PRUNER = "{ poll_s = 0.02 }"  # the default pruner (successive halving), read at a tenth of a progress line


def run(root: Path, seed: int, steps: int, duration: float, pruner: str | None) -> Path:
    root.mkdir(parents=True)
    (root / "tests").mkdir()
    line = f"pruner = {pruner}" if pruner else ""
    test = TEST.format(steps=steps, seed=seed, duration=duration, chunks=CHUNKS, pruner=line)
    (root / "tests" / "bench.toml").write_text(test)
    (root / "s.toml").write_text('name = "b"\n[[Tests]]\nid = "t"\ntest_name = "bench"\nnum_nodes = 4\n')
    args = [sys.executable, "-m", "cloudai", "run", "--tests-dir", str(root / "tests"), "--test-scenario",
            str(root / "s.toml"), "--output-dir", str(root / "out")]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"run failed:\n{done.stdout}\n{done.stderr}")
    (run_dir,) = (root / "out").iterdir()
    return run_dir / "t" / "0"


def measure(directory: Path, target: float) -> tuple[float, float, float, bool, float]:
    """(wall to target, whole sweep wall, final best, reached, seconds of it in trials that ran to the end)
    from the trials' job.json times."""
    jobs = sorted((json.loads(p.read_text()) for p in directory.glob("*/job.json")), key=lambda j: j["submitted_at"])
    start = jobs[0]["submitted_at"]
    end = max(j["ended_at"] for j in jobs)
    best, reach = 0.0, None
    for job in sorted(jobs, key=lambda j: j["ended_at"]):
        value = job.get("metrics", {}).get("bus_bw", 0.0)
        best = max(best, value)
        if reach is None and value >= target:
            reach = job["ended_at"] - start
    until = start + (reach if reach is not None else end - start)
    full = sum(j["ended_at"] - j["submitted_at"] for j in jobs if j["status"] == "ok" and j["ended_at"] <= until)
    return (reach if reach is not None else end - start), end - start, best, reach is not None, full


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--pruner", default=PRUNER, help="agent_config.pruner of the pruning run (a TOML inline table)")
    ns = parser.parse_args()
    candidates, fixed = recommended_space()
    _, optimum = grid_optimum(candidates, fixed=fixed)
    target = 0.98 * optimum
    print(f"optimum bus_bw {optimum:.2f} GB/s (grid); target 98 % = {target:.2f}; {ns.steps} steps of "
          f"{ns.duration:g} s, {CHUNKS} progress lines each; pruner = {ns.pruner}")  # fmt: skip
    totals = {False: [0.0, 0.0, 0.0], True: [0.0, 0.0, 0.0]}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(ns.first_seed, ns.first_seed + ns.seeds):
            row = []
            for prune in (False, True):
                t0 = time.perf_counter()
                steps = ns.steps * 2 if prune else ns.steps
                directory = run(Path(tmp) / f"{seed}-{prune}", seed, steps, ns.duration, ns.pruner if prune else None)
                elapsed = time.perf_counter() - t0
                wait_for_report(directory.parent.parent)  # the next run starts with no report being rendered
                reach, sweep, best, reached, full = measure(directory, target)
                totals[prune][0] += reach
                totals[prune][1] += sweep
                totals[prune][2] += full
                statuses = [json.loads(p.read_text())["status"] for p in directory.glob("*/job.json")]
                mark = "" if reached else " (not reached)"
                row.append(f"{'pruning' if prune else 'plain'}: to 98 % {reach:6.1f} s{mark} "
                           f"({full:4.1f} s of it in full trials), sweep {sweep:5.1f} s, best {best:5.2f}, "
                           f"{statuses.count('cancelled')} pruned, "
                           f"run {elapsed:5.1f} s")  # fmt: skip
            print(f"seed {seed}: " + " | ".join(row), flush=True)
    plain, pruned = totals[False], totals[True]
    print(f"total wall to 98 %: plain {plain[0]:.1f} s, pruning {pruned[0]:.1f} s -> {plain[0] / pruned[0]:.2f}x less "
          f"(of it in trials that ran to the end: plain {plain[2]:.1f} s, pruning {pruned[2]:.1f} s)")  # fmt: skip
    print(f"total sweep wall:   plain {plain[1]:.1f} s, pruning {pruned[1]:.1f} s -> {plain[1] / pruned[1]:.2f}x less")


if __name__ == "__main__":
    main()
