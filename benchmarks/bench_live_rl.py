"""Live-RL step rates: in-process ServingSim with trajectory writing, and a remote OpenEnv server over WS.

    uv run python benchmarks/bench_live_rl.py [--steps N] [--rounds R]

Every rate is printed with its baseline, measured in the same process on the same inputs:

* ``in-process``: ``LiveGymEnv`` over ``ServingSim`` (built from TOML by ``cloudai.gym.from_toml.load_env``,
  so every step goes through the env and is written to trajectory.csv + env.csv) against
  ``ServingSim.step`` called bare with the same actions. Aim: >= 2000 steps/s.
* ``remote``: one ``openenv-core`` server (``tests.gym.openenv_app``, a subprocess on a free
  loopback port); ``RemoteGymServer`` steps over its WebSocket session against openenv-core's
  own ``GenericEnvClient(...).sync()`` doing the same steps on the same server, rounds
  alternating so drift hits both. Aim: ours >= 0.8x theirs. ``LiveGymEnv`` over the same
  server (the client plus the env and its records) is printed too.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.gym.servers: the OpenEnv server the tests use


def serving_actions(n: int) -> list[dict[str, Any]]:
    from cloudai.gym.examples import BATCH_SIZES, NUM_SEQS

    rng = random.Random(0)
    return [{"max_batch_size": rng.choice(BATCH_SIZES), "max_num_seqs": rng.choice(NUM_SEQS),
             "kv_cache_fraction": rng.uniform(0.5, 0.95)} for _ in range(n)]  # fmt: skip


def rate(n: int, run: Callable[[], None]) -> float:
    began = time.perf_counter()
    run()
    return n / (time.perf_counter() - began)


def live_env(root: Path, cmd_args: str) -> Any:
    from cloudai.gym.from_toml import load_env

    (root / "tests").mkdir(parents=True)
    (root / "tests" / "t.toml").write_text(
        'name = "t"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 1000000\n'
        f"[cmd_args]\nlive_rl_mode = true\n{cmd_args}"
    )
    (root / "scenario.toml").write_text('name = "bench"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    return load_env(root / "tests", root / "scenario.toml", output_dir=root / "out").env


def bench_in_process(steps: int, root: Path) -> None:
    from cloudai.gym.examples import ServingSim

    actions = serving_actions(steps)
    horizon = 'env_class = "cloudai.gym.examples.ServingSim"\nload_scale = [0.5, 1.0, 2.0]\n'
    env = live_env(root / "in_process", horizon + "[env_params.load_scale]\n[cmd_args.env_kwargs]\nhorizon = 50\n")

    def through_env() -> None:
        env.reset(seed=0)
        for action in actions:
            if env.step(action)[2]:
                env.reset()

    def bare() -> None:
        sim = ServingSim(horizon=50)
        sim.reset(seed=0)
        for action in actions:
            if sim.step(action)[2]:
                sim.reset()

    baseline = rate(steps, bare)
    ours = rate(steps, through_env)
    env.close()
    rows = sum(1 for _ in (env.setup.out_dir / "trajectory.csv").open()) - 1
    assert rows == steps, f"{rows} rows for {steps} steps"
    print(f"in-process  LiveGymEnv+ServingSim, records written: {ours:9.0f} steps/s   (aim >= 2000)")
    print(f"            bare ServingSim.step (baseline):        {baseline:9.0f} steps/s   ratio {ours / baseline:.3f}")


def bench_remote(steps: int, rounds: int, root: Path) -> None:
    from openenv.core.generic_client import GenericEnvClient
    from tests.gym.servers import OpenEnvServer

    from cloudai.gymserver.remote import RemoteGymServer

    rng = random.Random(1)
    actions = [{"batch": rng.choice([1, 2, 4, 8]), "use_cache": rng.random() < 0.5, "ratio": rng.uniform(0.1, 1.0),
                "threads": rng.randint(1, 16)} for _ in range(steps)]  # fmt: skip

    with OpenEnvServer("--max-sessions", "4") as server:

        def ours() -> None:
            with RemoteGymServer(server.url) as remote:
                remote.reset(seed=0)
                for action in actions:
                    remote.step(action)

        def theirs() -> None:
            with GenericEnvClient(base_url=server.url).sync() as client:
                client.reset(seed=0)
                for action in actions:
                    client.step(action)

        env = live_env(root / "remote", f'env_url = "{server.url}"\n')

        def through_env() -> None:
            env.reset(seed=0)
            for action in actions:
                env.step(action)

        ours(), theirs()  # warm both paths (imports, the server's first session)
        mine, base, full = [], [], []
        for _ in range(rounds):
            mine.append(rate(steps, ours))
            base.append(rate(steps, theirs))
            full.append(rate(steps, through_env))
        env.close()
    m, b, f = statistics.median(mine), statistics.median(base), statistics.median(full)
    print(f"remote WS   RemoteGymServer:                        {m:9.0f} steps/s   (median of {rounds} rounds)")
    print(f"            openenv GenericEnvClient.sync() (base): {b:9.0f} steps/s   ratio {m / b:.3f} (aim >= 0.8)")
    print(f"            LiveGymEnv over it, records written:    {f:9.0f} steps/s   ratio {f / b:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--remote-steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_in_process(args.steps, Path(tmp))
        bench_remote(args.remote_steps, args.rounds, Path(tmp))


if __name__ == "__main__":
    main()
