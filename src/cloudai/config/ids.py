"""A scenario's ids and dependencies, checked from the file alone: each id unique and safe as a directory name,
each dependency a known id, no cycle (``graphlib`` finds one and names it)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from cloudai.errors import Problem, did_you_mean

_SAFE_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+-]*")


def check_ids(name: str, entries: Sequence[tuple[str, list[str]]], path: Path) -> list[Problem]:
    """Problems of a scenario named ``name`` whose ``[[Tests]]`` are ``(id, dependency ids)`` in file order."""
    problems: list[Problem] = []
    if any(c in name for c in "/\\\0") or name in (".", ".."):  # it names the run dir
        problems.append(Problem(str(path), "name", f"scenario name {name!r} is not allowed",
                                "no / or \\ in a scenario name: it names the results directory"))  # fmt: skip
    seen: dict[str, int] = {}
    for index, (entry_id, _) in enumerate(entries):
        if not _SAFE_ID.fullmatch(entry_id) or entry_id in (".", ".."):
            problems.append(Problem(str(path), f"Tests[{index}].id", f"id {entry_id!r} is not allowed",
                                    "use letters, digits and . _ : + - (it becomes a directory name)"))  # fmt: skip
        if entry_id in seen:
            problems.append(Problem(str(path), f"Tests[{index}].id",
                                    f"duplicate id '{entry_id}' (also Tests[{seen[entry_id]}])",
                                    "give each entry a unique id"))  # fmt: skip
        seen.setdefault(entry_id, index)
    for index, (entry_id, deps) in enumerate(entries):
        for d_index, dep in enumerate(deps):
            where = f"Tests[{index}].dependencies[{d_index}].id"
            if dep not in seen:
                problems.append(Problem(str(path), where, f"unknown test id '{dep}'", did_you_mean(dep, seen)))
            elif dep == entry_id:
                problems.append(Problem(str(path), where, f"entry '{entry_id}' depends on itself"))
    if not problems:
        try:
            TopologicalSorter({entry_id: deps for entry_id, deps in entries}).prepare()
        except CycleError as exc:
            cycle = list(reversed(exc.args[1]))  # graphlib names it against the edges' direction
            problems.append(Problem(str(path), "Tests", "dependency cycle: " + " -> ".join(cycle),
                                    "remove one of these dependencies"))  # fmt: skip
    return problems
