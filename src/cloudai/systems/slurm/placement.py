"""Node placement on Slurm, as CloudAI renders it: which nodes a job may (or must not) use.

A scenario entry's ``nodes = [...]`` holds node names, Slurm host lists (``"node-[001-004]"``)
or CloudAI's ``"PARTITION:GROUP:COUNT"`` specs (``COUNT`` a number or ``max_avail``: every node
of the group). When it is given, the job runs on exactly those nodes: ``#SBATCH --nodelist=a,b``
replaces ``#SBATCH -N`` and the node count is the list's length (CloudAI's rule). The system's
and the entry's ``exclude_nodes`` become one ``#SBATCH --exclude=...``.

Groups are resolved from the system TOML alone (the group's first ``COUNT`` nodes, in the
order the TOML lists them), so a dry-run script equals the submitted one; CloudAI prefers idle
nodes of the group at submission time instead. Pure functions: nothing here asks Slurm.
"""

from __future__ import annotations

from collections.abc import Sequence

from cloudai.config import hostlist
from cloudai.config.hostlist import HostlistError
from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import did_you_mean


class PlacementError(ValueError):
    """A ``nodes`` spec the system cannot resolve; the message says what and how to fix it."""


def expand_hostlist(text: str) -> list[str]:
    """``config.hostlist.expand_hostlist``, its refusals as ``PlacementError`` (checked at load already)."""
    try:
        return hostlist.expand_hostlist(text)
    except HostlistError as exc:
        raise PlacementError(str(exc)) from None


def _group_nodes(config: SlurmSystemConfig, partition: str, group: str) -> list[str]:
    by_name = {p.name: p for p in config.partitions}
    if partition not in by_name:
        raise PlacementError(f"unknown partition '{partition}'; {did_you_mean(partition, by_name)}")
    groups = {g.name: g for g in by_name[partition].groups}
    if group not in groups:
        hint = did_you_mean(group, groups) if groups else "the partition declares no [[partitions.groups]]"
        raise PlacementError(f"unknown group '{group}' in partition '{partition}'; {hint}")
    return [name for item in groups[group].nodes for name in expand_hostlist(item)]


def resolve_nodes(specs: Sequence[str], config: SlurmSystemConfig) -> list[str]:
    """Every node the entry names, in order, without duplicates. Raises ``PlacementError``."""
    nodes: list[str] = []
    for spec in specs:
        if ":" not in spec:
            nodes += expand_hostlist(spec)
            continue
        parts = spec.split(":")
        if len(parts) != 3:
            raise PlacementError(f"'{spec}': use PARTITION:GROUP:COUNT (e.g. main:group1:2) or node names")
        partition, group, count = parts
        members = _group_nodes(config, partition, group)
        if count == "max_avail":
            nodes += members
            continue
        if not count.isdigit() or int(count) < 1:
            raise PlacementError(f"'{spec}': COUNT must be a positive number or max_avail")
        if int(count) > len(members):
            raise PlacementError(f"'{spec}' asks for {count} nodes; group '{group}' has {len(members)}")
        nodes += members[: int(count)]
    return list(dict.fromkeys(nodes))


def excluded_nodes(config: SlurmSystemConfig, entry_exclude: Sequence[str]) -> list[str]:
    """The system's ``exclude_nodes`` then the entry's, host lists expanded, without duplicates."""
    names = [name for item in (*config.exclude_nodes, *entry_exclude) for name in expand_hostlist(item)]
    return list(dict.fromkeys(names))


def placement_flags(
    config: SlurmSystemConfig, num_nodes: int, nodes: Sequence[str] = (), exclude: Sequence[str] = ()
) -> list[str]:
    """``#SBATCH`` flags for where the job runs: ``--nodelist`` (or ``-N``) and ``--exclude``."""
    chosen = resolve_nodes(nodes, config)
    flags = [f"--nodelist={','.join(chosen)}"] if chosen else [f"-N {num_nodes}"]
    avoided = excluded_nodes(config, exclude)
    if avoided:
        flags.append(f"--exclude={','.join(avoided)}")
    return flags


def placed_count(config: SlurmSystemConfig, num_nodes: int, nodes: Sequence[str]) -> int:
    """How many nodes the job gets: the node list's length when one is given, else ``num_nodes``."""
    chosen = resolve_nodes(nodes, config)
    return len(chosen) if chosen else num_nodes
