"""Constraints that shape the space (issue 25): Optuna with and without the rule, and counting 10^6 points.

    uv run python benchmarks/bench_constraints.py [--seeds 5] [--first-seed 0] [--budget 150]

The space is a 6-knob training space on 2 nodes of 8 GPUs (``tests/dse/training_rule.py``): tp {1,2,4,8},
pp {1,2,3,4,8}, cp {1,2,4}, vp {1,2,3,4,6}, mbs {1,2,3,4,8}, gbs {48,64,96,128,256,512,1024}: 10 500 points,
2 547 (24 %) valid under CloudAI's NeMoRun rule (tp*pp*cp divides the GPUs, gbs % (mbs*dp) == 0,
(num_layers/pp) % vp == 0). A trial is ``throughput`` (an analytic model of the knobs, in process: no job), so
wall time is the agent's own.

Per seed, Optuna TPE (same seed) runs twice up to ``--budget`` budgeted steps:

* aware: the env exposes the rule (``valid_points``/``violation``): a refused draw is told to TPE, recorded once
  as ``infeasible`` and costs no step;
* blind: CloudAI's way: every invalid point is submitted and costs a step (status ``constraint``).

Printed: budgeted steps and agent wall time until the first trial within 98 % of the best valid point (a run
that never gets there counts its whole budget, marked ``*``), refused draws, and the ratios. Then the time to
count the valid points of a 10^6-point grid (10 values per knob) vectorised (``constraint_mask``) against the
scalar rule per point (timed on 20 000 points, extrapolated), and a whole ``cloudai dry-run`` of that space.

Since TPE judges its candidates by the vectorised rule (``cloudai.agents.optuna_valid``), seeds 0-4: aware 16,
18, 26, 14, 15 steps (7-10 refused draws each, all in TPE's random startup), total 88 (was 135), median 15.
Before that, on this 2-core VM (a benchmark running beside it), seeds 0-4, budget 150, with the optuna agent's
defaults (local search on):

    seed 0: aware 14 steps 0.08 s (13 refused draws) | blind 73 steps 0.19 s
    seed 1: aware 19 steps 0.12 s (21 refused draws) | blind 83 steps 0.27 s
    seed 2: aware 26 steps 0.15 s (17 refused draws) | blind 57 steps 0.17 s
    seed 3: aware 50 steps 0.18 s (30 refused draws) | blind 67 steps 0.29 s
    seed 4: aware 26 steps 0.18 s (26 refused draws) | blind 27 steps 0.12 s
    total steps to 98 %: aware 135, blind 307 -> 2.27x fewer
    total agent wall to 98 %: aware 0.71 s, blind 1.04 s -> 1.47x
    median steps: aware 26, blind 67
    count 10^6 points: vectorised 2.8 ms, scalar ~39.8 s -> 14237x
    cloudai dry-run of the 10^6-point space: 1.78 s

Every seed reaches 98 % both ways. With real trials (minutes each) the wall time follows the steps: ~2.3x.
Before local search (issue 24): aware 170, blind 327 steps (1.92x). With ``agent_config.ordinal = true`` only 1
of 5 aware runs got there (TPE over indices stopped on repeats). The aware run also asks Optuna for every
refused draw. The dry-run's time is
Optuna's asks (20 refusals before it is handed a valid point, see ``cloudai.agents.optuna_agent``); the count
itself is milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.dse.training_rule: the test-local training workload and its env

SPACE: dict[str, Any] = {
    "cmd": "x",
    "tp": [1, 2, 4, 8],
    "pp": [1, 2, 3, 4, 8],
    "cp": [1, 2, 4],
    "vp": [1, 2, 3, 4, 6],
    "mbs": [1, 2, 3, 4, 8],
    "gbs": [48, 64, 96, 128, 256, 512, 1024],
    "num_nodes": 2,
}
MILLION: dict[str, Any] = {
    "cmd": "x",
    **{k: list(range(1, 11)) for k in ("tp", "pp", "cp", "vp", "mbs")},
    "gbs": [16 * i for i in range(1, 11)],
    "num_nodes": 4,
}


def best_valid() -> float:
    from tests.dse.training_rule import GPUS_PER_NODE, ToyTraining, throughput

    from cloudai.space import parse_space
    from cloudai.workloads.validity import ValidPoints

    space = parse_space(SPACE)
    rule = ValidPoints(space, ToyTraining(), GPUS_PER_NODE)
    return max(throughput(space.full(space.grid_point(i)), 16) for i in rule.first(space.grid_size))


def one_run(seed: int, aware: bool, budget: int, target: float) -> tuple[int, float, bool, int]:
    """(budgeted steps to the target, agent wall s to it, reached, refused draws)."""
    from tests.dse.training_rule import ModelEnv

    from cloudai.agents.optuna_agent import OptunaAgent
    from cloudai.agents.optuna_config import OptunaConfig
    from cloudai.space import parse_space

    env = ModelEnv(parse_space(SPACE), num_nodes=2, aware=aware)
    agent = OptunaAgent(env, OptunaConfig(seed=seed), max_steps=budget)
    start = time.perf_counter()
    agent.run()
    steps, refused = 0, 0
    for (_, _, status), at, reward in zip(env.rows, env.times, env.rewards, strict=True):
        refused += status == "infeasible"
        steps += status in ("ok", "constraint")  # what uses the budget (cached and infeasible do not)
        if status == "ok" and reward >= target:
            return steps, at - start, True, refused
    return steps, env.times[-1] - start, False, refused


def count_times() -> tuple[float, float, float]:
    """(vectorised count of 10^6 points, scalar per point x 10^6 extrapolated, a whole dry-run), in seconds."""
    from tests.dse.training_rule import GPUS_PER_NODE, ToyTraining

    from cloudai.space import parse_space
    from cloudai.workloads.base import Workload
    from cloudai.workloads.validity import ValidPoints

    class ScalarOnly(ToyTraining):
        constraint_mask = Workload.constraint_mask

    space = parse_space(MILLION)
    fast = []
    for _ in range(3):
        start = time.perf_counter()
        ValidPoints(space, ToyTraining(), GPUS_PER_NODE).count()
        fast.append(time.perf_counter() - start)
    start = time.perf_counter()
    ValidPoints(space, ScalarOnly(), GPUS_PER_NODE).mask(0, 20_000)
    scalar = (time.perf_counter() - start) * space.grid_size / 20_000
    return min(fast), scalar, dry_run_time()


def dry_run_time() -> float:
    """Wall time of ``cloudai dry-run`` (in process, after a warm-up) of the 10^6-point space with optuna."""
    from click.testing import CliRunner
    from tests.dse.training_rule import ToyTraining

    from cloudai.cli import cli
    from cloudai.workloads import WORKLOADS

    WORKLOADS._loaded["ToyTraining"] = ToyTraining
    lists = "\n".join(f"{k} = {v}" for k, v in MILLION.items() if isinstance(v, list))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        (root / "tests" / "t.toml").write_text(
            'name = "t"\ntest_template_name = "ToyTraining"\nagent = "optuna"\nagent_steps = 5\n'
            f'agent_metrics = ["default"]\n[cmd_args]\ncmd = "true"\n{lists}\n'
        )
        (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\nnum_nodes = 4\n')
        args = ["dry-run", "--tests-dir", str(root / "tests"), "--test-scenario", str(root / "s.toml")]
        times = []
        for i in range(2):
            start = time.perf_counter()
            result = CliRunner().invoke(cli, [*args, "--output-dir", str(root / f"out{i}")])
            times.append(time.perf_counter() - start)
            assert result.exit_code == 0, result.output
        print("  dry-run says:", next(line for line in result.output.splitlines() if "valid" in line).strip())
    return times[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=150)
    args = parser.parse_args()
    target = 0.98 * best_valid()
    print(f"space: 10500 points, target 98 % of the best valid point = {target:.1f}")
    totals: dict[bool, list[tuple[int, float, bool, int]]] = {True: [], False: []}
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for aware in (True, False):
            totals[aware].append(one_run(seed, aware, args.budget, target))
        (sa, wa, ra, na), (sb, wb, rb, _) = totals[True][-1], totals[False][-1]
        print(f"seed {seed}: aware {sa}{'' if ra else '*'} steps {wa:.2f} s ({na} refused draws) | "
              f"blind {sb}{'' if rb else '*'} steps {wb:.2f} s")  # fmt: skip
    aware_steps, blind_steps = (sum(r[0] for r in totals[k]) for k in (True, False))
    aware_wall, blind_wall = (sum(r[1] for r in totals[k]) for k in (True, False))
    print(f"total steps to 98 %: aware {aware_steps}, blind {blind_steps} -> {blind_steps / aware_steps:.2f}x fewer")
    print(f"total agent wall to 98 %: aware {aware_wall:.2f} s, blind {blind_wall:.2f} s "
          f"-> {blind_wall / aware_wall:.2f}x")  # fmt: skip
    print(f"median steps: aware {statistics.median(r[0] for r in totals[True])}, "
          f"blind {statistics.median(r[0] for r in totals[False])}")  # fmt: skip
    fast, scalar, dry = count_times()
    print(f"count 10^6 points: vectorised {fast * 1000:.1f} ms, scalar ~{scalar:.1f} s -> {scalar / fast:.0f}x")
    print(f"cloudai dry-run of the 10^6-point space: {dry:.2f} s")


if __name__ == "__main__":
    main()
