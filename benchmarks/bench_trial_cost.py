"""Marginal cost of one DSE trial (issue 18): cloudai next to a bare loop doing the same spawn and files.

    uv run python benchmarks/bench_trial_cost.py [--sizes 100,1000,10000] [--against REV] [--big] [--dir DIR]
        [--containment cgroup,subreaper] [--profile N]

Each trial is ``sleep 0`` (the cheapest there is: any overhead shows). For each N:

* ours: ``cloudai run`` (the real CLI in a subprocess) of an N-point grid, max_parallel 1. Marginal cost
  per trial = first job's end to last job's end (``job.json``) / (N - 1), so the fixed start-up, the
  first trial's one-time costs (its cgroup move waits for an RCU grace period: ~10 ms) and the report
  are out; the sweep / N (first job submitted to last job ended) is printed beside it. The whole run's
  wall time and the time from the last job's end to the process exit are printed too (the exit must not
  wait for the report).
* bare: the same N trials in this process, with only what the results contract needs per trial
  (RELIABILITY.md "Cost of a trial"): mkdir, ``cmd.sh``, ``stdout.txt``/``stderr.txt`` opened for
  the child, ``Popen`` in a new session, wait, ``job.json``, one trajectory row flushed (fsync at
  most once a second). It runs before and after each run of ours; the mean of those two is its baseline.

The first trial waits for the report's imports (``cloudai-report-imports``, a thread the run starts beside its
trials so that the end of the run need not import them): ~0.3 s of CPU once per run, like the start-up; before
issue 39's third pass they ran inside the marginal window and added ~0.3 ms to every trial of a 1 000-trial run.

Aim: ours / bare <= 1.25 at every N, flat in N: the median of ``--repeat`` rounds (3), each printed.
CPU is what the run costs the machine, jobs included (``RUSAGE_CHILDREN``), also marginal: the workload notes
the run's CPU as the first and the last trial end (``BENCH_CPU_FILE``), the bare loop its own.
``--against REV`` (default ``main``) also runs REV's ``src/`` (``git archive``) in every round, between the
same two bare runs: the floor, REV's figure and this tree's side by side (``--against ''`` skips it).
``--containment`` runs each tree once per ``job_containment`` listed (default ``cgroup``, the default system's;
``subreaper``: no cgroup move per job), side by side in the same rounds.
``--big`` adds N = 100 000 and prints the run's wall time, peak RSS (aim < 3 min, < 200 MB) and checks
trajectory.csv and the report.
``--dir DIR`` puts both runs' files there (default: the system's temp dir). On a disk every file creation
costs 0.1-1 ms and varies with the file system's journal, which hides our overhead; ``--dir /dev/shm``
(tmpfs) takes the file system out and shows what cloudai itself adds.
``--profile N`` runs cloudai in-process under cProfile for N trials and prints the top functions.

Issue 39 item 7, third pass (``--sizes 1000 --against main --containment cgroup,subreaper --repeat 5``, this
2-core VM shared with ~7 sessions, load 2-4.4; CPU ratio, the median of 5 rounds):

* before (main's benchmark and tree): on the disk 1.60x with cgroups, 1.51x without (the floor 1.4-3.1 ms);
  the last pass's figures on tmpfs were 1.51-1.66x;
* the benchmark's window without the one-time report imports, main's tree: on the disk 1.17x and 1.15x (the
  floor 1.3-5.1 ms: file creations on the shared disk), on tmpfs (``--dir /dev/shm``) 1.39x and 1.26x at load
  2.2-4.4 (the floor 1.44 ms), 1.25x and 1.22x at load 2.3-3.6 (the floor 1.21 ms);
* after (this pass's tree, the same rounds): on the disk 1.12x and 0.97x, on tmpfs 1.33x and 1.29x, then 1.19x
  and 1.11x.

cloudai's own CPU per trial apart from its jobs' (RUSAGE_SELF against RUSAGE_CHILDREN, 500 trials on tmpfs, the
three quietest of six rounds): 0.52-0.58 ms, main 0.62-0.66 ms, the bare loop 0.30 ms; the jobs 0.82 ms against
0.81 ms. The rest is ~550 Python calls per trial (was ~700) through the agent, the env, the system, the records and
three log records: the aim holds on the disk, and on tmpfs but for the busiest of the two runs.

Fourth pass (the same command, ``--repeat 3``, load 1.9-3.5; main's tree and this pass's in the same rounds): Python
calls per trial (cProfile around the agent's loop, 1 000 trials on tmpfs) 541 -> 501 (spawn encodes each argv word
in one call, ``Space.names`` cached and ``Space.full`` ordered without a key call per knob, the debug.log handler
without ``Handler.handle``'s filter pass and lock wrappers nor a ``formatTime`` call, the group kill without
``contextlib.suppress``); cloudai's own CPU 0.48 ms per trial either way (in-process, 1 000 trials, RUSAGE_SELF):
the difference is within the noise. CPU ratio, cgroup and subreaper, main -> this:

* on the disk (the floor 1.1-3.6 ms): 1.19x -> 1.23x and 1.12x -> 1.15x;
* on tmpfs (the floor 1.10 ms): 1.26x -> 1.25x and 1.19x -> 1.19x; again (the floor 1.06 ms): 1.36x -> 1.36x and
  1.19x -> 1.19x.

What is left on tmpfs is the cgroup move itself: cgroup against subreaper is +0.06-0.17x in both trees, kernel time of
the ``cgroup.procs`` write (``contain.adopt``), not Python; the way down is a child born in its cgroup
(``clone3`` with ``CLONE_INTO_CGROUP``; glibc >= 2.39's ``posix_spawnattr_setcgroup_np``; this VM has 2.36).

Fifth pass: that was not the move. Timed inside a 1 000-trial run, ``adopt`` took 63 us a trial, 35 of them in
looking for what the job forked before its move (a lookup of ``/proc/<pid>/task/<pid>/children``; the write to
``cgroup.procs`` ~25 us). That lookup is now skipped when /proc/loadavg's last pid is still the job's (nothing forked
since): 28 us. Same command, ``--against 6c03414 --repeat 5``, the VM idle (load 0.6-1.0), cgroup / subreaper:

* on tmpfs (the floor 1.08 ms): 6c03414 1.26x / 1.19x, this 1.21x / 1.18x;
* on the disk (the floor 1.4-3.3 ms, the disk's own noise): 6c03414 1.34x / 1.17x, this 1.22x / 1.25x.

Sixth pass: the job's own process. glibc's child tried the program in each ``PATH`` entry before it (nine failed
``execve`` a start here) and asked, then set, each of the 64 signals' disposition (120 ``rt_sigaction``); now the
program is found once per program and ``PATH`` (``spawn._found``) and every signal not ignored is named to glibc as
a default (64 calls); ``Containment.end`` skips its ``cgroup.events`` read and the orphan sweep when no process was
created since the job's. 2 000 starts in isolation: 861-876 us of CPU (the job's share 749-759) against 886-945
(782-827). ``--repeat 9``, tmpfs, cgroup / subreaper: against 6c03414 in a quiet spell (the floor 1.075 ms) 1.25x /
1.17x -> 1.18x / 1.16x; against eeb0daa in another (1.08 ms) 1.24x / 1.18x -> 1.22x / 1.16x; against 6c03414 in
busier ones (the floor 1.14 and 1.19 ms) 1.35x / 1.22x -> 1.30x /
1.14x and 1.38x / 1.29x -> 1.38x / 1.23x. cgroup's extra over subreaper is the move (``adopt`` ~38 us of wall a
trial, the job ~15-30 us more), and it grows with the machine's noise more than the floor does.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TEST = 'name = "t"\ntest_template_name = "SleepZero"\n[cmd_args]\nseconds = 0\n[extra_env_vars]\nK = {values}\n'
# The real CLI with one extra workload: ``sleep 0`` whose metric is a constant (no file to read), so a trial
# costs exactly its process (an agent-driven test needs a metric; ``Sleep`` declares none).
SETUP = """
import os, resource, threading
from cloudai.workloads import WORKLOADS
from cloudai.workloads.sleep import Sleep

