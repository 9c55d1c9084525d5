"""The map of the program: load -> validate -> route -> run (runner or agent) -> report.

Nothing here prints; ``echo`` is the CLI's. Nothing is written before validation passed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cloudai.config.hooks import hooks_of, load_hooks, with_hooks
from cloudai.config.scenario import Scenario, load_scenario
from cloudai.config.system import load_system
from cloudai.config.test import load_tests
from cloudai.errors import ConfigError
from cloudai.systems import SYSTEMS, System
from cloudai.systems.base import NodeNeed
from cloudai.validation import CheckedEntry, check_scenario
from cloudai.workloads import WORKLOADS
from cloudai.workloads.base import Workload

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """A validated scenario, ready to run: nothing has been written yet."""

    system_config: Any
    scenario: Scenario
    checked: dict[str, CheckedEntry]

    @property
    def agent_driven(self) -> bool:
        return any(c.agent_driven for c in self.checked.values())

    def workloads(self) -> dict[str, Workload]:
        return {c.entry.workload: WORKLOADS.get(c.entry.workload)() for c in self.checked.values() if not c.live_rl}


def load_plan(system_config: Path | None, tests_dir: Path, scenario_file: Path) -> Plan:
    system = load_system(system_config)
    tests = load_tests(tests_dir)
    scenario = load_scenario(scenario_file, tests)
    checked = check_scenario(scenario)
    if hooks_of(scenario):  # CloudAI's pre_test/post_test: entries ordered around the scenario's own
        scenario = with_hooks(scenario, _hooks_for(scenario, checked, tests_dir))
        checked = check_scenario(scenario)
    return Plan(system, scenario, checked)


def _hooks_for(scenario: Scenario, checked: dict[str, CheckedEntry], tests_dir: Path) -> dict[str, Scenario]:
    agent = [c.entry.id for c in checked.values() if c.agent_driven]
    if agent:
        field = next(iter(hooks_of(scenario)))
        raise ConfigError(
            f"{field} hooks run around plain tests; {', '.join(agent)} is agent-driven",
            file=scenario.file,
            field=field,
            hint=f"remove {field}, or run the hook as a scenario of its own before the DSE",
        )
    return load_hooks(scenario, tests_dir)


def node_needs(plan: Plan) -> list[NodeNeed]:
    """What each entry asks of the cluster, for ``System.preflight``: its largest ``num_nodes`` and placement."""
    needs: list[NodeNeed] = []
    for checked in plan.checked.values():
        entry = checked.entry
        counts = entry.num_nodes if isinstance(entry.num_nodes, list) else [entry.num_nodes]
        where = f"{entry.scenario_file}: {entry.field_prefix} ({entry.id})"
        needs.append(NodeNeed(where, max(counts), entry.nodes, entry.exclude_nodes))
    return needs


def build_system(config: BaseModel) -> System:
    return SYSTEMS.get(str(getattr(config, "scheduler", "")))(config)  # type: ignore[call-arg]


def create_run_dir(root: Path, scenario_name: str) -> Path:
    """``<root>/<scenario>_<YYYY-MM-DD_HH-MM-SS>``, made unique, created; unwritable -> ConfigError."""
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    base = root / f"{scenario_name}_{stamp}"
    candidate, n = base, 1
    try:
        root.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                candidate.mkdir()
                return candidate
            except FileExistsError:
                candidate, n = base.with_name(f"{base.name}-{n}"), n + 1
    except OSError as exc:
        raise ConfigError(
            f"cannot create the results directory: {exc.strerror}", file=root, hint="pass a writable --output-dir"
        ) from None


def write_run_manifest(plan: Plan, run_dir: Path) -> None:
    """``run.json``: what ran, so reports and ``--resume`` need not re-read the TOML."""
    entries = [
        {
            "id": c.entry.id,
            "test_name": c.entry.test_name,
            "workload": c.entry.workload,
            "iterations": c.entry.iterations,
            "agent_driven": c.agent_driven,
            "live_rl": c.live_rl,
            "agent": c.entry.agent.name if c.agent_driven else None,
            "agent_metrics": list(c.entry.agent.metrics),
            "reward_function": c.entry.agent.reward,
            "env_params": sorted(c.entry.agent.env_params or {}),
        }
        for c in plan.checked.values()
    ]
    manifest = {
        "scenario": plan.scenario.name,
        "scenario_file": str(plan.scenario.file),
        "started_at": time.time(),
        "system": getattr(plan.system_config, "name", ""),
        "entries": entries,
    }
    (run_dir / "run.json").write_text(json.dumps(manifest, indent=1))


def output_root(plan: Plan, output_dir: Path | None) -> Path:
    return output_dir if output_dir is not None else Path(plan.system_config.output_path)


def run_plain(plan: Plan, run_dir: Path, system: System) -> int:
    """Run every plain entry; exit code 1 when any job did not end ok."""
    from cloudai.runner import PlainRunner

    max_jobs = int(getattr(plan.system_config, "max_concurrent_jobs", 8))
    outcome = PlainRunner(system, plan.workloads(), run_dir, max_concurrent=max_jobs).run(plan.scenario)
    return 1 if outcome.failed else 0


def dry_run_plain(plan: Plan, run_dir: Path, system: System, echo: Echo) -> None:
    """Write each job's script into its job dir and print the plan; run nothing."""
    from cloudai.runner import build_spec, job_dir, plain_values

    workloads = plan.workloads()
    for entry in plan.scenario.entries:
        for iteration in range(entry.iterations):
            directory = job_dir(run_dir, entry, iteration)
            spec = build_spec(
                entry, workloads[entry.workload], plain_values(entry), directory, f"{entry.id}.{iteration}"
            )
            directory.mkdir(parents=True, exist_ok=True)
            (directory / "cmd.sh").write_text(system.render(spec))
            deps = ", ".join(f"{d.type}:{d.id}" for d in entry.dependencies) or "-"
            echo(f"{spec.name}: {' '.join(spec.argv)}  [after: {deps}]")
