"""Plain jobs: every scenario entry x ``iterations``, honouring dependencies, bounded concurrency.

Dependency semantics (CloudAI's), for an entry B that names entry A:

* ``start_post_init``: B starts once A's first job has started;
* ``start_post_comp``: B starts once every iteration of A has finished, whatever its status;
* ``end_post_comp``: B starts at once and is stopped (status ``stopped``, not a failure)
  when every iteration of A has finished.

Iterations of one entry run one after another. Ctrl-C / SIGTERM (raised as
``KeyboardInterrupt``) cancels every running job, records it, and raises ``Interrupted``.
The same job plumbing (``build_spec``, ``finish_job``) serves the DSE env's trials.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cloudai.plan.load import Plan

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cloudai.config.scenario import RunEntry, Scenario
from cloudai.errors import CloudAIError, Interrupted
from cloudai.jobs.spec import build_spec, finish_job, job_dir, plain_values
from cloudai.run import Echo
from cloudai.run.plain_progress import PlainProgress
from cloudai.systems.base import DEPENDENCY_TYPES, Job, JobStatus, System
from cloudai.workloads.base import Workload

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Unit:
    entry: RunEntry
    iteration: int
    job: Job | None = None
    skipped: str = ""  # why it never started
    recorded: bool = False

    @property
    def final(self) -> bool:
        return bool(self.skipped) or (self.job is not None and self.job.done)


@dataclass
class PlainOutcome:
    """What the run did: one record per (entry, iteration)."""

    jobs: list[Job] = field(default_factory=list)

    @property
    def failed(self) -> list[Job]:
        return [j for j in self.jobs if j.status not in (JobStatus.OK, JobStatus.STOPPED)]


class PlainRunner:
    """Runs the plain entries of a scenario on one system."""

    def __init__(
        self,
        system: System,
        workloads: Mapping[str, Workload],
        run_dir: Path,
        *,
        max_concurrent: int = 8,
        on_finish: Callable[[Job], None] | None = None,
        progress: PlainProgress | None = None,
    ) -> None:
        self.system = system
        self.workloads = workloads
        self.run_dir = run_dir
        self.max_concurrent = max_concurrent
        self.on_finish = on_finish or (lambda job: None)
        self.progress = progress

    def run(self, scenario: Scenario) -> PlainOutcome:
        units = [_Unit(e, i) for e in scenario.entries for i in range(e.iterations)]
        by_entry = {e.id: [u for u in units if u.entry is e] for e in scenario.entries}
        try:
            while not all(u.final for u in units):
                self._stop_ended(units, by_entry)
                while ready := self._ready(units, by_entry):  # a start may make others ready
                    for unit in ready:
                        self._start(unit, self._native_dependencies(unit, by_entry))
                running = [u.job for u in units if u.job is not None and not u.job.done]
                if not running:
                    if not all(u.final for u in units):
                        raise CloudAIError("no job can start: the dependencies cannot be satisfied")
                    continue
                self.system.wait(running, timeout=self.progress.poll_s if self.progress else None)
                self._collect(units)
                if self.progress is not None:
                    self.progress.refresh([u.job for u in units if u.job is not None])
        except KeyboardInterrupt:
            self._interrupt(units)
        except BaseException:  # e.g. the disk filled up: stop what we started, then report
            self.system.cancel([u.job for u in units if u.job is not None and not u.job.done], "run failed")
            raise
        return PlainOutcome([u.job for u in units if u.job is not None])

    def _ready(self, units: list[_Unit], by_entry: dict[str, list[_Unit]]) -> list[_Unit]:
        slots = self.max_concurrent - sum(1 for u in units if u.job is not None and not u.job.done)
        ready: list[_Unit] = []
        for unit in units:
            if len(ready) >= slots:
                break
            if unit.job is not None or unit.skipped:
                continue
            siblings = by_entry[unit.entry.id]
            if unit.iteration > 0 and not siblings[unit.iteration - 1].final:
                continue
            deps = [d for d in unit.entry.dependencies if d.type in DEPENDENCY_TYPES]
            if all(self._dependency_met(d.type, by_entry[d.id]) for d in deps):
                ready.append(unit)
            elif self.system.native_dependencies and all(u.job is not None for d in deps for u in by_entry[d.id]):
                ready.append(unit)  # queued now, behind the other entries' jobs (see _native_dependencies)
        return ready

    def _native_dependencies(self, unit: _Unit, by_entry: dict[str, list[_Unit]]) -> list[str]:
        """``after:ID``/``afterany:ID`` for each dependency not met yet (none when the system has no queue)."""
        if not self.system.native_dependencies:
            return []
        exprs = []
        for dep in unit.entry.dependencies:
            if dep.type in DEPENDENCY_TYPES and not self._dependency_met(dep.type, by_entry[dep.id]):
                ids = [u.job.job_id for u in by_entry[dep.id] if u.job is not None and not u.final]
                exprs.append(f"{DEPENDENCY_TYPES[dep.type]}:{':'.join(ids)}")
        return exprs

    @staticmethod
    def _dependency_met(kind: str, other: list[_Unit]) -> bool:
        if kind == "start_post_init":
            return any(u.job is not None and u.job.started for u in other) or all(u.final for u in other)
        if kind == "start_post_comp":
            return all(u.final for u in other)
        return True  # end_post_comp gates the end, not the start

    def _stop_ended(self, units: list[_Unit], by_entry: dict[str, list[_Unit]]) -> None:
        """Apply end_post_comp: stop (or skip) every unit whose other entry has finished."""
        for unit in units:
            if unit.final:
                continue
            ended = [d.id for d in unit.entry.dependencies if d.type == "end_post_comp" and all(
                u.final for u in by_entry[d.id])]  # fmt: skip
            if not ended:
                continue
            reason = f"{ended[0]} completed (end_post_comp)"
            if unit.job is None:
                unit.skipped = reason
                continue
            self.system.cancel([unit.job], reason)
            if unit.job.status is JobStatus.CANCELLED:
                unit.job.status = JobStatus.STOPPED
            self._finish(unit)

    def _start(self, unit: _Unit, dependencies: list[str]) -> None:
        entry = unit.entry
        workload = self.workloads[entry.workload]
        directory = job_dir(self.run_dir, entry, unit.iteration)
        name = f"{entry.id}.{unit.iteration}"
        spec = build_spec(
            entry,
            workload,
            plain_values(entry),
            directory,
            name,
            self.system.install_path,
            self.system.gpus_per_node,
            self.system.hf_home_path,
        )
        unit.job = self.system.submit(spec, dependencies)
        log.info("started %s (%s)", spec.name, unit.job.job_id)
        if self.progress is not None:
            self.progress.started(unit.job)
        if unit.job.done:
            self._finish(unit)

    def _collect(self, units: list[_Unit]) -> None:
        for unit in units:
            if unit.job is not None and unit.job.done:
                self._finish(unit)

    def _finish(self, unit: _Unit) -> None:
        if unit.job is None or unit.recorded:
            return
        unit.recorded = True
        finish_job(unit.job, self.workloads[unit.entry.workload])
        log.info("%s: %s %s", unit.job.spec.name, unit.job.status, unit.job.reason)
        if self.progress is not None:
            self.progress.finished(unit.job)
        self.on_finish(unit.job)

    def _interrupt(self, units: list[_Unit]) -> None:
        running = [u.job for u in units if u.job is not None and not u.job.done]
        self.system.cancel(running, "interrupted")
        for unit in units:
            if unit.job is not None and unit.job.done:
                self._finish(unit)
        raise Interrupted(f"interrupted: cancelled {len(running)} running job(s); results so far in {self.run_dir}")


def run_plain(plan: Plan, run_dir: Path, system: System, echo: Echo | None = None) -> int:
    """Run every plain entry; exit code 1 when any job did not end ok. ``echo``: show progress through it."""

    max_jobs = int(getattr(plan.system_config, "max_concurrent_jobs", 8))
    if echo is None:
        outcome = PlainRunner(system, plan.workloads(), run_dir, max_concurrent=max_jobs).run(plan.scenario)
        return 1 if outcome.failed else 0
    total = sum(e.iterations for e in plan.scenario.entries)
    with PlainProgress(total, echo) as progress:
        runner = PlainRunner(system, plan.workloads(), run_dir, max_concurrent=max_jobs, progress=progress)
        outcome = runner.run(plan.scenario)
    return 1 if outcome.failed else 0


DRY_RUN_ITERATIONS = 5  # scripts written per entry: iterations only differ in their directory


def dry_run_plain(plan: Plan, run_dir: Path, system: System, echo: Echo, shown: int = DRY_RUN_ITERATIONS) -> None:
    """Write the first ``shown`` iterations' scripts of each entry and print the plan; run nothing.

    Bounded whatever ``iterations`` says (a typo of 10**9 must not write 10**9 dirs): the rest
    are counted, not written.
    """

    workloads = plan.workloads()
    for entry in plan.scenario.entries:
        if entry.iterations > shown:
            echo(f"{entry.id}: {entry.iterations} iterations; scripts for the first {shown} written")
        for iteration in range(min(entry.iterations, shown)):
            directory = job_dir(run_dir, entry, iteration)
            values = plain_values(entry)
            name = f"{entry.id}.{iteration}"
            spec = build_spec(
                entry,
                workloads[entry.workload],
                values,
                directory,
                name,
                system.install_path,
                system.gpus_per_node,
                system.hf_home_path,
            )
            directory.mkdir(parents=True, exist_ok=True)
            (directory / system.script_name).write_text(system.render(spec))
            deps = ", ".join(f"{d.type}:{d.id}" for d in entry.dependencies) or "-"
            echo(f"{spec.name}: {' '.join(spec.argv)}  [after: {deps}]")
