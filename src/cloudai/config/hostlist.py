"""Slurm host lists (``"node-[001-004,7],gpu1"``), checked at load without expanding them.

A scenario entry's ``nodes``/``exclude_nodes`` and a Slurm system's ``exclude_nodes`` and groups' ``nodes`` hold
node names and host lists. ``check_hostlist`` refuses, at load and on every system, what Slurm would refuse: an
empty name, a character Slurm does not allow in a node name (``;``, a space, a quote: these also reach the batch
script), a bracket that is not one ``[ranges]``, a range that runs backwards. It counts the names arithmetically,
so ``n[0-9999999]`` is refused in microseconds for naming more than ``MAX_HOSTS`` nodes instead of being expanded
(1.1 GB, 15-30 s). ``expand_hostlist`` expands a checked list (placement, at render time).
"""

from __future__ import annotations

import re

# More nodes than any one job or exclusion list names; Slurm's largest clusters are ~10^4 nodes.
MAX_HOSTS = 100_000
# Slurm's node names: letters, digits and ``-_.`` (an address-like name may hold ``:``, not allowed here: it is
# how a ``PARTITION:GROUP:COUNT`` spec is told apart).
_NAME_PART = re.compile(r"[A-Za-z0-9._-]*")
_BRACKETED = re.compile(r"([^\[\]]*)\[([^\[\]]+)\]([^\[\]]*)")
_RANGE = re.compile(r"(\d+)-(\d+)")
# One name of a host list: (head, [(low, high, zero-padded width), ...] or None for a plain name, tail).
_Part = tuple[str, list[tuple[int, int, int]] | None, str]
_SPLIT = re.compile(r",\s*(?![^\[]*\])")  # a comma outside brackets separates names


class HostlistError(ValueError):
    """A host list Slurm would refuse; the message names the part and what is wrong with it."""


def _parts(text: str) -> list[_Part]:
    """Each name of ``text`` as ``(head, [(low, high, width), ...] or None, tail)``; raises ``HostlistError``."""
    parts = []
    for part in _SPLIT.split(text.strip()):
        if not part:
            raise HostlistError(f"{text!r} holds an empty node name")
        match = _BRACKETED.fullmatch(part)
        if "[" not in part and "]" not in part:
            head, ranges, tail = part, None, ""
        elif match is None:
            raise HostlistError(f"{part!r} is not a Slurm host list: one [ranges] per name (e.g. node-[001-004])")
        else:
            head, inner, tail = match.groups()
            ranges = [_range(part, item.strip()) for item in inner.split(",")]
        for fixed in (head, tail):
            if not _NAME_PART.fullmatch(fixed):
                raise HostlistError(f"{part!r}: a node name holds only letters, digits, '-', '_' and '.'")
        if not (head or tail) and ranges is None:
            raise HostlistError(f"{text!r} holds an empty node name")
        parts.append((head, ranges, tail))
    return parts


def _count(parts: list[_Part]) -> int:
    return sum(1 if r is None else sum(high - low + 1 for low, high, _ in r) for _, r, _ in parts)


def _bounded(text: str) -> list[_Part]:
    """``_parts(text)``, refused when they name more than ``MAX_HOSTS`` nodes."""
    parts = _parts(text)
    if (n := _count(parts)) > MAX_HOSTS:
        raise HostlistError(f"{text!r} names {n} nodes; at most {MAX_HOSTS}")
    return parts


def _range(part: str, item: str) -> tuple[int, int, int]:
    match = _RANGE.fullmatch(item)
    if item.isdigit():
        return int(item), int(item), len(item)
    if match is None:
        raise HostlistError(f"{part!r}: {item!r} is not a number or a range such as 001-004")
    low, high = match.groups()
    if int(low) > int(high):
        raise HostlistError(f"{part!r}: range {item} runs backwards")
    return int(low), int(high), len(low)


def count_hosts(text: str) -> int:
    """How many names ``text`` expands to, without expanding it; raises ``HostlistError``."""
    return _count(_parts(text))


def check_hostlist(text: str) -> str:
    """``text`` when Slurm would accept it and it names at most ``MAX_HOSTS`` nodes; else ``HostlistError``."""
    _bounded(text)
    return text


def expand_hostlist(text: str) -> list[str]:
    """``"a-[01-03,7],b"`` -> ``["a-01", "a-02", "a-03", "a-7", "b"]`` (zero padding kept); checked first."""
    names: list[str] = []
    for head, ranges, tail in _bounded(text):
        if ranges is None:
            names.append(head)
            continue
        for low, high, width in ranges:
            names += [f"{head}{n:0{width}d}{tail}" for n in range(low, high + 1)]
    return names


def check_node_specs(specs: list[str]) -> list[str]:
    """A ``nodes`` field: each entry a host list or CloudAI's ``PARTITION:GROUP:COUNT`` (COUNT a positive number or
    ``max_avail``; the partition and group are resolved against the Slurm system)."""
    for spec in specs:
        if ":" not in spec:
            check_hostlist(spec)
            continue
        parts = spec.split(":")
        count = parts[-1]
        if len(parts) != 3 or not all(parts) or not (count == "max_avail" or (count.isdigit() and int(count) > 0)):
            raise HostlistError(f"{spec!r}: use PARTITION:GROUP:COUNT (COUNT a positive number or max_avail)")
    return specs


def check_hostlists(lists: list[str]) -> list[str]:
    """An ``exclude_nodes`` (or a group's ``nodes``) field: each entry a host list."""
    for text in lists:
        check_hostlist(text)
    return lists


def listed_and_excluded(nodes: list[str], exclude: list[str]) -> list[str]:
    """Names both in ``nodes`` (host lists only; groups are the system's) and in ``exclude``, in order."""
    excluded = {name for text in exclude for name in expand_hostlist(text)}
    listed = (name for text in nodes if ":" not in text for name in expand_hostlist(text))
    return [name for name in dict.fromkeys(listed) if name in excluded]
