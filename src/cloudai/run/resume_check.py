"""What a ``--resume`` checks before anything is written: the same scenario, unchanged tests, records it can trust.

``check_resume`` refuses a dir that is not of this scenario or whose tests changed since (``cloudai.run.fingerprint``);
``check_records`` refuses one whose recorded steps do not read back whole or are not points of the test's space.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.errors import ConfigError
from cloudai.readfile import read_regular
from cloudai.recordfiles import TRAJECTORY_FILE
from cloudai.run.fingerprint import resume_changes

if TYPE_CHECKING:
    from cloudai.plan.load import Plan


def check_resume(plan: Plan, run_dir: Path, warm_command: str = "") -> None:
    """``run_dir`` must be a results dir of this scenario (its ``run.json`` names the same tests), whose
    tests are unchanged (``fingerprints``); ``warm_command`` is the new run to suggest when they changed."""
    manifest = run_dir / "run.json"
    if not manifest.is_file():
        raise ConfigError(
            "not a cloudai results directory (no run.json)", file=run_dir, hint="pass a dir that `cloudai run` wrote"
        )
    try:
        data = json.loads(read_regular(manifest, 16 << 20))
        ids = [e["id"] for e in data["entries"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"run.json is unreadable: {exc}", file=manifest) from None
    if data.get("scenario") != plan.scenario.name or ids != [e.id for e in plan.scenario.entries]:
        raise ConfigError(
            f"this run was of scenario '{data.get('scenario')}' with tests {ids}, not of '{plan.scenario.name}'",
            file=manifest,
            hint="resume with the same --tests-dir and --test-scenario the run was started with",
        )
    changes = resume_changes(data.get("fingerprints") or {}, list(plan.scenario.entries), plan.system_config)
    if not changes:
        check_records(plan, run_dir)
    if changes:
        raise ConfigError(
            "the tests changed since this run started; resuming would mix two experiments in one trajectory:\n  "
            + "\n  ".join(changes),
            file=manifest,
            field="--resume",
            hint="undo the edit to resume this run (raising only agent_steps is allowed), or start a new run "
            f"that learns from this one: {warm_command or f'cloudai run ... --warm-start {run_dir}'}",
        )


def check_records(plan: Plan, run_dir: Path) -> None:
    """Every recorded step of an agent-driven entry reads back whole (``read_trajectory``: a damaged row names its
    line, a device or an oversized file is refused) and its action is a point of the test's space, before
    anything is written: a resume must not trust, or rewrite, a record it cannot."""
    from cloudai.envs.env_params import sampler_for
    from cloudai.space import point_problem
    from cloudai.trajectory.records import read_trajectory

    for checked in plan.checked.values():
        test_dir = run_dir / checked.entry.id
        if not checked.agent_driven or checked.live_rl or not test_dir.is_dir():
            continue  # a live server defines its own actions
        sampler = sampler_for(checked.entry, checked.space)
        names = tuple(sampler.names) if sampler else ()
        space = checked.space.without(set(names))
        for it_dir in sorted(d for d in test_dir.iterdir() if d.name.isdigit()):
            for row in read_trajectory(it_dir, names):
                problem = point_problem(space, row.action)
                if problem is not None:
                    raise ConfigError(
                        f"step {row.step} records an action that is not a point of the test: {problem}",
                        file=it_dir / TRAJECTORY_FILE,
                        hint="this record is not of this test (edited or copied in): start a new run",
                    )
