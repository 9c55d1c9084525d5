"""Live-RL rollouts over N environments at once, with the CPU each step costs the client and the server.

    uv run python benchmarks/bench_rollouts.py [--envs 1 4 8 16] [--lanes inproc remote leased async]
        [--steps-per-env 100] [--delay-ms 5] [--rounds 3] [--against main]

Every step takes ``--delay-ms`` in the environment (a simulator's work). The lanes:

* ``inproc``: ``env_class = tests.gym.live_envs.KnobSim`` (the test server's knobs, in this process);
* ``remote``: ``env_url``, the stock ``openenv-core`` app the tests use (``tests.gym.openenv_app``, a subprocess);
* ``leased``: ``env_lease_url``, the tests' control plane (``tests.leases.plane``) in a subprocess, each lease a
  stock app in that process;
* ``slurm``: leased sandboxes as Slurm jobs (``cloudai serve --lease --system-config`` on the local Slurm that
  ``SLURM_CONF`` names; skipped, saying so, without one): each lease a job running ``cloudai serve`` of ``KnobSim``;
* ``sync``: ``RemoteGymServer``, N sessions each stepped in a thread of its own against the stock app (the client
  alone: no agent, no records; what the transport costs);
* ``async``: ``cloudai.gymserver.aio.AsyncRemoteEnv``, N sessions on one event loop against the stock app (the
  client alone too).

``inproc``/``remote``/``leased`` run the random-search agent's loop (``BaseAgent.run``, ``max_parallel = N``) over
``LiveGymEnv`` built from TOML by ``load_env``, so every step is also written to trajectory.csv and episodes.jsonl.
Per (lane, N): steps/s over the loop's wall time (the env's construction is left out), the client process's CPU
per step (``time.process_time``: all its threads) and the server process's (``/proc/<pid>/stat``, the server's
whole process: for ``leased`` the control plane and its sandboxes). A server of its own per measurement (not
timed; the stock app does not always answer again after 16 sessions closed). When (client + server CPU per step)
x steps/s nears the number of cores, the machine is the limit, not the code.

Each round runs every tree in a fresh process (``--against REV``, default ``main``: REV's ``src/`` from ``git
archive``, this tree's ``tests/`` helpers; ``''`` for this tree only), lanes and N in turn; the medians of the
rounds are printed side by side. The machine is shared: read medians, and CPU rather than rates.

Measured 2026-11-28 on the shared 2-core machine (load ~4-10), 3 rounds, median, ms of CPU per step, main -> this
tree (the sync client reads its replies in the caller's thread, ``cloudai.gymserver.wsconn``):

    lane    N=1          N=4          N=8          N=16         (client CPU; server CPU beside it is unchanged)
    sync    0.37->0.30   0.31->0.17   0.25->0.17   0.21->0.14   (the client alone)
    remote  0.71->0.55   0.66->0.59   0.69->0.66   0.67->0.54   (agent loop + records; server 2.0-2.3 .. 0.5)
    leased  0.63->0.54   0.70->0.67   0.67->0.62   0.64->0.61   (server: plane + sandboxes 0.8-1.0)
    inproc  0.33->0.24   0.23->0.22   0.21->0.19   0.16->0.16
    async   0.41 0.22 0.18 0.17 (both: unchanged code; its spread, ~0.05, is the noise)

The Slurm lane (local one-node Slurm, 8 CPUs, 30 steps per env, 1 round): N = 1, 4, 8 at 144, 382, 476 steps/s,
client 0.84-1.68 ms, server (the control plane and its keepers, which poll squeue; the sandboxes' own CPU is in
their jobs) 6.7-3.1 ms per step; N = 16 is skipped there: 16 sandbox jobs need 16 CPUs at once.

Rates scale with N on every lane (remote ~145 -> ~900-1100 steps/s at N=16, 5 ms steps: ~7x of an ideal 16x): at
N=16 client + server CPU is ~1.1-1.4 ms per step x ~1000 steps/s, more than one of the 2 cores, shared with
others: the machine's limit, not a lock of ours.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.gym / tests.leases: the servers the tests use
LANES = ("inproc", "remote", "leased", "slurm", "sync", "async")
ACTION = {"batch": 2, "use_cache": True, "ratio": 0.5, "threads": 4}
SCENARIO = 'name = "rollouts"\n[[Tests]]\nid = "t"\ntest_name = "x"\n'
PLANE = (  # the tests' control plane as a server process: its URL on stdout, serving until stdin closes
    "import sys\nfrom tests.gym import openenv_app\nfrom tests.leases.plane import plane\n"
    "openenv_app.STEP_DELAY_S[0] = float(sys.argv[1]) / 1000\n"
    "with plane() as (_, url):\n    print('PLANE', url, flush=True)\n    sys.stdin.read()\n"
)
Round = dict[str, list[float] | str]  # "lane N" -> [steps/s, client CPU ms/step, server CPU ms/step], or why skipped


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) a live process has used: fields 14 and 15 of ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_toml(target: str, steps: int, parallel: int) -> str:
    return (
        f'name = "x"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = {steps}\n'
        f'agent_config = {{ seed = 1, max_parallel = {parallel}, confirm = 0 }}\nagent_metrics = ["throughput"]\n'
        f"[cmd_args]\nlive_rl_mode = true\n{target}\nbatch = [1, 2, 4, 8]\nuse_cache = true\n"
        "ratio = { low = 0.1, high = 1.0 }\nthreads = [1, 2, 4]\n"
    )


def agent_loop(target: str, parallel: int, steps: int, root: Path) -> tuple[float, float]:
    """(wall s, client CPU s) of one agent loop of ``steps`` steps over ``parallel`` environments."""
    from cloudai.agents import AGENTS
    from cloudai.gym.from_toml import load_env
    from cloudai.plan.agent_checks import agent_config

    (root / "tests").mkdir(parents=True)
    (root / "tests" / "x.toml").write_text(test_toml(target, steps, parallel))
    (root / "scenario.toml").write_text(SCENARIO)
    loaded = load_env(root / "tests", root / "scenario.toml", output_dir=root / "out")
    entry = loaded.checked.entry
    agent_cls = AGENTS.get(entry.agent.name)
    agent = agent_cls(loaded.env, agent_config(entry, agent_cls), steps)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        done = agent.run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        loaded.env.close()
    assert done == steps, f"N={parallel}: {done} of {steps} steps"
    return wall, cpu


def async_loop(url: str, parallel: int, steps: int) -> tuple[float, float]:
    """(wall s, client CPU s) of N ``AsyncRemoteEnv`` sessions on one event loop, ``steps // N`` steps each."""
    from cloudai.gymserver.aio import AsyncRemoteEnv

    async def lanes() -> tuple[float, float]:
        envs = [AsyncRemoteEnv(url) for _ in range(parallel)]
        await asyncio.gather(*(env.reset() for env in envs))

        async def lane(env: AsyncRemoteEnv) -> None:
            for _ in range(steps // parallel):
                if (await env.step(ACTION)).done:
                    await env.reset()

        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(lane(env) for env in envs))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        await asyncio.gather(*(env.close() for env in envs))
        return wall, cpu

    return asyncio.run(lanes())


