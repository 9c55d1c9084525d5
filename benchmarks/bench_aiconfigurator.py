"""Aiconfigurator through cloudai: what a trial costs, against aiconfigurator's own search, and search quality.

Needs the environment: ``cloudai install`` (see docs/test-toml.md, "Aiconfigurator"); ``--install-path`` (default
``.cache/install``, where ``.ci/run`` and the tests put it). Sections (``--section``, default all):

* ``cost``: one estimate's cost, bare in the package's own process (pinned database, warm) against a trial's
  runner process cold (``CLOUDAI_AICONFIGURATOR_WORKER=0``: import + database load) and warm (asking the worker),
  a trial in cloudai's process (``Workload.evaluate``: no process) against the estimate inside it, and whole
  ``cloudai run``s (a 40-step grid; the shipped 200-step ``aiconf_pareto_disagg``) with the worker.
* ``cli``: ``aiconfigurator cli default`` for Llama-3.1-70B on 8 x h200_sxm, isl 4000 / osl 500, TTFT <= 2000 ms,
  TPOT <= 30 ms (its wall time and picks) against cloudai's Optuna search of the same disagg question (the knobs
  as lists, as the landscape below), one run per seed: the measured step at which it reaches 98 % of
  aiconfigurator's best tokens/s/GPU, and the wall time of a second run of that seed stopped there.
* ``landscape``: the issue's 82 944-point disagg grid (``aiconfigurator_grid.py``, one process per core, ~5 min on
  2 cores) evaluated exhaustively once (cached as CSV), then searches replayed on it (``aiconfigurator_landscape``):
  % of the exhaustive optimum after 50 and 200 trials and the runs at >= 98 %, with and without the SLA
  (TTFT <= 1000 ms, TPOT <= 30 ms), ``--seeds`` seeds (5): random, plain Optuna TPE (categorical knobs,
  infeasible = 0), and cloudai's ``OptunaAgent`` itself with local search off and with its defaults.
* ``questions``: the question set (``QUESTIONS``, issue 36 item 5: 8 questions chosen before the search was tuned)
  through ``aiconfigurator cli default`` (its wall time and best agg and disagg tokens/s/GPU counted its way, run
  again in this run before each question's searches, side by side on the same machine and load, and written to
  ``aiconfigurator_questions.json``; ``--cached-cli`` takes them from there instead) and through cloudai's optuna
  agent at its defaults, ``--question-seeds`` (3) seeds per question and mode, each search stopped once it reaches
  98 % of aiconfigurator's best of its mode: the measured steps and the time to get there against its wall.
  One table. ``--question NAME`` runs one question (repeatable).

Prints every number; the machine's load changes the times (say which machine).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KEEP = os.environ.get("CLOUDAI_BENCH_KEEP")  # a path: where the last cloudai run's trajectory.csv is copied
AGG_REQUEST = {
    "model_path": "meta-llama/Meta-Llama-3.1-70B", "system_name": "h200_sxm", "backend_name": "trtllm",
    "backend_version": "1.3.0rc20", "isl": 4000, "osl": 500, "mode": "agg", "batch_size": 8, "tp_size": 4,
}  # fmt: skip
BARE = """
import json, sys, time
from aiconfigurator.cli.api import cli_estimate
kwargs = json.loads(sys.argv[1])
cli_estimate(**kwargs)
times = []
for bs in range(1, 31):
    start = time.perf_counter()
    cli_estimate(**{**kwargs, "batch_size": bs})
    times.append((time.perf_counter() - start) * 1000)