def _cpu():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

class SleepZero(Sleep):
    name = "SleepZero"
    metrics = ("default",)

    def argv(self, args, job):
        # The first trial waits for the report's imports (a thread the run starts beside its trials:
        # cli/running.py _warm_report): a one-time cost of the run, like its start-up, kept out of the marginal window
        if job.job_dir.name == os.environ.get("BENCH_CPU_STEPS", "").split(",")[0]:
            for thread in threading.enumerate():
                if thread.name == "cloudai-report-imports":
                    thread.join()
        return super().argv(args, job)

    def read_metrics(self, job_dir):
        # the run's CPU (its finished jobs included) as the first and the last trial end -> the marginal CPU
        if job_dir.name in os.environ.get("BENCH_CPU_STEPS", "").split(","):
            with open(os.environ["BENCH_CPU_FILE"], "a") as out:
                out.write(f"{job_dir.name} {_cpu()}\\n")
        return {"default": 0.0}

WORKLOADS.register("SleepZero", SleepZero)
"""
RUNNER = SETUP + "import sys\nfrom cloudai.cli import main\nsys.argv[0] = 'cloudai'\nmain()\n"
SCENARIO = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n'
SYSTEM = 'name = "local"\nscheduler = "standalone"\njob_containment = "{containment}"\n'


def _write_inputs(root: Path, n: int, containment: str = "cgroup") -> list[str]:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "tests" / "t.toml").write_text(TEST.format(values=list(range(n))))
    (root / "s.toml").write_text(SCENARIO)
    (root / "system.toml").write_text(SYSTEM.format(containment=containment))
    return ["run", "--tests-dir", str(root / "tests"), "--test-scenario", str(root / "s.toml"),
            "--output-dir", str(root / "out"), "--system-config", str(root / "system.toml")]  # fmt: skip


@contextmanager
def source_tree(rev: str) -> Iterator[Path]:
    """``src/`` of git revision ``rev`` of this repository, unpacked in a temporary dir (for PYTHONPATH)."""
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(repo), "archive", rev, "src"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Path(tmp) / "src"


def ours(root: Path, n: int, src: Path | None = None, containment: str = "cgroup") -> dict[str, float]:
    """One ``cloudai run`` of N trials; ``src``: another tree's ``src/`` (e.g. main's) instead of this one."""
    args = _write_inputs(root, n, containment)
    cpu_file = root / "cpu.txt"  # the step and the run's CPU at each trial's end (SleepZero writes it)
    env = {**os.environ, "BENCH_CPU_FILE": str(cpu_file), "BENCH_CPU_STEPS": f"1,{n}"}
    env |= {"PYTHONPATH": str(src)} if src else {}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    done = subprocess.run([sys.executable, "-c", RUNNER, *args], capture_output=True, text=True, env=env)
    end = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"cloudai run failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    (run_dir,) = (root / "out").iterdir()
    it = run_dir / "t" / "0"
    first = json.loads((it / "1" / "job.json").read_text())
    last = json.loads((it / str(n) / "job.json").read_text())
    rows = (it / "trajectory.csv").read_text().count("\n") - 1
    assert rows == n, f"{rows} trajectory rows for {n} trials"
    report = _wait_report(run_dir)  # before the next measurement: it renders after the exit
    cpu_at = {int(step): float(cpu) for step, cpu in (line.split() for line in cpu_file.read_text().splitlines())}
    return {
        "report": report,  # type: ignore[dict-item]
        "sweep": last["ended_at"] - first["submitted_at"],
        "after_first": last["ended_at"] - first["ended_at"],
        "wall": end - start,
        "tail": end - last["ended_at"],
        "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "cpu_after_first": cpu_at[n] - cpu_at[1] if n > 1 else 0.0,
        "rss_mb": after.ru_maxrss / 1024,
        "files": sum(1 for p in it.rglob("*") if p.is_file()),
        "empty": sum(1 for p in it.rglob("*") if p.is_file() and p.stat().st_size == 0),
        "run_dir": str(run_dir),  # type: ignore[dict-item]
    }


def bare(root: Path, n: int) -> tuple[float, float, float]:
    """N trials doing only what the contract needs; (wall, wall after the first trial, CPU incl. children after
    the first trial) s."""
    root.mkdir(parents=True)
    env = dict(os.environ)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    start = time.perf_counter()
    synced, first_end, first_cpu = 0.0, start, _cpu()
    with (root / "trajectory.csv").open("a") as traj:
        for step in range(1, n + 1):
            job_dir = root / str(step)
            os.mkdir(job_dir)
            fd = os.open(job_dir / "cmd.sh", flags, 0o644)
            os.write(fd, f"#!/usr/bin/env bash\nexport K={step}\ncd {job_dir}\nsleep 0\n".encode())
            os.close(fd)
            out = os.open(job_dir / "stdout.txt", flags, 0o644)
            err = os.open(job_dir / "stderr.txt", flags, 0o644)
            submitted = time.time()
            proc = subprocess.Popen(["sleep", "0"], cwd=job_dir, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env={**env, "K": str(step)}, start_new_session=True)  # fmt: skip
            os.close(out)
            os.close(err)
            code = proc.wait()
            record = {"name": f"t.0.{step}", "status": "ok", "returncode": code, "submitted_at": submitted,
                      "ended_at": time.time(), "argv": ["sleep", "0"], "metrics": {}}  # fmt: skip
            fd = os.open(job_dir / "job.json", flags, 0o644)
            os.write(fd, json.dumps(record, indent=1).encode())
            os.close(fd)
            traj.write(f'{step},1,"{{""K"":{step}}}",-1.0,[null],failed,0.001\n')
            traj.flush()
            if time.monotonic() - synced >= 1.0:
                os.fsync(traj.fileno())
                synced = time.monotonic()
            if step == 1:
                first_end, first_cpu = time.perf_counter(), _cpu()
    end = time.perf_counter()
    return end - start, end - first_end, _cpu() - first_cpu


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(n: int, repeat: int, where: str | None, srcs: dict[str, tuple[Path | None, str]]) -> None:
    """``repeat`` rounds of bare / ours / bare / ours ... / bare (each tree in ``srcs``, in reverse order every
    other round), each run of ours measured against the mean of the bare runs just before and after it: a shared
    VM's speed drifts by +-50 % within a minute, and a floor taken a run away from a tree's run moved its ratio by
    +-0.3x. Each round's ratios are printed and the median is the figure.

    Per-trial figures are marginal: from the first trial's end to the last's, over N - 1, in wall time and in CPU
    (the process's and its finished jobs'), so start-up, the first trial's one-time costs and the report are out."""
    ratios: dict[str, list[float]] = {name: [] for name in srcs}
    sweep_ratios: dict[str, list[float]] = {name: [] for name in srcs}
    cpu_ratios: dict[str, list[float]] = {name: [] for name in srcs}
    cpu_ms: dict[str, list[float]] = {name: [] for name in srcs}
    floors: list[float] = []
    for round_ in range(1, repeat + 1):
        order = list(srcs) if round_ % 2 else list(srcs)[::-1]
        with tempfile.TemporaryDirectory(dir=where) as tmp:
            root = Path(tmp)
            bares = [bare(root / "bare-0", n)]
            runs: dict[str, dict[str, float]] = {}
            for index, name in enumerate(order, 1):
                runs[name] = ours(root / f"ours-{index}", n, *srcs[name])
                bares.append(bare(root / f"bare-{index}", n))
        floor_cpu = [cpu / (n - 1) * 1000 for _, _, cpu in bares]
        floors.append(statistics.mean(floor_cpu))
        print(f"N={n:>6} round {round_}: bare (the floor) runs, CPU ms per trial: "
              + ", ".join(f"{cpu:.3f}" for cpu in floor_cpu))  # fmt: skip
        for index, name in enumerate(order):
            got, (before, after) = runs[name], bares[index : index + 2]
            bare_marginal_ms = (before[1] + after[1]) / 2 / (n - 1) * 1000
            bare_ms, bare_cpu_ms = (before[0] + after[0]) / 2 / n * 1000, (before[2] + after[2]) / 2 / (n - 1) * 1000
            marginal_ms = got["after_first"] / (n - 1) * 1000
            sweep_ms = got["sweep"] / n * 1000
            ours_cpu_ms = got["cpu_after_first"] / (n - 1) * 1000
            ratios[name].append(marginal_ms / bare_marginal_ms)
            sweep_ratios[name].append(sweep_ms / bare_ms)
            cpu_ratios[name].append(ours_cpu_ms / bare_cpu_ms)
            cpu_ms[name].append(ours_cpu_ms)
            print(f"    {name:>13}: per trial {marginal_ms:.2f} ms -> {ratios[name][-1]:.2f}x; sweep / N "
                  f"{sweep_ms:.2f} vs {bare_ms:.2f} ms -> {sweep_ratios[name][-1]:.2f}x; CPU (jobs included) "
                  f"{ours_cpu_ms:.3f} vs {bare_cpu_ms:.3f} ms -> "
                  f"{cpu_ratios[name][-1]:.2f}x; whole run {got['wall']:.2f} s ({got['cpu']:.2f} s CPU), last job "
                  f"end -> exit {got['tail']:.3f} s, peak RSS {got['rss_mb']:.0f} MB, {got['files']:.0f} files "
                  f"({got['empty']:.0f} empty)")  # fmt: skip
    # Contention only adds CPU time (a shared 2-core VM moves a round by +-30 %): the least of the rounds is the
    # closest to each loop's own cost, printed beside the median of the rounds' ratios.
    floor = min(floors)
    median_floor = statistics.median(floors)
    print(f"N={n:>6}: median of {repeat}: the floor's CPU {median_floor:.3f} ms per trial (least {floor:.3f})")
    for name in srcs:
        cpu, marginal, sweep = (statistics.median(x[name]) for x in (cpu_ratios, ratios, sweep_ratios))
        print(f"    {name:>13}: CPU {cpu:.2f}x the floor (aim <= 1.25), least {min(cpu_ms[name]):.3f} ms -> "
              f"{min(cpu_ms[name]) / floor:.2f}x; marginal {marginal:.2f}x; sweep/N {sweep:.2f}x")  # fmt: skip


