"""Containment benchmark: what keeping a job's descendants contained costs per standalone job.

``sleep 0`` jobs submitted and waited for one at a time through ``StandaloneSystem``, in this
process, with: no containment (baseline), the subreaper sweep alone, and cgroup v2 + sweep (where
this machine has cgroup v2 writable). Rounds interleave the three so load drifts hit all alike;
the median per-job time of each and its difference from the baseline are printed, with the CPU per job (this
process's and its jobs'): the cgroup move's cost is mostly a wait (an RCU grace period), not CPU.

Run: ``uv run python benchmarks/bench_containment.py``
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from pathlib import Path

from cloudai.config.system import StandaloneSystemConfig
from cloudai.systems.base import JobSpec
from cloudai.systems.contain import Contained, Containment
from cloudai.systems.standalone import StandaloneSystem

JOBS = 40
ROUNDS = 5


class _NoContainment(Containment):
    def __init__(self) -> None:
        self.subreaper, self.cgroup_root, self._free = False, None, []

    def prepare(self) -> Contained:
        return Contained("")


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _per_job_ms(containment: Containment, root: Path) -> tuple[float, float]:
    """(wall, CPU of this process and its jobs) ms per job."""
    system = StandaloneSystem(StandaloneSystemConfig())
    system._contain = containment  # pyright: ignore[reportPrivateUsage]
    start, cpu = time.perf_counter(), _cpu()
    for i in range(JOBS):
        job = system.submit(JobSpec(f"j{i}", ("sleep", "0"), root / str(i)))
        while not job.done:
            system.wait([job], timeout=None)
    return (time.perf_counter() - start) / JOBS * 1000, (_cpu() - cpu) / JOBS * 1000


def main() -> None:
    variants = {
        "none": _NoContainment,
        "subreaper": lambda: Containment(cgroups=False),
        "cgroup+subreaper": Containment,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(ROUNDS):
            for name, make in variants.items():
                wall, cpu = _per_job_ms(make(), Path(tmp) / f"{name}-{r}")
                times[name].append(wall)
                cpus[name].append(cpu)
    base, base_cpu = statistics.median(times["none"]), statistics.median(cpus["none"])
    cgroups = Containment().cgroup_root is not None
    print(f"per job, one at a time ({JOBS} jobs x {ROUNDS} rounds, median); cgroup v2 writable: {cgroups}")
    for name, values in times.items():
        median, cpu = statistics.median(values), statistics.median(cpus[name])
        print(f"  {name:17s} {median:6.2f} ms  (+{median - base:5.2f} ms, x{median / base:.2f} vs none); CPU, jobs "
              f"included, {cpu:.3f} ms (x{cpu / base_cpu:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