print(json.dumps(times))
"""


def python(install: Path) -> str:
    from cloudai.workloads.aiconfigurator.catalog import ENV

    return str(ENV.python(install))


def trial_wall(install: Path, job_dir: Path, env: dict[str, str]) -> float:
    from cloudai.workloads.aiconfigurator.catalog import RUNNER

    start = time.perf_counter()
    argv = [python(install), str(RUNNER), "trial", str(job_dir), json.dumps(AGG_REQUEST)]
    subprocess.run(argv, check=True, capture_output=True, env=env)
    return (time.perf_counter() - start) * 1000


def section_cost(install: Path) -> None:
    from cloudai.workloads.aiconfigurator import worker

    bare = json.loads(subprocess.run([python(install), "-c", BARE, json.dumps(AGG_REQUEST)], check=True,
                                     capture_output=True, text=True).stdout)  # fmt: skip
    print(f"bare cli_estimate, warm, pinned database: median {statistics.median(bare):.1f} ms (n={len(bare)})")
    with tempfile.TemporaryDirectory() as tmp:
        cold_env = {**os.environ, "CLOUDAI_AICONFIGURATOR_WORKER": "0"}
        cold = [trial_wall(install, Path(tmp), cold_env) for _ in range(2)]
        print(f"trial process, cold (import + database): {', '.join(f'{c:.0f}' for c in cold)} ms")
        proc = worker.start(install)
        try:
            trial_wall(install, Path(tmp), dict(os.environ))  # the worker's first estimate loads the database
            warm = [trial_wall(install, Path(tmp), dict(os.environ)) for _ in range(20)]
        finally:
            if proc is not None:
                worker.stop(proc)
    print(f"trial process asking the warm worker: median {statistics.median(warm):.1f} ms (n=20)")
    print(f"  = {statistics.median(warm) / statistics.median(bare):.1f}x the bare estimate")
    in_process(install, statistics.median(bare))
    steps, wall = cloudai_run(install, AGG_GRID, "grid_search", 40)
    elapsed = [float(r["elapsed_s"]) * 1000 for r in steps]
    print(f"cloudai run, 40 grid steps with the worker: {wall:.1f} s wall, {wall / len(steps) * 1000:.0f} ms/step, "
          f"trial median {statistics.median(elapsed[1:]):.1f} ms (first {elapsed[0]:.0f} ms)")  # fmt: skip
    conf_run(install, "aiconf_pareto_disagg")


IN_PROCESS = {
    "agg": [{"agg": {"tp": tp, "batch_size": bs}} for tp in (2, 4, 8) for bs in range(1, 21)],
    "disagg": [{"total_gpus": 8, "disagg": {"p_workers": pw, "p_bs": pb, "d_tp": dt, "d_bs": db, "d_workers": 1}}
               for pw in (1, 2) for pb in (1, 2) for dt in (2, 4) for db in (8, 16, 32, 64, 128)],
}  # fmt: skip


def in_process(install: Path, bare_ms: float) -> None:
    """A model-backed trial in this process, as a ``cloudai run`` step makes it: the memory check (the worker's
    estimate), the job (argv, ``evaluate``), the standalone system's submit (dir, cmd.sh, stdout/stderr, the
    runner's files) and ``finish_job`` (job.json). Against the estimate inside it (``estimate_ms``: the bare warm
    ``cli_estimate`` timed in the worker, the process that runs it) and the bare estimate of the package's own
    process (``BARE``: no reused database views). Distinct points, each estimated once; the first per mode (its
    database load) left out. In the temp dir (a disk: a new file costs ~0.1 ms, and a trial makes 7) and in
    ``/dev/shm`` (tmpfs: what cloudai itself adds)."""
    from cloudai.workloads.aiconfigurator import worker

    proc = worker.start(install)
    try:
        with worker.listening(worker.name(install)):
            for osl, where in enumerate((None, "/dev/shm") if Path("/dev/shm").is_dir() else (None,), 500):
                with tempfile.TemporaryDirectory(dir=where) as tmp:  # another osl: points the worker never saw
                    for mode, points in IN_PROCESS.items():
                        in_process_mode(install, Path(tmp), mode, [{**p, "osl": osl} for p in points], bare_ms)
    finally:
        if proc is not None:
            worker.stop(proc)


def in_process_mode(install: Path, tmp: Path, mode: str, points: list[dict[str, Any]], bare_ms: float) -> None:
    from cloudai.config.system import StandaloneSystemConfig
    from cloudai.jobs.spec import finish_job
    from cloudai.systems.base import JobSpec
    from cloudai.systems.standalone import StandaloneSystem
    from cloudai.workloads.aiconfigurator import Aiconfigurator
    from cloudai.workloads.base import JobContext

    question = {"model_name": AGG_REQUEST["model_path"], "system": "h200_sxm", "isl": 4000}
    workload = Aiconfigurator()
    system = StandaloneSystem(StandaloneSystemConfig(name="b", install_path=install, output_path=tmp))
    trial, job_part, estimate = [], [], []
    for i, point in enumerate(points):
        args = {**question, **point}
        start = time.perf_counter()
        if workload.constraint(args) is not None:  # out of memory: no trial (none in these lists)
            continue
        checked = time.perf_counter()
        context = JobContext(tmp / mode / str(i), install_path=install)
        argv = tuple(workload.argv(args, context))
        job = system.submit(JobSpec(str(i), argv, context.job_dir, evaluate=workload.evaluate(args, context)))
        finish_job(job, workload)
        end = time.perf_counter()
        trial.append((end - start) * 1000)
        job_part.append((end - checked) * 1000)
        assert job.job_id == str(os.getpid()) and job.status == "ok", (job.record(), point)
        estimate.append(json.loads((context.job_dir / "report.json").read_text())["estimate_ms"])
    median = statistics.median
    ms = median(trial[1:])
    ratio = median(t / e for t, e in zip(trial[1:], estimate[1:], strict=True))
    print(
        f"in-process trial, {mode} in {tmp.parent} (n={len(trial) - 1}): median {ms:.2f} ms (the job after the "
        f"check: {median(job_part[1:]):.2f} ms); its estimate in the worker {median(estimate[1:]):.2f} ms: "
        f"{ratio:.2f}x; {ms / bare_ms:.2f}x the bare estimate"
    )


def conf_run(install: Path, test: str) -> None:
    """``cloudai run`` of the shipped ``conf/aiconfigurator`` test ``test``: its wall time, and its search from the
    end of the first trial (the worker's first load: import, database) to the end of the last (``job.json``)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "s.toml").write_text(f'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "{test}"\n')
        (root / "system.toml").write_text(
            f'name = "local"\nscheduler = "standalone"\ninstall_path = "{install}"\noutput_path = "{root / "out"}"\n'
        )
        argv = ["uv", "run", "cloudai", "run", "--system-config", str(root / "system.toml"), "--tests-dir",
                str(REPO / "conf" / "aiconfigurator" / "test"), "--test-scenario", str(root / "s.toml")]  # fmt: skip
        start = time.perf_counter()
        subprocess.run(argv, cwd=REPO, check=True, capture_output=True)
        wall = time.perf_counter() - start
        (iteration,) = (root / "out").glob("*/t/0")
        jobs = sorted((json.loads(p.read_text()) for p in iteration.glob("*/job.json")), key=lambda j: j["ended_at"])
        with (iteration / "trajectory.csv").open() as f:
            rows = list(csv.DictReader(f))
    statuses = {s: sum(r["status"] == s for r in rows) for s in sorted({r["status"] for r in rows})}
    search = jobs[-1]["ended_at"] - jobs[0]["ended_at"]
    in_process = sum(j["job_id"] == jobs[0]["job_id"] for j in jobs)  # the run's own pid: no trial process
    print(f"cloudai run of conf/aiconfigurator {test}: {wall:.1f} s wall, {len(jobs)} trials ({in_process} in "
          f"cloudai's process; {statuses}); after the first trial {search:.1f} s for {len(jobs) - 1}, "
          f"{search / (len(jobs) - 1) * 1000:.1f} ms/trial")  # fmt: skip


AGG_GRID = """
[cmd_args]
model_name = "meta-llama/Meta-Llama-3.1-70B"
system = "h200_sxm"
isl = 4000
osl = 500
  [cmd_args.agg]
  tp = [1, 2, 4, 8]
  batch_size = [1, 2, 4, 8, 16, 24, 32, 48, 64, 128]
"""
DISAGG_SLA = """
[cmd_args]
model_name = "meta-llama/Meta-Llama-3.1-70B"
system = "h200_sxm"
isl = 4000
osl = 500
total_gpus = 8
  [cmd_args.disagg]
  p_tp = [1, 2, 4, 8]
  p_bs = [1, 2, 4, 8]
  p_workers = [1, 2, 3, 4]
  d_tp = [1, 2, 4, 8]
  d_bs = [1, 2, 4, 8, 16, 32, 64, 128, 256]
  d_workers = [1, 2, 3, 4]
"""


def cloudai_run(
    install: Path, body: str, agent: str, steps: int, extra: str = ""
) -> tuple[list[dict[str, str]], float]:
    """``cloudai run`` of one test (``body`` its cmd_args) on a standalone system at ``install``: rows, wall s."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        head = f'name = "t"\ntest_template_name = "Aiconfigurator"\nagent = "{agent}"\nagent_steps = {steps}\n{extra}'
        (root / "tests" / "t.toml").write_text(head + body)
        (root / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
        (root / "system.toml").write_text(
            f'name = "local"\nscheduler = "standalone"\ninstall_path = "{install}"\noutput_path = "{root / "out"}"\n'
        )
        start = time.perf_counter()
        argv = ["uv", "run", "cloudai", "run", "--system-config", str(root / "system.toml"), "--tests-dir",
                str(root / "tests"), "--test-scenario", str(root / "s.toml")]  # fmt: skip
        subprocess.run(argv, cwd=REPO, check=False, capture_output=True)  # exit 1 when a trial failed (an OOM)
        wall = time.perf_counter() - start
        (path,) = (root / "out").glob("*/t/0/trajectory.csv")
        if KEEP:
            shutil.copy(path, KEEP)
        with path.open() as f:
            return list(csv.DictReader(f)), wall


def section_cli(install: Path, steps: int, seeds: int, config: str) -> None:
    main = "import sys; from aiconfigurator.main import main; sys.argv[0] = 'aiconfigurator'; main()"
    argv = [python(install), "-c", main,
            "cli", "default", "--model-path", "meta-llama/Meta-Llama-3.1-70B", "--system", "h200_sxm", "--total-gpus",
            "8", "--isl", "4000", "--osl", "500", "--ttft", "2000", "--tpot", "30", "--backend", "trtllm"]  # fmt: skip
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - start
    best = float(re.search(r"Per-GPU Throughput: ([\d.,]+)", out).group(1).replace(",", ""))  # type: ignore[union-attr]
    chosen = re.search(r"Best Experiment Chosen: (.*)", out)
    print(f"aiconfigurator cli default: {wall:.1f} s wall; best {best:.2f} tokens/s/gpu ({chosen and chosen.group(1)})")
    for seed in range(1, seeds + 1):
        cli_seed(install, steps, seed, best, wall, config)


def cli_seed(install: Path, steps: int, seed: int, best: float, their_wall: float, config: str) -> None:
    """One seed of cloudai's search of the same question; the wall time to 98 % is measured by a second run of
    the same seed stopped at that step (same asks), not estimated."""
    constraints = (
        'agent_constraints = { ttft_ms = "<= 2000", tpot_ms = "<= 30" }\nagent_metrics = ["tokens_per_s_per_gpu"]\n'
    )
    extra = constraints + f'agent_reward_function = "identity"\nagent_config = {{ seed = {seed}{config} }}\n'
    rows, ours_wall = cloudai_run(install, DISAGG_SLA, "optuna", steps, extra)
    budgeted = [r for r in rows if r["status"] not in ("cached", "infeasible")]
    reached = next((i for i, r in enumerate(budgeted, 1) if r["status"] == "ok"
                    and json.loads(r["observation"])[0] >= 0.98 * best), None)  # fmt: skip
    top = max((r for r in budgeted if r["status"] == "ok"), key=lambda r: json.loads(r["observation"])[0])
    statuses = {s: sum(r["status"] == s for r in rows) for s in sorted({r["status"] for r in rows})}
    print(f"cloudai optuna seed {seed}{config}, same SLA, disagg lists: {ours_wall:.1f} s for {len(budgeted)} "
          f"measured steps ({statuses}); best {json.loads(top['observation'])[0]:.2f} tokens/s/gpu: "
          f"{top['action']}")  # fmt: skip
    if reached is None:
        print(f"  98 % of aiconfigurator's best: not within {steps} measured steps")
        return
    again, to_reach = cloudai_run(install, DISAGG_SLA, "optuna", reached, extra)
    last = [r for r in again if r["status"] not in ("cached", "infeasible")][-1]
    assert last["action"] == budgeted[reached - 1]["action"], "the same seed asked other points"
    print(
        f"  98 % of aiconfigurator's best at measured step {reached}: {to_reach:.1f} s wall "
        f"({to_reach / their_wall:.2f}x aiconfigurator's {their_wall:.1f} s)"
    )


# The question set (issue 36 item 5), chosen before the search was tuned and not changed to suit it: dense and MoE
# models, h100/h200/b200/gb200, trtllm/vllm/sglang, short and long ISL/OSL, tight and loose TTFT/TPOT.
# name: (model, system, backend, total GPUs, isl, osl, TTFT ms, TPOT ms, MoE)
QUESTIONS: dict[str, tuple[str, str, str, int, int, int, float, float, bool]] = {
    "llama3.1-70b-h100-trtllm-16": ("meta-llama/Meta-Llama-3.1-70B", "h100_sxm", "trtllm", 16, 8000, 1000, 3000, 40,
                                    False),
    "qwen3-8b-b200-vllm-8": ("Qwen/Qwen3-8B", "b200_sxm", "vllm", 8, 512, 128, 200, 8, False),
    "llama4-scout-h200-trtllm-8": ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "h200_sxm", "trtllm", 8, 2000, 500,
                                   1000, 20, True),
    "qwen3-235b-a22b-b200-trtllm-16": ("Qwen/Qwen3-235B-A22B", "b200_sxm", "trtllm", 16, 4000, 1000, 2000, 50, True),
    "qwen3-32b-gb200-sglang-8": ("Qwen/Qwen3-32B", "gb200", "sglang", 8, 16000, 1000, 5000, 30, False),
    "qwen3-30b-a3b-b200-sglang-8": ("Qwen/Qwen3-30B-A3B", "b200_sxm", "sglang", 8, 1024, 2048, 500, 15, True),
    "llama3.1-8b-h100-vllm-4": ("meta-llama/Meta-Llama-3.1-8B", "h100_sxm", "vllm", 4, 2000, 200, 300, 10, False),
    "qwen3-235b-a22b-h100-vllm-16": ("Qwen/Qwen3-235B-A22B", "h100_sxm", "vllm", 16, 4000, 500, 2000, 40, True),
}  # fmt: skip
CLI_CACHE = Path(__file__).with_name("aiconfigurator_questions.json")  # the last run's cli default answers
MODES = ("agg", "disagg")
# aiconfigurator 0.12's own batch-size schedules (sdk/sweep.py), up to 512
AGG_BATCHES = [*range(1, 16), *range(16, 32, 4), *range(32, 64, 8), *range(64, 256, 16), *range(256, 513, 32)]
DECODE_BATCHES = [*range(1, 16), *range(16, 32, 2), *range(32, 128, 4), *range(128, 512, 8), 512]


def cli_default(install: Path, name: str) -> dict[str, Any]:
    """``aiconfigurator cli default`` of one question: its wall time and its best agg and disagg tokens/s/GPU
    counted its way (``tokens/s/gpu_cluster``: over all ``--total-gpus``, idle ones included) with their rows."""
    model, system, backend, gpus, isl, osl, ttft, tpot, _ = QUESTIONS[name]
    main = "import sys; from aiconfigurator.main import main; sys.argv[0] = 'aiconfigurator'; main()"
    with tempfile.TemporaryDirectory() as out:
        argv = [python(install), "-c", main, "cli", "default", "--save-dir", out, "--top-n", "5", "--model-path",
                model, "--system", system, "--backend", backend, "--total-gpus", str(gpus), "--isl", str(isl),
                "--osl", str(osl), "--ttft", str(ttft), "--tpot", str(tpot)]  # fmt: skip
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        answer: dict[str, Any] = {"wall_s": round(time.perf_counter() - start, 2)}
        for mode in MODES:
            (path,) = Path(out).glob(f"**/{mode}/best_config_topn.csv")
            with path.open() as f:
                rows = list(csv.DictReader(f))
            top = max(rows, key=lambda r: float(r["tokens/s/gpu_cluster"]))
            answer[mode] = float(top["tokens/s/gpu_cluster"])
            answer[f"{mode}_row"] = top
    return answer


def cli_answers(install: Path, refresh: bool) -> dict[str, dict[str, Any]]:
    """Every question's ``cli_default``, cached in ``CLI_CACHE`` (tens of seconds each on 2 cores)."""
    cached = json.loads(CLI_CACHE.read_text()) if CLI_CACHE.exists() and not refresh else {}
    for name in QUESTIONS:
        if name not in cached:
            cached[name] = cli_default(install, name)
            CLI_CACHE.write_text(json.dumps(cached, indent=1) + "\n")
    return cached


def question_test(name: str, mode: str, seed: int, steps: int) -> str:
    """The test a user would write for a question: the knobs aiconfigurator's own sweep varies, as lists over
    the values it tries (its batch-size schedules up to 512, parallelism 1-8), its SLA as constraints, the optuna
    agent at its defaults."""
    model, system, backend, gpus, isl, osl, ttft, tpot, moe = QUESTIONS[name]
    par = [1, 2, 4, 8]
    head = (
        f'name = "{name}-{mode}-{seed}"\ntest_template_name = "Aiconfigurator"\nagent = "optuna"\n'
        f'agent_steps = {steps}\nagent_metrics = ["tokens_per_s_per_gpu"]\nagent_reward_function = "identity"\n'
        f'agent_constraints = {{ ttft_ms = "<= {ttft}", tpot_ms = "<= {tpot}" }}\nagent_config = {{ seed = {seed} }}\n'
        f'[cmd_args]\nmodel_name = "{model}"\nsystem = "{system}"\nbackend = "{backend}"\nisl = {isl}\nosl = {osl}\n'
        f"total_gpus = {gpus}\n[cmd_args.{mode}]\n"
    )
    if mode == "agg":
        knobs = {"tp": par, "batch_size": AGG_BATCHES, "ctx_tokens": sorted({isl, 2 * isl, 2048, 4096, 8192})}
        if moe:
            knobs |= {"dp": par, "moe_tp": par, "moe_ep": par}
    else:
        workers = list(range(1, 9))
        knobs = {"p_tp": par, "p_bs": [1, 2, 4, 8], "p_workers": workers, "d_tp": par, "d_bs": DECODE_BATCHES,
                 "d_workers": workers}  # fmt: skip
        if moe:
            knobs |= {f"{side}_{k}": par for side in "pd" for k in ("dp", "moe_tp", "moe_ep")}
    return head + "".join(f"{k} = {v}\n" for k, v in knobs.items())


def section_questions(install: Path, seeds: int, steps: int, cached: bool, only: list[str]) -> None:
    """Each question through ``cli default`` (cached) and through cloudai's optuna agent at its defaults, ``seeds``
    seeds per mode, in this process on the real env (``build_env``: each trial is whatever a ``cloudai run``
    step is on this tree), one warm worker for all; ``cli default`` runs just before each question's searches
    (``cached``: its answers from ``CLI_CACHE``). A search stops once it reaches 98 % of aiconfigurator's best
    of its mode (or after ``steps`` measured steps); its time runs from building its env to that step's tell."""
    from cloudai.agents.optuna_agent import OptunaAgent
    from cloudai.envs.base import Feedback
    from cloudai.plan.agent_checks import agent_config
    from cloudai.plan.load import build_system, load_plan
    from cloudai.run.dse import build_env
    from cloudai.workloads.aiconfigurator import worker
    from cloudai.workloads.aiconfigurator.workload import Aiconfigurator

    names = [n for n in QUESTIONS if not only or n in only]
    answers = cli_answers(install, False) if cached else {}

    class ToTarget(OptunaAgent):
        target = math.inf
        reached: int | None = None
        measured = 0
        top = 0.0

        def update_policy(self, feedback: Feedback) -> None:
            super().update_policy(feedback)
            self.statuses[feedback.status] = self.statuses.get(feedback.status, 0) + 1
            if feedback.status == "failed" and KEEP:
                print("   failed:", feedback.action, feedback.info.get("reason"))
            if feedback.status not in ("cached", "infeasible"):
                self.measured += 1
            if feedback.status == "ok":
                self.top = max(self.top, feedback.reward)
                if feedback.reward >= self.target and self.reached is None:
                    self.reached = self.measured
                    self.stop_reason = "reached"

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tests").mkdir()
        entries = []
        for name in names:
            for mode in MODES:
                for seed in range(1, seeds + 1):
                    test = f"{name}-{mode}-{seed}"
                    (root / "tests" / f"{test}.toml").write_text(question_test(name, mode, seed, steps))
                    entries.append(f'[[Tests]]\nid = "{test}"\ntest_name = "{test}"\n')
        (root / "s.toml").write_text('name = "s"\n' + "".join(entries))
        (root / "system.toml").write_text(
            f'name = "local"\nscheduler = "standalone"\ninstall_path = "{install}"\noutput_path = "{root / "out"}"\n'
        )
        plan = load_plan(root / "system.toml", root / "tests", root / "s.toml")
        system = build_system(plan.system_config)
        results: dict[tuple[str, str], list[tuple[int | None, float, float]]] = {}
        with Aiconfigurator().session(install):
            for checked in plan.checked.values():
                name, mode, _ = checked.entry.id.rsplit("-", 2)
                if name not in answers:
                    answers[name] = cli_default(install, name)
                    print(f"  aiconfigurator cli default {name}: {answers[name]['wall_s']:.1f} s, best agg "
                          f"{answers[name]['agg']:.1f}, disagg {answers[name]['disagg']:.1f}", flush=True)  # fmt: skip
                    saved = json.loads(CLI_CACHE.read_text()) if CLI_CACHE.exists() else {}
                    CLI_CACHE.write_text(json.dumps(saved | {name: answers[name]}, indent=1) + "\n")
                worker.forget()  # each search learns from its own steps only, as a `cloudai run` does
                start = time.perf_counter()
                env = build_env(plan, checked, root / "out", system=system)
                agent = ToTarget(env, agent_config(checked.entry, OptunaAgent), steps)
                agent.target, agent.statuses = 0.98 * answers[name][mode], {}
                try:
                    agent.run()
                finally:
                    env.close()
                wall = time.perf_counter() - start
                share = agent.top / answers[name][mode]
                results.setdefault((name, mode), []).append((agent.reached, wall, share))
                at = f"at step {agent.reached}" if agent.reached else "not reached"
                print(f"  {checked.entry.id}: {share:.1%} of aiconfigurator's best, {at}, {wall:.1f} s "
                      f"{agent.statuses}", flush=True)  # fmt: skip
    print_table(names, answers, results, steps)


def print_table(
    names: list[str],
    answers: dict[str, dict[str, Any]],
    results: dict[tuple[str, str], list[tuple[int | None, float, float]]],
    steps: int,
) -> None:
    """One row per question and mode: aiconfigurator's wall and best, then per seed the measured steps to 98 %
    of its best and the time to get there as a multiple of its wall (``-``: not within ``steps``, best % then)."""
    print("\n| question | mode | aiconfigurator: wall s, best tokens/s/GPU | cloudai optuna per seed: steps to 98 % "
          "(time to it = x its wall) | aims met |\n|---|---|---|---|---|")  # fmt: skip
    met = total = reached_any = 0
    for name in names:
        for mode in MODES:
            wall = answers[name]["wall_s"]
            cells, ok = [], 0
            for reached, took, share in results[(name, mode)]:
                if reached is None:
                    cells.append(f"- ({share:.1%}, {took:.0f} s)")
                    continue
                ok += took <= 0.5 * wall
                reached_any += 1
                cells.append(f"{reached} ({took:.1f} s = {took / wall:.2f}x)")
            met, total = met + ok, total + len(cells)
            print(f"| {name} | {mode} | {wall:.0f} s, {answers[name][mode]:.1f} | {', '.join(cells)} | "
                  f"{ok}/{len(cells)} |")  # fmt: skip
    print(f"\nruns at >= 98 % of aiconfigurator's best within {steps} steps: {reached_any}/{total}; also in <= 0.5x "
          f"its wall time (both aims): {met}/{total}")  # fmt: skip


def section_landscape(install: Path, grid: Path, seeds: int) -> None:
    from aiconfigurator_landscape import report  # beside this script (sys.path[0])

    if not grid.exists():
        start = time.perf_counter()
        size = next((name for name in ("small", "large") if name in grid.name), "full")
        count = os.cpu_count() or 1
        shards = [grid.with_suffix(f".{i}.csv") for i in range(count)]
        script = str(REPO / "benchmarks" / "aiconfigurator_grid.py")
        procs = [subprocess.Popen([python(install), script, str(shard), size, str(i), str(count)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for i, shard in enumerate(shards)]  # fmt: skip
        if any(proc.wait() != 0 for proc in procs):
            raise SystemExit(f"aiconfigurator_grid.py failed for {grid}")
        lines = [shard.read_text().splitlines(keepends=True) for shard in shards]
        grid.write_text("".join([lines[0][0], *(line for part in lines for line in part[1:])]))
        for shard in shards:
            shard.unlink()
        print(f"exhaustive grid ({size}) evaluated in {time.perf_counter() - start:.0f} s ({count} processes)")
    report(grid, seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install-path", type=Path, default=REPO / ".cache" / "install")
    parser.add_argument("--section", choices=["cost", "cli", "landscape", "questions", "all"], default="all")
    parser.add_argument(
        "--grid",
        type=Path,
        default=REPO / ".cache" / "aiconfigurator_grid_full.csv",
        help="the exhaustive grid's CSV (computed when missing; 'small'/'large' in the name: smaller)",
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200, help="cloudai's steps in the cli comparison")
    parser.add_argument(
        "--agent-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an agent_config field for the cli comparison's runs (TOML), e.g. 'ordinal = true'",
    )
    parser.add_argument("--question-seeds", type=int, default=3, help="seeds per question and mode")
    parser.add_argument(
        "--cached-cli", action="store_true", help="cli default's answers from aiconfigurator_questions.json"
    )
    parser.add_argument("--question", action="append", default=[], help="only this question (repeatable)")
    args: Any = parser.parse_args()
    install = args.install_path.absolute()
    if args.section in ("cost", "all"):
        section_cost(install)
    if args.section in ("cli", "all"):
        section_cli(install, args.steps, args.seeds, "".join(f", {c}" for c in args.agent_config))
    if args.section in ("landscape", "all"):
        section_landscape(install, args.grid, args.seeds)
    if args.section in ("questions", "all"):
        section_questions(install, args.question_seeds, args.steps, args.cached_cli, args.question)


if __name__ == "__main__":
    main()