def big(n: int, where: str | None) -> None:
    """The 10^5-trial run: wall, RSS, and the trajectory and report intact (the report renders after exit)."""
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        got = ours(Path(tmp) / "ours", n)
        run_dir = Path(str(got["run_dir"]))
        report = got["report"]
        rows = (run_dir / "t" / "0" / "trajectory.csv").read_text().count("\n") - 1
        print(f"N={n}: whole run {got['wall']:.1f} s (aim < 180; {got['sweep'] / n * 1000:.2f} ms per trial), "
              f"peak RSS {got['rss_mb']:.0f} MB (aim < 200), last job end -> exit {got['tail']:.2f} s, "
              f"{rows} trajectory rows, report {report}")  # fmt: skip


def _wait_report(run_dir: Path) -> str:
    """Wait for the background report (its pid is in ``report.pid`` while it runs) and check the page."""
    from cloudai.reports.background import wait_for_report

    seconds = wait_for_report(run_dir)
    page = run_dir / "report.html"
    ok = page.exists() and page.read_text().rstrip().endswith("</html>")
    size = page.stat().st_size if page.exists() else 0
    return f"{'complete' if ok else 'MISSING'} ({size} bytes, waited {seconds:.2f} s after the exit)"


def profile(n: int, where: str | None) -> None:
    from click.testing import CliRunner

    from cloudai.cli import cli

    exec(SETUP, {})  # the same SleepZero workload, in this process
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        args = _write_inputs(Path(tmp), n)
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        CliRunner().invoke(cli, args)
        prof.disable()
        from cloudai.reports.background import wait_for_report

        wait_for_report(next((Path(tmp) / "out").iterdir()))
    pstats.Stats(prof).sort_stats(os.environ.get("SORT", "tottime")).print_stats(int(os.environ.get("TOP", "25")))


