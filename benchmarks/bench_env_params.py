"""env_params benchmark (issue 5): what sampling and env.csv cost per step.

    uv run python benchmarks/bench_env_params.py [--steps 2000]

Two loops of the same ``--steps`` steps, in this process, writing through the real
``TrajectoryWriter`` into a temporary dir:

* baseline: trajectory.csv rows only (a run without env_params);
* with env_params: ``EnvParamSampler.sample(step)`` for a list param with weights and a
  uniform range (``conf/common/test/dse_env_params.toml``'s two), then the same trajectory
  row plus its env.csv row.

The difference per step is the overhead env_params add (aim < 1 ms). Both loops flush and
fsync every row, as an offline run does (a row on disk survives a power cut: the
reliability contract), so the env.csv row costs one more fsync, whose price is the disk's
and the machine's load, not ours. The same pair of loops with rows flushed but not fsync'ed
(``sync_interval_s``, as live RL writes) and sampling alone are printed to show the split.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from cloudai.config.test import EnvParamSpec
from cloudai.envs.env_params import EnvParamSampler
from cloudai.space import Categorical, Range, Space
from cloudai.trajectory.records import TrajectoryWriter

SPACE = Space({}, (Categorical("background_load", (0.0, 0.5, 0.9)), Range("jitter", 0.0, 0.3)))
SPECS = {"background_load": EnvParamSpec(weights=[0.5, 0.3, 0.2]), "jitter": EnvParamSpec(distribution="uniform")}
ACTION = {"algo": "ring", "chunk_kb": 512, "num_channels": 16}


def write_steps(directory: Path, steps: int, sampler: EnvParamSampler | None, *, fsync: bool = True) -> float:
    """Seconds to record ``steps`` rows (sampling each step's env_params first when a sampler is given)."""
    writer = TrajectoryWriter(directory, sampler.names if sampler else (), sync_interval_s=0.0 if fsync else 3600.0)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        env = sampler.sample(step) if sampler else None
        writer.append(step=step, episode=1, action=ACTION, reward=42.0, observation=[42.0, 1234.5],
                      status="ok", elapsed_s=0.01, env=env)  # fmt: skip
    elapsed = time.perf_counter() - start
    writer.close()
    return elapsed


def sampling_only(steps: int) -> float:
    sampler = EnvParamSampler(SPECS, SPACE, seed=11)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        sampler.sample(step)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description="env_params overhead per step: sampling + env.csv writing.")
    parser.add_argument("--steps", type=int, default=2000)
    steps = parser.parse_args().steps
    results: dict[bool, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fsync in (True, False):
            base = write_steps(Path(tmp) / f"base{fsync}", steps, None, fsync=fsync)
            with_env = write_steps(Path(tmp) / f"env{fsync}", steps, EnvParamSampler(SPECS, SPACE, 11), fsync=fsync)
            rows = len((Path(tmp) / f"env{fsync}" / "env.csv").read_text().splitlines()) - 1
            assert rows == steps, f"env.csv has {rows} rows for {steps} steps"
            results[fsync] = (base / steps * 1000, with_env / steps * 1000)
    sample_ms = sampling_only(steps) / steps * 1000
    print(f"{steps} steps, 2 env_params (a weighted list, a uniform range); ms/step")
    for fsync, label in ((True, "rows fsync'ed (a run)"), (False, "rows flushed only")):
        base_ms, env_ms = results[fsync]
        print(f"  {label:<22} trajectory.csv only {base_ms:.3f}, + sampling + env.csv {env_ms:.3f}, "
              f"overhead {env_ms - base_ms:.3f}")  # fmt: skip
    print(f"  sampling alone: {sample_ms:.3f}")
    base_ms, env_ms = results[True]
    print(f"overhead of env_params: {env_ms - base_ms:.3f} ms/step (aim < 1 ms)")


if __name__ == "__main__":
    main()
