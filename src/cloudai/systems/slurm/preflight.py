"""Checks before the first submission: what a cluster cannot do is an exit-2 error, not failed jobs.

* ``mpi``: ``srun --mpi=list`` once; a listed plugin that cannot load (``pmix`` without the PMIx
  library: srun still lists it) is caught by one ``srun --test-only`` probe, which queues nothing.
* node counts and node names: ``sinfo`` once (``-N``: one line per node and partition) against
  every entry's ``num_nodes`` (its largest value when it is a knob) and ``nodes``.

Parsing is pure (tested on captured output); the checks take a ``SlurmCommands``.
"""

from __future__ import annotations

from collections.abc import Sequence

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.systems.base import NodeNeed
from cloudai.systems.slurm.commands import SlurmCommands
from cloudai.systems.slurm.placement import PlacementError, excluded_nodes, resolve_nodes

SINFO_ARGV = ("sinfo", "--noheader", "--Node", "--format=%R|%N")


def parse_mpi_list(stdout: str) -> list[str]:
    """``srun --mpi=list`` -> plugin names, plus versioned ones (``pmix_v4``) Slurm also accepts.

    Slurm 22-23 prints ``MPI plugin types are...`` then one indented name per line, and
    ``specific pmix plugin versions available: pmix_v4,pmix_v5``; older ones ``srun: mpi/pmix``.
    """
    names: list[str] = []
    for line in stdout.splitlines():
        text = line.strip()
        if "versions available:" in text:
            names += [v.strip() for v in text.split(":", 1)[1].split(",") if v.strip()]
        elif line[:1].isspace() and text:
            names.append(text)
        elif text.startswith("srun: mpi/"):
            names.append(text.removeprefix("srun: mpi/"))
    return list(dict.fromkeys(names))


def parse_sinfo_nodes(stdout: str) -> dict[str, list[str]]:
    """``sinfo -N -h -o '%R|%N'`` -> node names by partition (a node may sit in several)."""
    nodes: dict[str, list[str]] = {}
    for line in stdout.splitlines():
        partition, sep, node = line.strip().partition("|")
        if sep and partition and node:
            nodes.setdefault(partition, [])
            if node not in nodes[partition]:
                nodes[partition].append(node)
    return nodes


def check_mpi(commands: SlurmCommands, config: SlurmSystemConfig) -> None:
    """``mpi`` names a plugin this cluster's srun loads; else ``ConfigError`` with what it offers."""
    listed = commands.run(["srun", "--mpi=list"])
    if not listed.ok:
        return  # srun itself is missing or broken: the first job says so; nothing to compare against
    offered = parse_mpi_list(listed.stdout + "\n" + listed.stderr)
    system = f"Slurm system '{config.name}'"
    if offered and config.mpi not in offered:
        raise ConfigError(
            f"{system}: mpi = '{config.mpi}' is not offered by this cluster (srun --mpi=list: {', '.join(offered)})",
            field="mpi",
            hint=_mpi_fix(offered),
        )
    if config.mpi == "none":
        return
    probe = ["srun", f"--mpi={config.mpi}", "--test-only", "-N1", f"--partition={config.default_partition}"]
    probe += [f"--account={config.account}", "true"] if config.account else ["true"]
    result = commands.run(probe)
    if not result.ok and ("MPI" in result.stderr or "mpi/" in result.stderr):
        detail = next((line for line in result.stderr.splitlines() if "can not load" in line), result.stderr.strip())
        loadable = [name for name in offered if name != config.mpi and not name.startswith(f"{config.mpi}_")]
        raise ConfigError(
            f"{system}: mpi = '{config.mpi}' is listed by srun --mpi=list but does not load here: "
            f"{detail.removeprefix('srun: error:').strip()}",
            field="mpi",
            hint=_mpi_fix(loadable),
        )


def _mpi_fix(names: Sequence[str]) -> str:
    return f'set mpi in the system TOML to one of: {", ".join(names)} ("none": no process manager interface)'


def check_placement(config: SlurmSystemConfig, needs: Sequence[NodeNeed]) -> list[Problem]:
    """What the system TOML alone can tell: every ``nodes`` spec resolves, host lists parse."""
    problems: list[Problem] = []
    for need in needs:
        try:
            resolve_nodes(need.nodes, config)
            excluded_nodes(config, need.exclude_nodes)
        except PlacementError as exc:
            problems.append(Problem(None, need.where, str(exc)))
    return problems


def check_nodes(commands: SlurmCommands, config: SlurmSystemConfig, needs: Sequence[NodeNeed]) -> list[Problem]:
    """Every entry fits the partition ``sinfo`` reports: enough nodes, named nodes exist there."""
    result = commands.run(list(SINFO_ARGV))
    if not result.ok:
        return []  # no sinfo: Slurm will refuse an impossible job itself, with its own words
    partition = config.default_partition
    partitions = parse_sinfo_nodes(result.stdout)
    if partition not in partitions:
        message = f"partition '{partition}' is not on this cluster (sinfo lists: {', '.join(partitions) or 'none'})"
        return [Problem(None, "default_partition", f"Slurm system '{config.name}': {message}",
                        did_you_mean(partition, partitions))]  # fmt: skip
    members = partitions[partition]
    problems: list[Problem] = []
    for need in needs:
        named = resolve_nodes(need.nodes, config)
        avoided = set(excluded_nodes(config, need.exclude_nodes))
        usable = [node for node in members if node not in avoided]
        unknown = [node for node in named if node not in members]
        if unknown:
            problems.append(
                Problem(
                    None,
                    need.where,
                    f"nodes {', '.join(unknown)} are not in partition '{partition}' (sinfo lists: "
                    f"{', '.join(members) or 'none'})",
                    "name nodes of the partition, or change default_partition",
                )
            )
        elif not named and need.num_nodes > len(usable):
            left = f" ({len(members) - len(usable)} excluded)" if len(usable) != len(members) else ""
            problems.append(
                Problem(
                    None,
                    need.where,
                    f"needs {need.num_nodes} nodes, partition '{partition}' has {len(usable)}{left}",
                    f"set num_nodes to at most {len(usable)}, or use a partition with more nodes",
                )
            )
    return problems
