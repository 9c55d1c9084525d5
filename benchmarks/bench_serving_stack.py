"""Dynamo's serving stack through cloudai on this machine: start-to-ready, a trial's wall split, the spread.

CloudAI's ``conf/experimental/dynamo_mocker`` files (disaggregated prefill + decode mockers, KV router, aiperf
with 5 warmup and 50 profiled requests, concurrency 10, ISL 128, OSL 32), ``model_path`` at the tiny local model,
run ``--repeats`` times (9) one after another (``max_concurrent_jobs = 1``) by ``cloudai run``, then twice at once
(``max_concurrent_jobs = 2``: free ports, own HOME and discovery dir per trial). Needs the stack: ``cloudai
install`` (``.ci/run`` or the tests put it in ``.cache/install``; ``--install-path``). Per trial, from its files:

* stack: the job's start to the frontend's "Prefill router target activated" (both mockers registered; the
  job waits for that line before the client starts), i.e. start-to-ready;
* client start: ready to the profiling phase's start (aiperf's own start, ~12 s, and the warmup requests);
* load: the profiling phase (aiperf's ``start_time`` to ``end_time``);
* export + stop: the phase's end to the job's end (aiperf writes its exports and exits; the stack is stopped).

Prints each trial and the spread (min, median, max, relative spread of output tokens/s); the machine's load moves
the times (say which machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "tests" / "workloads" / "cloudai_conf_dynamo" / "dynamo_mocker"
READY = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z.*Prefill router target activated")


def run(install: Path, work: Path, iterations: int, concurrent: int) -> list[Path]:
    """``cloudai run`` of CloudAI's files (model_path at the tiny model) ``iterations`` times; the job dirs."""
    sys.path.insert(0, str(REPO))
    from tests.workloads.conftest import mocker_tests_dir

    work.mkdir(parents=True)
    (work / "install").symlink_to(install.absolute(), target_is_directory=True)
    system = work / "system.toml"
    system.write_text(f'name = "standalone_system"\nscheduler = "standalone"\ninstall_path = "./install"\n'
                      f'output_path = "./results"\nmax_concurrent_jobs = {concurrent}\n')  # fmt: skip
    scenario = work / "scenario.toml"
    scenario.write_text(f'name = "bench"\n[[Tests]]\nid = "m"\ntest_name = "dynamo_mocker_base_test"\n'
                        f"iterations = {iterations}\n")  # fmt: skip
    tests = mocker_tests_dir(work / "test")
    for command in ("install", "run"):  # install: a no-op when it is there
        argv = ["uv", "run", "--project", str(REPO), "cloudai", command, "--system-config", str(system),
                "--tests-dir", str(tests), "--test-scenario", str(scenario)]  # fmt: skip
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"cloudai {command}: exit {done.returncode}: {done.stderr[-800:]}{done.stdout[-800:]}")
    return sorted(work.glob("results/*/m/*"), key=lambda p: int(p.name))


def split(job_dir: Path) -> dict[str, float]:
    job = json.loads((job_dir / "job.json").read_text())
    if job["status"] != "ok":
        raise SystemExit(f"{job_dir}: {job['status']}: {job['reason']}")
    ready_at = READY.search(re.sub(r"\x1b\[[0-9;]*m", "", (job_dir / "dynamo_frontend.log").read_text()))
    assert ready_at, f"{job_dir}: the frontend never logged its prefill router"
    ready = datetime.fromisoformat(ready_at.group(1)).replace(tzinfo=UTC).timestamp()
    export = json.loads((job_dir / "aiperf_artifacts" / "profile_export_aiperf.json").read_text())
    start, end = (datetime.fromisoformat(export[k]).astimezone().timestamp() for k in ("start_time", "end_time"))
    return {"stack_s": ready - job["started_at"], "client_start_s": start - ready, "load_s": end - start,
            "export_stop_s": job["ended_at"] - end, "trial_s": job["ended_at"] - job["started_at"],
            "tokens_s": job["metrics"]["output_token_throughput"], "req_s": job["metrics"]["request_throughput"],
            "ttft_p90_ms": job["metrics"]["ttft_p90_ms"], "itl_p50_ms": job["metrics"]["itl_p50_ms"]}  # fmt: skip


def show(rows: list[dict[str, float]]) -> None:
    names = list(rows[0])
    print("  ".join(f"{n:>14}" for n in names))
    for row in rows:
        print("  ".join(f"{row[n]:>14.2f}" for n in names))
    for label, pick in (("min", min), ("median", statistics.median), ("max", max)):
        print("  ".join(f"{pick([r[n] for r in rows]):>14.2f}" for n in names), label)
    tokens = [r["tokens_s"] for r in rows]
    print(
        f"output tokens/s spread: (max - min) / median = {(max(tokens) - min(tokens)) / statistics.median(tokens):.1%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install-path", type=Path, default=REPO / ".cache" / "install")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serving-"))  # kept with CLOUDAI_BENCH_KEEP=1 (job dirs to read)
    try:
        print(f"{args.repeats} trials one after another ({os.cpu_count()} cores):")
        show([split(d) for d in run(args.install_path, tmp / "seq", args.repeats, 1)])
        print("\n2 trials at once:")
        show([split(d) for d in run(args.install_path, tmp / "pair", 2, 2)])
    finally:
        if not os.environ.get("CLOUDAI_BENCH_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept: {tmp}")


if __name__ == "__main__":
    main()
