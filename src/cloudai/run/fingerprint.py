"""What defines a trial, recorded in ``run.json`` so ``--resume`` never mixes two experiments.

The fingerprint of an entry is a flat ``{"cmd_args.message_size": 1048576, ...}`` map of
everything a trial's result depends on: the workload and its merged ``cmd_args``,
``extra_env_vars``, ``extra_cmd_args``, ``num_nodes``, ``time_limit``, the agent, its
``agent_config`` and seed, ``agent_metrics``, the reward, ``env_params``, and the system's knobs
that reach the job (``JOB_SYSTEM_KNOBS``). The space is defined by the lists and ranges of
those fields, so it is covered. Not in it: ``agent_steps`` (raising it extends a finished
study), ``iterations``, and the ``agent_config`` keys of ``RUN_ONLY_AGENT_CONFIG`` (parallelism,
confirmation, enqueued points: how the run proceeds, not what a trial measures).

``resume_changes`` lists every difference as ``Tests[0] 'a': cmd_args.message_size: 1 -> 2``;
``cloudai.run.dse.check_resume`` refuses the resume (exit 2) when there is any. A ``run.json``
written before fingerprints existed has none: such a run resumes as before. A field an earlier cloudai did not
record (``system.global_env_vars`` before it existed) is no change while it holds its default now: a key absent
from the recorded fingerprint is compared with ``default_fingerprint``, not with null.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cloudai.space import flatten

if TYPE_CHECKING:
    from cloudai.config.scenario import RunEntry

# agent_config keys that change how the run proceeds, not what a trial is: a resume may change them.
RUN_ONLY_AGENT_CONFIG = frozenset({"max_parallel", "confirm", "confirm_repeats", "enqueue"})
# System fields that change what a job does (placement, environment, launcher); not paths, polling or limits.
JOB_SYSTEM_KNOBS = (
    "scheduler", "default_partition", "account", "distribution", "mpi", "gpus_per_node", "ntasks_per_node",
    "global_env_vars", "extra_sbatch_args", "extra_srun_args", "exclusive", "container_mount_home",
)  # fmt: skip


def entry_fingerprint(entry: RunEntry, system_config: object) -> dict[str, Any]:
    """The flat fingerprint of one entry (JSON values only, so it compares equal after a round trip)."""
    agent = entry.agent
    parts: dict[str, Any] = {
        "test_template_name": entry.workload,
        "cmd_args": entry.cmd_args,
        "extra_env_vars": entry.extra_env_vars,
        "extra_cmd_args": entry.extra_cmd_args,
        "num_nodes": entry.num_nodes,
        "time_limit_s": entry.time_limit_s,
        "agent": agent.name,
        "agent_config": {k: v for k, v in (agent.config or {}).items() if k not in RUN_ONLY_AGENT_CONFIG},
        "seed": agent.seed,
        "agent_metrics": list(agent.metrics),
        "agent_reward_function": agent.reward,
        "env_params": {name: spec.model_dump(exclude_none=True) for name, spec in (agent.env_params or {}).items()},
        "system": {name: getattr(system_config, name, None) for name in JOB_SYSTEM_KNOBS},
    }
    return json.loads(json.dumps(_flat(parts), sort_keys=True, default=str))


def default_fingerprint(system_config: object) -> dict[str, Any]:
    """What a field absent from an earlier cloudai's fingerprint held then: the system knobs' defaults (an entry's
    own fields were always recorded; one added later reads as unset, null)."""
    fields = getattr(type(system_config), "model_fields", {})
    system = {name: fields[name].get_default(call_default_factory=True) if name in fields else None
              for name in JOB_SYSTEM_KNOBS}  # fmt: skip
    return json.loads(json.dumps(_flat({"system": system}), sort_keys=True, default=str))


def resume_changes(recorded: Mapping[str, Any], entries: list[RunEntry], system_config: object) -> list[str]:
    """``id -> fingerprint`` recorded in run.json against the entries now; one line per changed field."""
    lines = []
    for entry in entries:
        old = recorded.get(entry.id)
        if not isinstance(old, dict):
            continue
        new = entry_fingerprint(entry, system_config)
        defaults = default_fingerprint(system_config)
        for key in sorted(set(old) | set(new)):  # a field absent now is unset (null); absent then, its default
            before = old[key] if key in old else defaults.get(key)
            if before != new.get(key):
                lines.append(f"{entry.field_prefix} '{entry.id}': {key}: {_show(before)} -> {_show(new.get(key))}")
    return lines


def _show(value: Any) -> str:
    return "(unset)" if value is None else json.dumps(value, default=str)


def _flat(parts: Mapping[str, Any]) -> dict[str, Any]:
    """Nested tables as dotted keys (``cmd_args.algo``), so a change names the knob; empty tables kept."""
    flat: dict[str, Any] = {}
    for key, value in parts.items():
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{key}."))
        else:
            flat[key] = value
    return flat
