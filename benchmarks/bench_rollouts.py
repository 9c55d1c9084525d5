"""Live-RL rollouts over N environments at once: steps/s for N = 1, 4, 16 against one stock OpenEnv server.

    uv run python benchmarks/bench_rollouts.py [--steps-per-env 60] [--delay-ms 5] [--rounds 3]

The server is the stock ``openenv-core`` app the tests use (``tests.gym.openenv_app``, a subprocess on a free
loopback port) with every step taking ``--delay-ms`` (a simulator's work) and up to 16 WebSocket sessions. For each
N, ``LiveGymEnv`` (built from TOML by ``load_env``, so every step is written to trajectory.csv and
episodes.jsonl) is driven by the random-search agent's loop (``BaseAgent.run``) with ``max_parallel = N``:
N sessions stepping at once. The rate is steps over the wall time of the agent loop (the env's construction,
N session opens, is left out). Rounds alternate the N values so drift hits all; the median round is printed,
with the scaling against N = 1 measured in the same process. Aim: >= 0.8 x N times the N = 1 rate up to N = 16.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.gym.servers: the OpenEnv server the tests use

SCENARIO = 'name = "rollouts"\n[[Tests]]\nid = "t"\ntest_name = "x"\n'


def test_toml(url: str, steps: int, parallel: int) -> str:
    return (
        f'name = "x"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = {steps}\n'
        f'agent_config = {{ seed = 1, max_parallel = {parallel}, confirm = 0 }}\nagent_metrics = ["throughput"]\n'
        f'[cmd_args]\nlive_rl_mode = true\nenv_url = "{url}"\nbatch = [1, 2, 4, 8]\nuse_cache = true\n'
        "ratio = { low = 0.1, high = 1.0 }\nthreads = [1, 2, 4]\n"
    )


def rate(url: str, parallel: int, steps: int, root: Path) -> float:
    """Steps per second of one agent loop over ``parallel`` environments."""
    from cloudai.agents import AGENTS
    from cloudai.gym.from_toml import load_env
    from cloudai.plan.agent_checks import agent_config

    root.mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tests" / "x.toml").write_text(test_toml(url, steps, parallel))
    (root / "scenario.toml").write_text(SCENARIO)
    loaded = load_env(root / "tests", root / "scenario.toml", output_dir=root / "out")
    entry = loaded.checked.entry
    agent_cls = AGENTS.get(entry.agent.name)
    agent = agent_cls(loaded.env, agent_config(entry, agent_cls), steps)
    try:
        start = time.perf_counter()
        done = agent.run()
        elapsed = time.perf_counter() - start
    finally:
        loaded.env.close()
    assert done == steps, f"N={parallel}: {done} of {steps} steps"
    return steps / elapsed


def main() -> None:
    from tests.gym.servers import OpenEnvServer

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps-per-env", type=int, default=60)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()
    rates: dict[int, list[float]] = {n: [] for n in args.envs}
    with (
        OpenEnvServer("--max-sessions", str(max(args.envs)), "--step-delay-ms", str(args.delay_ms)) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for round_ in range(args.rounds):
            order = args.envs if round_ % 2 == 0 else list(reversed(args.envs))
            for n in order:
                rates[n].append(rate(server.url, n, args.steps_per_env * n, Path(tmp) / f"r{round_}-n{n}"))
    base = statistics.median(rates[args.envs[0]])
    print(f"stock OpenEnv server, {args.delay_ms:g} ms per step, {args.steps_per_env} steps per environment, "
          f"median of {args.rounds} rounds")  # fmt: skip
    print(f"{'N':>4} {'steps/s':>10} {'x N=1':>8} {'x (N x N=1)':>12}")
    for n in args.envs:
        median = statistics.median(rates[n])
        print(f"{n:>4} {median:>10.1f} {median / base:>8.2f} {median / (n * base):>12.2f}")


if __name__ == "__main__":
    main()
