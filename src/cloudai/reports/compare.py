"""The comparison page for several runs of the same test(s).

Agent-driven tests are matched across runs by test name (``by="test_name"``), or by test id (``by="test_id"``: one
scenario entry whose test TOML was renamed or swapped between runs; each run is named by its dir, and the page says
which test name each ran): their best-so-far curves are overlaid, against step and against the trial time spent
(a run that needed fewer but slower trials is told apart), and their best configurations laid side by side (one
column per run and iteration, one row per knob). Plain jobs
are matched by (test name, iteration) with their status and headline metric per run. A test found in only
some of the runs is listed, not an error: runs of different scenarios can still be compared where they meet.
"""

from __future__ import annotations

import json
from collections import defaultdict

from cloudai.reports import html as h
from cloudai.reports import plots
from cloudai.reports.load import AgentRun, Entry, RunData


def comparison_page(runs: list[RunData], by: str = "test_name") -> str:
    """``by``: what matches agent-driven tests across runs, ``"test_name"`` or ``"test_id"``."""
    labels = _labels(runs)
    overview = [
        (label, r.scenario, str(r.path), ", ".join(e.test_name for e in r.entries))
        for label, r in zip(labels, runs, strict=True)
    ]
    body = [h.section("overview", "Runs compared", [h.table(["run", "scenario", "results", "tests"], overview)])]
    by_test: dict[str, list[tuple[str, AgentRun]]] = defaultdict(list)
    entries: dict[str, Entry] = {}  # matched key -> the first run's entry (its metric and unit)
    named: dict[str, dict[str, str]] = defaultdict(dict)  # test id -> run label -> test name (by test id)
    for label, run in zip(labels, runs, strict=True):
        for ar in run.agent_runs:
            name = run.entry(ar.test_id).test_name
            key = ar.test_id if by == "test_id" else name
            by_test[key].append((f"{label} #{ar.iteration}", ar))
            entries.setdefault(key, run.entry(ar.test_id))
            named[ar.test_id][label] = name
    for key, members in by_test.items():
        body.append(_agent_comparison(key, members, len(runs), named[key] if by == "test_id" else {}, entries[key]))
    if any(r.jobs for r in runs):
        body.append(_jobs_comparison(runs, labels))
    if not by_test and not any(r.jobs for r in runs):
        body.append(h.note("None of these runs has a finished job yet.", "warn"))
    return h.page(f"cloudai comparison of {len(runs)} runs", body)


def _labels(runs: list[RunData]) -> list[str]:
    names = [r.path.name for r in runs]
    if len(set(names)) == len(names):
        return names
    return [f"{r.path.parent.name}/{r.path.name}" if names.count(r.path.name) > 1 else r.path.name for r in runs]


def _agent_comparison(
    test_name: str,
    members: list[tuple[str, AgentRun]],
    n_runs: int,
    names: dict[str, str] | None = None,
    entry: Entry | None = None,
) -> str:
    """``test_name``: the name (or id) the runs were matched by; ``names``: run label -> its test name (by id)."""
    slug = "compare-" + test_name.replace(" ", "_")
    parts = []
    if names:
        ran = "; ".join(f"{label}: {name}" for label, name in names.items())
        parts.append(h.note(f"Test id {test_name} in every run, under test name(s): {ran}."))
    runs_with = {label.rsplit(" #", 1)[0] for label, _ in members}
    if len(runs_with) < n_runs:
        parts.append(h.note(f"Only in {len(runs_with)} of {n_runs} runs: {', '.join(sorted(runs_with))}.", "warn"))
    curves = {label: ar.trajectory for label, ar in members if ar.trajectory.steps}
    if curves:
        parts.append(h.chart(f"{slug}--chart", plots.overlaid_best(curves), "best so far against step"))
        time_chart = plots.overlaid_best(curves, x="time")
        parts.append(h.chart(f"{slug}--time-chart", time_chart, "best so far against the trial time spent"))
    parts.append(_best_side_by_side(members, entry))
    what = "test id " if names else ""
    return h.section(slug, f"{what}{test_name}: best so far and best configurations", parts)


def _best_side_by_side(members: list[tuple[str, AgentRun]], entry: Entry | None = None) -> str:
    """One column per run: the best reward, and (a reward of one metric) that metric in its unit, then knobs."""
    bests = [(label, ar, ar.trajectory.best()) for label, ar in members]
    knobs = list(dict.fromkeys(k for _, ar, _ in bests for k in ar.trajectory.knobs))
    rows: list[list[object]] = [["best reward", *(None if b is None else b.reward for _, _, b in bests)]]
    if entry is not None and entry.objective_metric is not None:
        measured = [None if b is None or not b.observation else b.observation[0] for _, _, b in bests]
        rows.append([f"its {entry.label(entry.objective_metric)}", *measured])
    rows += [
        ["best step", *(None if b is None else b.step for _, _, b in bests)],
        ["steps", *(len(ar.trajectory.steps) for _, ar, _ in bests)],
        ["ok steps", *(ar.trajectory.status_counts().get("ok", 0) for _, ar, _ in bests)],
    ]
    for knob in knobs:
        rows.append([knob, *(None if b is None else _value(b.action.get(knob)) for _, _, b in bests)])
    return h.table(["value", *(label for label, _, _ in bests)], rows)


def _value(value: object) -> object:
    return value if value is None or isinstance(value, int | float | str) else json.dumps(value)


def _jobs_comparison(runs: list[RunData], labels: list[str]) -> str:
    keys = list(dict.fromkeys((r.entry(j.test_id).test_name, j.iteration) for r in runs for j in r.jobs))
    rows = []
    for name, iteration in keys:
        cells: list[object] = [name, iteration]
        for run in runs:
            same = (j for j in run.jobs if (run.entry(j.test_id).test_name, j.iteration) == (name, iteration))
            job = next(same, None)
            cells.append("—" if job is None else f"{job.status} {h.fmt(job.headline)}")
        rows.append(cells)
    return h.section("jobs", "Plain jobs: status and headline metric", [h.table(["test", "iteration", *labels], rows)])
