"""16 environments from one process: cloudai's native async client against threaded sync clients, same server.

    uv run python benchmarks/bench_async_lanes.py [--lanes 16] [--steps 200] [--delay-ms 5] [--rounds 3]

The server is the stock ``openenv-core`` app the tests use (``tests.gym.openenv_app``, a subprocess, ``--delay-ms``
per step, one WebSocket session per lane; a fresh one per measurement, its start not timed). Threaded: one
``RemoteGymServer`` per lane, each in its own thread. Async: one ``AsyncRemoteEnv`` per lane, all on one event loop
(``asyncio.gather``). Printed per round and as the median: steps/s, the client process's CPU per step and its thread
count. Aim: async >= 1x the threaded rate, with fewer threads.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.gym.servers: the OpenEnv server the tests use

ACTION = {"batch": 2, "use_cache": True, "ratio": 0.5, "threads": 4}


def threaded(url: str, lanes: int, steps: int) -> tuple[float, float, int]:
    from cloudai.gymserver.remote import RemoteGymServer

    clients = [RemoteGymServer(url) for _ in range(lanes)]
    for client in clients:
        client.reset()
    most = [threading.active_count()]

    def lane(client: RemoteGymServer) -> None:
        for _ in range(steps):
            if client.step(ACTION).done:
                client.reset()
        most[0] = max(most[0], threading.active_count())

    workers = [threading.Thread(target=lane, args=(c,)) for c in clients]
    wall, cpu = time.perf_counter(), time.process_time()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    for client in clients:
        client.close()
    return lanes * steps / wall, cpu / (lanes * steps) * 1000, most[0]


def awaited(url: str, lanes: int, steps: int) -> tuple[float, float, int]:
    from cloudai.gymserver.aio import AsyncRemoteEnv

    async def main() -> tuple[float, float, int]:
        envs = [AsyncRemoteEnv(url) for _ in range(lanes)]
        await asyncio.gather(*(env.reset() for env in envs))
        most = [threading.active_count()]

        async def lane(env: AsyncRemoteEnv) -> None:
            for _ in range(steps):
                if (await env.step(ACTION)).done:
                    await env.reset()
            most[0] = max(most[0], threading.active_count())

        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(lane(env) for env in envs))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        await asyncio.gather(*(env.close() for env in envs))
        return lanes * steps / wall, cpu / (lanes * steps) * 1000, most[0]

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lanes", type=int, default=16)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tests.gym.servers import OpenEnvServer

    results: dict[str, list[tuple[float, float, int]]] = {"threaded": [], "async": []}
    for _ in range(args.rounds):
        for kind, run in (("threaded", threaded), ("async", awaited)):
            # A server of its own each time: the stock app does not always answer again after 16 sessions closed.
            with OpenEnvServer("--max-sessions", str(args.lanes), "--step-delay-ms", str(args.delay_ms)) as server:
                results[kind].append(run(server.url, args.lanes, args.steps))
    for kind, rounds in results.items():
        rate = statistics.median(r[0] for r in rounds)
        cpu = statistics.median(r[1] for r in rounds)
        print(f"{kind:>8}: {rate:7.1f} steps/s (rounds {', '.join(f'{r[0]:.0f}' for r in rounds)}), "
              f"{cpu:.2f} ms client CPU/step, {max(r[2] for r in rounds)} threads")  # fmt: skip
    ratio = statistics.median(r[0] for r in results["async"]) / statistics.median(r[0] for r in results["threaded"])
    print(f"async / threaded: {ratio:.2f}x the steps/s ({args.lanes} lanes, {args.delay_ms:g} ms per step)")


if __name__ == "__main__":
    main()