def threaded_loop(url: str, parallel: int, steps: int) -> tuple[float, float]:
    """(wall s, client CPU s) of N ``RemoteGymServer`` sessions, each in a thread of its own, ``steps // N`` each."""
    from cloudai.gymserver.remote import RemoteGymServer

    clients = [RemoteGymServer(url) for _ in range(parallel)]
    for client in clients:
        client.reset()

    def lane(client: RemoteGymServer) -> None:
        for _ in range(steps // parallel):
            if client.step(ACTION).done:
                client.reset()

    workers = [threading.Thread(target=lane, args=(client,)) for client in clients]
    wall, cpu = time.perf_counter(), time.process_time()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    for client in clients:
        client.close()
    return wall, cpu


@contextmanager
def stock_server(sessions: int, delay_ms: float) -> Iterator[tuple[str, int]]:
    """The stock OpenEnv app: (its URL, its pid)."""
    from tests.gym.servers import OpenEnvServer

    with OpenEnvServer("--max-sessions", str(sessions), "--step-delay-ms", str(delay_ms)) as server:
        yield server.url, server.proc.pid


@contextmanager
def local_plane(delay_ms: float) -> Iterator[tuple[str, int]]:
    """The tests' control plane in a process of its own, its sandboxes in it: (its URL, its pid)."""
    proc = subprocess.Popen([sys.executable, "-c", PLANE, str(delay_ms)], cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PLANE "), f"the control plane did not start: {line!r}"
        yield line.split()[1], proc.pid
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(60)


@contextmanager
def slurm_plane(delay_ms: float, n: int) -> Iterator[tuple[str, int]]:
    """``cloudai serve --lease 0 --system-config tests/slurm/slurm_system.toml`` over ``knobs`` (``KnobSim``,
    ``delay_ms`` a step): each lease a Slurm job of the Slurm ``SLURM_CONF`` names, running ``cloudai serve`` on its
    node. Yields (its URL, its pid). The server CPU is the control plane's and its keepers' only: the sandboxes'
    is in their Slurm jobs (on this one-node Slurm, beside the benchmark)."""
    if not os.environ.get("SLURM_CONF"):
        raise NotImplementedError('no Slurm: start one (`eval "$(bash tools/start-local-slurm.sh)"`, as root)')
    cpus = subprocess.run(["sinfo", "-h", "-o", "%C"], capture_output=True, text=True, check=True).stdout.split("/")
    if n > int(cpus[-1]):  # a sandbox job holds its CPU while leased: the others would wait for ever
        raise NotImplementedError(f"the Slurm has {cpus[-1].strip()} CPUs: {n} sandbox jobs cannot all run at once")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        (root / "tests" / "knobs.toml").write_text(
            'name = "knobs"\ntest_template_name = "LiveRL"\nagent = "random_search"\nagent_steps = 1000000\n'
            f'[cmd_args]\nlive_rl_mode = true\nenv_class = "tests.gym.live_envs.KnobSim"\ndelay_ms = {delay_ms}\n'
        )
        (root / "plane.toml").write_text('name = "plane"\n[[Tests]]\nid = "knobs"\ntest_name = "knobs"\n')
        argv = [sys.executable, "-m", "cloudai", "serve", "--lease", "0", "--system-config",
                str(REPO / "tests" / "slurm" / "slurm_system.toml"), "--tests-dir", str(root / "tests"),
                "--test-scenario", str(root / "plane.toml"), "--output-dir", str(root / "out"), "--max-leases", "16",
                "--lease-start-timeout", "300", "--lease-idle-timeout", "300"]  # fmt: skip
        log = (root / "plane.log").open("w")  # a pipe nobody reads would block the plane once it is full
        stack = ExitStack()
        stack.callback(log.close)
        proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()
            assert banner.startswith("Leasing knobs at http://"), f"the control plane did not start: {banner!r}"
            yield banner.split(" at ")[1].split()[0], proc.pid
        finally:
            proc.terminate()  # SIGTERM: every sandbox job is cancelled before it exits
            proc.communicate(timeout=120)
            stack.close()


def measure(lane: str, n: int, steps: int, delay_ms: float, root: Path) -> list[float]:
    """[steps/s, client CPU ms/step, server CPU ms/step] of one lane at N = ``n``."""
    if lane == "inproc":
        target = f'env_class = "tests.gym.live_envs.KnobSim"\nenv_kwargs = {{ delay_ms = {delay_ms} }}'
        wall, cpu = agent_loop(target, n, steps, root)
        return [steps / wall, cpu / steps * 1000, 0.0]
    with ExitStack() as stack:
        if lane in ("remote", "sync", "async"):
            url, pid = stack.enter_context(stock_server(max(n, 4), delay_ms))
        else:
            url, pid = stack.enter_context(local_plane(delay_ms) if lane == "leased" else slurm_plane(delay_ms, n))
        server = proc_cpu(pid)
        if lane == "async":
            wall, cpu = async_loop(url, n, steps)
        elif lane == "sync":
            wall, cpu = threaded_loop(url, n, steps)
        elif lane == "remote":
            wall, cpu = agent_loop(f'env_url = "{url}"', n, steps, root)
        else:
            target = f'env_lease_url = "{url}"\nenv_lease_environment = "knobs"\nenv_timeout_s = 60'
            wall, cpu = agent_loop(target, n, steps, root)
        server = proc_cpu(pid) - server
    return [steps / wall, cpu / steps * 1000, server / steps * 1000]


def one_round(args: argparse.Namespace) -> Round:
    """Every lane and N once, in this process."""
    out: Round = {}
    with tempfile.TemporaryDirectory() as tmp:
        for lane in args.lanes:
            for n in args.envs:
                try:
                    out[f"{lane} {n}"] = measure(
                        lane, n, args.steps_per_env * n, args.delay_ms, Path(tmp) / f"{lane}{n}"
                    )
                except NotImplementedError as exc:
                    out[f"{lane} {n}"] = f"skipped: {exc}"
    return out


def source_tree(rev: str, into: Path) -> Path:
    """``src/`` of git revision ``rev`` of this repository, unpacked under ``into`` (for PYTHONPATH)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def child_round(args: argparse.Namespace, src: Path | None) -> Round:
    """One round in a fresh process: this tree's code, or ``src`` (another revision's) first on PYTHONPATH."""
    argv = [sys.executable, __file__, "--one-round", "--lanes", *args.lanes, "--envs", *map(str, args.envs),
            "--steps-per-env", str(args.steps_per_env), "--delay-ms", str(args.delay_ms)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | ({"PYTHONPATH": str(src)} if src else {})
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"a round failed ({src or 'this tree'}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def report(trees: dict[str, list[Round]], args: argparse.Namespace) -> None:
    print(f"{args.delay_ms:g} ms per step in the env, {args.steps_per_env} steps per env, median of {args.rounds} "
          f"rounds, {os.cpu_count()} CPUs; CPU in ms per step (client: the process driving the envs)")  # fmt: skip
    print(f"{'lane':>7} {'N':>3}" + "".join(f" | {name[:12]:>12}: steps/s client server" for name in trees))
    for lane in args.lanes:
        for n in args.envs:
            got = {name: [r[f"{lane} {n}"] for r in rounds] for name, rounds in trees.items()}
            line = f"{lane:>7} {n:>3}"
            skipped = next((v for values in got.values() for v in values if isinstance(v, str)), None)
            if skipped is not None:
                print(f"{line} | {skipped}")
                continue
            for values in got.values():
                rate, client, server = (statistics.median(float(v[i]) for v in values) for i in range(3))
                line += f" | {'':>12}  {rate:7.0f} {client:6.2f} {server:6.2f}"
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--lanes", nargs="+", choices=LANES, default=list(LANES))
    parser.add_argument("--steps-per-env", type=int, default=100)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", default="main", help="git revision measured beside this tree ('' for none)")
    parser.add_argument("--one-round", action="store_true", help=argparse.SUPPRESS)  # a child's: prints JSON
    args = parser.parse_args()
    if args.one_round:
        print(json.dumps(one_round(args)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        srcs: dict[str, Path | None] = {"this tree": None}
        if args.against:
            srcs = {args.against: source_tree(args.against, Path(tmp)), **srcs}
        trees: dict[str, list[Round]] = {name: [] for name in srcs}
        for _ in range(args.rounds):
            for name, src in srcs.items():
                trees[name].append(child_round(args, src))
    report(trees, args)


if __name__ == "__main__":
    main()
