"""A run's results dir: created with a unique name, and its ``run.json`` manifest (what ran, for reports and
``--resume``). Nothing here prints; nothing is written before validation passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.plan.route import CheckedEntry

import json
import shlex
import socket
import sys
import time
from datetime import datetime
from pathlib import Path

from cloudai.atomicfile import atomic_write
from cloudai.errors import ConfigError
from cloudai.run.fingerprint import entry_fingerprint


def create_run_dir(root: Path, scenario_name: str) -> Path:
    """``<root>/<scenario>_<YYYY-MM-DD_HH-MM-SS>``, made unique, created; unwritable -> ConfigError."""
    if any(ord(c) < 32 or c == "\x7f" for c in str(root)):  # it reaches script lines and #SBATCH headers
        raise ConfigError(
            f"output directory {str(root)!r} holds a newline or control character", hint="pass another --output-dir"
        )
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


def _regimes(checked: CheckedEntry) -> dict[str, object]:
    """Each env param's regimes (``space.RegimeBins``), so the report bins as best.toml and the terminal do."""
    from cloudai.envs.env_params import sampler_for

    sampler = sampler_for(checked.entry, checked.space) if checked.entry.agent.env_params else None
    return {name: bins.to_json() for name, bins in sampler.bins().items()} if sampler else {}


def write_run_manifest(plan: Plan, run_dir: Path, command: str = "") -> None:
    """``run.json``: what ran, so reports and ``--resume`` need not re-read the TOML; ``command``: how it was
    started (default: this process's argv)."""
    from cloudai.gymserver.factory import declared_units
    from cloudai.workloads import default_means, latency_charts, units_of

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
            "objectives": {o.metric: o.direction for o in c.entry.agent.objectives},
            "constraints": [k.text for k in c.entry.agent.constraints],
            "log_knobs": [d.name for d in c.space.dims if getattr(d, "log", False)],
            "branches": {name: [selector, value] for name, (selector, value) in c.space.when.items()},
            "units": declared_units(c.entry.cmd_args) if c.live_rl else units_of(c.entry.workload, c.entry.cmd_args),
            "default_means": default_means(c.entry.workload, c.entry.cmd_args),
            "latency_charts": None if c.live_rl else latency_charts(c.entry.workload),
            "env_params": sorted(c.entry.agent.env_params or {}),
            "env_param_regimes": _regimes(c),
            "regime_objective": (c.entry.agent.config or {}).get("regime_objective", "expectation"),
        }
        for c in plan.checked.values()
    ]
    from cloudai import __version__

    manifest = {
        "scenario": plan.scenario.name,
        "cloudai_version": __version__,
        "command": command or shlex.join(sys.argv),
        "host": socket.gethostname(),
        "fingerprints": {c.entry.id: entry_fingerprint(c.entry, plan.system_config) for c in plan.checked.values()},
        "scenario_file": str(plan.scenario.file),
        "started_at": time.time(),
        "system": getattr(plan.system_config, "name", ""),
        "entries": entries,
    }
    (run_dir / "run.json").write_text(json.dumps(manifest, indent=1))


def output_root(plan: Plan, output_dir: Path | None) -> Path:
    return output_dir if output_dir is not None else Path(plan.system_config.output_path)


def record_observation_names(run_dir: Path, entry_id: str, names: list[str]) -> None:
    """A live entry without ``agent_metrics`` observes what its server names: put those names in ``run.json``
    (replacing ``["default"]``), so trials.csv and the report label every observed value, not one "default"."""
    path = run_dir / "run.json"
    manifest = json.loads(path.read_text())
    for entry in manifest["entries"]:
        if entry["id"] == entry_id and entry.get("agent_metrics") in (["default"], None) and names:
            entry["agent_metrics"] = list(names)
            atomic_write(path, json.dumps(manifest, indent=1))
