"""CloudAI's pre_test/post_test hooks around agent-driven (DSE) tests: plain jobs before and after the sweep.

A plain scenario's hook entries are ordinary entries the plain runner orders by their
dependencies (``cloudai.config.hooks``). An agent-driven scenario runs its hook entries here,
through the same ``PlainRunner``: every pre-test job first; when one of them did not end ok the
sweep is not started (CloudAI skips a test whose pre-test failed) and the exit code is 1; else
the agents run, then every post-test job, whatever the sweep's outcome (CloudAI runs the
post-test after the test inside the same ``if PRE_TEST_SUCCESS`` block). An interrupt stops
there: no post-test after Ctrl-C.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.config.hooks import hook_entries
from cloudai.run import Echo
from cloudai.run.plain import PlainRunner, dry_run_plain

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.systems.base import Job, System


def run_around_hooks(plan: Plan, run_dir: Path, system: System, echo: Echo, sweep: Callable[[], int]) -> int:
    """Pre-test jobs, then ``sweep()`` (the agent-driven run) unless one failed, then post-test jobs; the exit code."""
    failed = _run_hooks(plan, "pre_test", run_dir, system, echo)
    if failed:
        echo(
            f"error: pre_test '{plan.scenario.pre_test}' failed, so the agent-driven tests were not started:", err=True
        )
        for job in failed:
            reason = f": {job.reason}" if job.reason else ""
            echo(f"  {job.spec.name}: {job.status}{reason} (see {job.spec.job_dir})", err=True)
        return 1
    code = sweep()
    return max(code, 1 if _run_hooks(plan, "post_test", run_dir, system, echo) else 0)


def dry_run_hooks(plan: Plan, field: str, run_dir: Path, system: System, echo: Echo) -> None:
    """Write and list the ``field`` hook jobs of an agent-driven plan, as ``dry-run`` does for plain tests."""
    sub = _hook_plan(plan, field)
    if sub.scenario.entries:
        echo(f"{field} '{getattr(plan.scenario, field)}' (plain jobs {'before' if field == 'pre_test' else 'after'} "
             "the agent-driven tests):")  # fmt: skip
        dry_run_plain(sub, run_dir, system, echo)


def _run_hooks(plan: Plan, field: str, run_dir: Path, system: System, echo: Echo) -> list[Job]:
    """Run the ``field`` hook entries to the end; the jobs that did not end ok."""
    sub = _hook_plan(plan, field)
    if not sub.scenario.entries:
        return []
    echo(f"{field} '{getattr(plan.scenario, field)}': {len(sub.scenario.entries)} hook test(s) as plain jobs")
    max_jobs = int(getattr(plan.system_config, "max_concurrent_jobs", 8))
    return PlainRunner(system, sub.workloads(), run_dir, max_concurrent=max_jobs).run(sub.scenario).failed


def _hook_plan(plan: Plan, field: str) -> Plan:
    """``plan`` cut down to its ``field`` hook entries, dependencies on the other entries dropped
    (the order between hooks and the sweep is this module's)."""
    entries = hook_entries(plan.scenario, field)
    ids = {e.id for e in entries}
    entries = tuple(
        dataclasses.replace(e, dependencies=tuple(d for d in e.dependencies if d.id in ids)) for e in entries
    )
    checked = {e.id: dataclasses.replace(plan.checked[e.id], entry=e) for e in entries}
    return dataclasses.replace(plan, scenario=dataclasses.replace(plan.scenario, entries=entries), checked=checked)
