"""Steps the shipped Aiconfigurator disagg example spends on out-of-memory configurations, and what a refused draw
costs, in one ``cloudai run`` of ``conf/aiconfigurator/test/aiconf_pareto_disagg.toml`` (200 steps, its seed).

Runs cloudai in this process (a standalone system whose ``install_path`` is ``--install-path``, default
``.cache/install``; the run starts its warm worker) with two timers wrapped around the Optuna agent: each
``study.ask`` and each ``BaseAgent.refused`` check. A refused draw's cost is its ask plus its check (the check
tells the study and records the point once), end to end, and the two medians apart; an accepted draw's cost is
its ask plus its check (with a warm worker, the check of a new point is the point's estimate, which its trial then
reuses).
Prints: measured steps by status, the steps whose trial failed out of memory, the infeasible points by reason
(``OOM`` vs the GPU count), the refused draws and their cost (mean, median, total), and the run's wall time.

    uv run python benchmarks/bench_aiconfigurator_memory.py [--steps 200] [--system h100_sxm] [--install-path ...]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import optuna

from cloudai.agents.base import BaseAgent

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "conf" / "aiconfigurator" / "test" / "aiconf_pareto_disagg.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--install-path", type=Path, default=REPO / ".cache" / "install")
    parser.add_argument("--system", default="h200_sxm", help="the example's system (h100_sxm: 80 GB, more OOM)")
    args = parser.parse_args()

    asks: list[float] = []
    checks: list[tuple[float, bool]] = []
    ask, refused = optuna.Study.ask, BaseAgent.refused

    def timed_ask(self: optuna.Study, *a: object, **k: object) -> optuna.Trial:
        start = time.perf_counter()
        try:
            return ask(self, *a, **k)  # pyright: ignore[reportArgumentType]
        finally:
            asks.append(time.perf_counter() - start)

    def timed_refused(self: BaseAgent, point: dict) -> bool:
        start = time.perf_counter()
        said = refused(self, point)
        checks.append((time.perf_counter() - start, said))
        return said

    optuna.Study.ask = timed_ask  # pyright: ignore[reportAttributeAccessIssue]
    BaseAgent.refused = timed_refused  # pyright: ignore[reportAttributeAccessIssue]

    from click.testing import CliRunner

    from cloudai.cli import cli

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        text = EXAMPLE.read_text().replace("agent_steps = 200", f"agent_steps = {args.steps}")
        text = text.replace('system = "h200_sxm"', f'system = "{args.system}"')
        (root / "tests" / EXAMPLE.name).write_text(text)
        (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "aiconf_pareto_disagg"\n')
        (root / "system.toml").write_text(f'name = "local"\nscheduler = "standalone"\n'
                                          f'install_path = "{args.install_path.resolve()}"\n'
                                          f'output_path = "{root / "out"}"\n')  # fmt: skip
        argv = ["run", "--system-config", root / "system.toml", "--tests-dir", root / "tests",
                "--test-scenario", root / "s.toml"]  # fmt: skip
        start = time.perf_counter()
        result = CliRunner().invoke(cli, [str(a) for a in argv], catch_exceptions=False)
        wall = time.perf_counter() - start
        (path,) = (root / "out").glob("*/t/0/trajectory.csv")
        with path.open() as f:
            rows = list(csv.DictReader(f))
        oom_failed = sum(
            "OOM" in (root_dir / "stdout.txt").read_text()
            for root_dir in path.parent.glob("*")
            if root_dir.is_dir() and (root_dir / "stdout.txt").exists()
        )

    statuses = Counter(r["status"] for r in rows)
    infeasible = Counter("OOM" if "OOM" in r.get("reason", "") else "GPUs" for r in rows if r["status"] == "infeasible")
    costs = [a + c for a, (c, said) in zip(asks, checks, strict=False) if said]
    accepted = [a + c for a, (c, said) in zip(asks, checks, strict=False) if not said]
    print(f"exit {result.exit_code}; {args.steps} steps of {EXAMPLE.relative_to(REPO)} on {args.system}: "
          f"wall {wall:.1f} s")  # fmt: skip
    print(f"  trajectory rows by status: {dict(sorted(statuses.items()))}")
    print(f"  measured steps whose trial failed out of memory: {oom_failed}")
    print(f"  infeasible points recorded, by reason: {dict(sorted(infeasible.items()))}")
    if costs:
        ask_ms = statistics.median(a for a, (_, said) in zip(asks, checks, strict=False) if said) * 1e3
        check_ms = statistics.median(c for c, said in checks if said) * 1e3
        print(f"  refused draws: {len(costs)}; cost each mean {statistics.mean(costs) * 1e3:.2f} ms, median "
              f"{statistics.median(costs) * 1e3:.2f} ms (Optuna's ask {ask_ms:.2f} ms + the rule's check, the "
              f"record and Optuna's tell {check_ms:.2f} ms); total {sum(costs):.1f} s")  # fmt: skip
    else:
        print("  refused draws: 0")
    if accepted:
        print(f"  accepted draws: {len(accepted)}; ask + check each mean {statistics.mean(accepted) * 1e3:.2f} ms, "
              f"median {statistics.median(accepted) * 1e3:.2f} ms, first {accepted[0]:.2f} s")  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