def main() -> None:
    parser = argparse.ArgumentParser(description="Marginal cost of a trial, cloudai vs a bare loop.")
    parser.add_argument("--sizes", default="100,1000,10000", help="comma-separated trial counts")
    parser.add_argument("--big", action="store_true", help="also N = 100 000: wall, RSS, records and report")
    parser.add_argument("--profile", type=int, default=0, help="cProfile an in-process run of this many trials")
    parser.add_argument("--dir", default=None, help="where the runs write (default: the system's temp dir)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per N (the median ratio is the figure)")
    parser.add_argument("--against", default="main", help="git revision measured beside this tree ('' for none)")
    parser.add_argument("--containment", default="cgroup", help="job_containment modes, each run side by side")
    opts = parser.parse_args()
    if opts.profile:
        profile(opts.profile, opts.dir)
        return
    with contextlib.ExitStack() as stack:
        trees: dict[str, Path | None] = {"this": None}
        if opts.against:
            trees = {opts.against[:6]: stack.enter_context(source_tree(opts.against)), **trees}
        modes = opts.containment.split(",")
        srcs = {
            name if len(modes) == 1 else f"{name}/{mode}": (src, mode) for name, src in trees.items() for mode in modes
        }
        for n in (int(s) for s in opts.sizes.split(",")):
            measure(n, opts.repeat, opts.dir, srcs)
    if opts.big:
        big(100_000, opts.dir)


if __name__ == "__main__":
    main()
