"""Distinct configurations measured per step budget: optuna over 6-, 24- and 192-point Synthetic spaces.

    uv run python benchmarks/bench_distinct.py [--seeds 3]

Each case is a real ``cloudai run`` (Synthetic jobs, duration 0). ``after``: distinct configurations among
the steps that used up ``agent_steps`` (cache hits are recorded but no longer count). ``before``: distinct
configurations among the first ``agent_steps`` rows of the same trajectory, which is what the run recorded when
every cache hit used up a step: the agent is told the same steps in the same order, so with the same seed it
proposes the same points and the old run is this run's prefix. Mean over seeds.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = {  # points in the space -> (cmd_args lines, agent_steps)
    6: ('algo = ["ring", "tree"]\nnum_channels = [1, 2, 4]', 6),
    24: ('algo = ["ring", "tree"]\nnum_channels = [1, 2, 4, 8]\nchunk_kb = [128, 512, 2048]', 24),
    192: (
        'algo = ["ring", "tree", "nvls", "collnet"]\nnum_channels = [1, 2, 4, 8]\n'
        "chunk_kb = [64, 128, 256, 512, 1024, 2048]\nmessage_size = [1048576, 67108864]",
        48,
    ),
}

TEST = """name = "x"
test_template_name = "Synthetic"
agent = "optuna"
agent_steps = {steps}
agent_metrics = ["bus_bw"]
agent_reward_function = "identity"
agent_config = {{ seed = {seed}, confirm = 0 }}
[cmd_args]
duration_s = 0
{knobs}
"""


def run_case(root: Path, knobs: str, steps: int, seed: int) -> tuple[int, int]:
    """(before, after) distinct configurations for one seeded run."""
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "x.toml").write_text(TEST.format(steps=steps, seed=seed, knobs=knobs))
    (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n')
    cloudai = Path(sys.executable).parent / "cloudai"
    args = [str(cloudai), "run", "--tests-dir", str(root / "tests"), "--test-scenario", str(root / "s.toml")]
    subprocess.run([*args, "--output-dir", str(root / "out")], check=True, capture_output=True)
    (trajectory,) = (root / "out").glob("*/t/0/trajectory.csv")
    with trajectory.open() as f:
        rows = list(csv.DictReader(f))
    before = len({r["action"] for r in rows[:steps]})
    after = len({r["action"] for r in rows if r["status"] != "cached"})
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for points, (knobs, steps) in CASES.items():
            pairs = [run_case(Path(tmp) / f"{points}-{seed}", knobs, steps, seed) for seed in range(args.seeds)]
            before = statistics.mean(b for b, _ in pairs)
            after = statistics.mean(a for _, a in pairs)
            print(
                f"{points:4d}-point space, agent_steps = {steps:3d}: distinct configurations measured "
                f"before {before:5.1f}, after {after:5.1f} ({after / before:.2f}x; mean of {args.seeds} seeds)"
            )


if __name__ == "__main__":
    main()
