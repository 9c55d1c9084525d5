"""Leases taken at once: time to the first step of a live-RL run over N leased sandboxes that take S s to start.

    uv run python benchmarks/bench_lease_start.py [--start-s 1.0] [--n 1 4 8]

The control plane is the tests' own (``tests.leases.plane``) with each sandbox ready ``--start-s`` after it was
asked for. For each N: the baseline takes N leases one after another, as ``LiveGymEnv`` did before (N start-ups
before the first step); ours builds the run's env (``load_env``, ``max_parallel = N``) and times its first step.
Aim: the first step within ~1.2 S whatever N (it was ~N x S). Measured (S = 1 s, a loaded 2-core VM): N = 1, 4, 8
1.31, 1.17, 1.26 s at once against 1.17, 4.56, 8.86 s one lease after another.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.leases.plane: the control plane the tests use


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--start-s", type=float, default=1.0)
    parser.add_argument("--n", type=int, nargs="+", default=[1, 4, 8])
    args = parser.parse_args()
    from tests.leases.plane import plane

    from cloudai.gym.from_toml import load_env
    from cloudai.gymserver.factory import create_gym_server
    from cloudai.gymserver.protocol import close_server

    with plane() as (board, url), tempfile.TemporaryDirectory() as tmp:
        board.mode, board.start_s = "hold", args.start_s
        lease = {"live_rl_mode": True, "env_lease_url": url, "env_lease_environment": "knobs", "env_timeout_s": 60}
        print(f"sandboxes ready {args.start_s:.2f} s after they are asked for")
        for n in args.n:
            root = Path(tmp) / f"n{n}"
            (root / "tests").mkdir(parents=True)
            start = time.perf_counter()
            servers = [create_gym_server(lease, record_dir=root / "baseline") for _ in range(n)]
            servers[0].reset()
            servers[0].step({"batch": 2, "use_cache": True, "ratio": 1.0, "threads": 2})
            baseline = time.perf_counter() - start
            for server in servers:
                close_server(server)
            (root / "tests" / "t.toml").write_text(
                'name = "t"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 4\n'
                f"agent_config = {{ max_parallel = {n} }}\n"
                f'[cmd_args]\nlive_rl_mode = true\nenv_lease_url = "{url}"\nenv_lease_environment = "knobs"\n'
                "env_timeout_s = 60\nbatch = [1, 2]\nuse_cache = true\nratio = 1.0\nthreads = 2\n"
            )
            (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
            start = time.perf_counter()
            env = load_env(root / "tests", root / "s.toml", output_dir=root / "out").env
            env.step_async({"batch": 2})
            env.step_wait()
            ours = time.perf_counter() - start
            env.close()
            s = args.start_s
            print(f"N = {n}: first step after {baseline:.2f} s one lease after another ({baseline / s:.1f} S), "
                  f"{ours:.2f} s at once ({ours / s:.2f} S); {baseline / ours:.1f}x sooner")  # fmt: skip


if __name__ == "__main__":
    main()
