"""Latency against throughput for a serving workload: one chart per latency (TTFT, ITL, TPOT), one point per trial.

Which metrics: run.json's ``latency_charts`` (``workloads.base.LatencyCharts``): of each latency family the
statistic the test has an SLA on (``agent_constraints``; the SLA is drawn as a line), else the family's first,
against the workload's throughput metric. A point is a trial that measured: status ``ok``, or ``constraint``
(measured, and broke the SLA); a cached step re-uses an earlier trial's measurement and is not drawn again.
Its values are the trajectory's observations when the metric is observed (an agent metric or a constraint's),
else the trial's own ``<step>/job.json`` (every metric the job measured), read only for the points drawn: at
most ``MAX_POINTS`` trials, an even sample of a longer run (the title says). Same conventions as ``plots``: a
point is a row of the agent run's table, so hovering it shows its configuration and these metrics.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING

from cloudai.readfile import read_regular
from cloudai.reports import html as h
from cloudai.reports.load import JOB_RECORD, MAX_JSON
from cloudai.reports.plots import PAGE_WIDTH, STATUS_STYLE, Spec, spec
from cloudai.reports.thin import even

if TYPE_CHECKING:
    from pathlib import Path

    from cloudai.reports.chartdata import Rows
    from cloudai.reports.load import Entry
    from cloudai.reports.trajectory import Step, Trajectory

MEASURED = ("ok", "constraint")  # statuses whose trial measured its metrics
SLA_COLOR = "#d62728"
_CONSTRAINT = re.compile(r"^(\S+) (<=|>=|<|>) (\S+)$")  # run.json's constraints: ``config.objectives`` text


def latency_section(drawn: Rows, traj: Trajectory, entry: Entry, it_dir: Path, base: str) -> str | None:
    """``--latency`` [latency]: the charts, or None when the workload declares none (not a serving workload)."""
    if entry.latency_charts is None:
        return None
    throughput, families = entry.latency_charts
    slas = slas_of(entry.constraints)
    chosen = [next((m for m in family if m in slas), family[0]) for family in families]
    measured = [s for s in traj.steps if s.status in MEASURED]
    steps = even(measured)
    values = metric_values(steps, [throughput, *chosen], entry, it_dir)
    width = PAGE_WIDTH if len(chosen) == 1 else PAGE_WIDTH // 2 - 10
    sampled = f" (an even sample of {len(measured)} trials)" if len(steps) < len(measured) else ""
    charts = [latency_chart(drawn, steps, values, (throughput, m), entry, slas, width, sampled) for m in chosen]
    title = "Latency against throughput"
    text = f"Each trial that measured ({', '.join(MEASURED)}): {_names(chosen, entry)} against "
    text += entry.label(throughput)
    shown = h.charts(
        h.chart(f"{base}--latency-{i}", c, f"{m} against {throughput}")
        for i, (c, m) in enumerate(zip(charts, chosen, strict=True))
    )
    parts = [h.para(text + "; lower right is better."), shown]
    if len(steps) < len(measured):
        parts.append(h.note(f"An even sample of the {len(measured)} trials is drawn ({len(steps)})."))
    drawn_any = any(math.isfinite(values[s.step].get(throughput, math.nan)) for s in steps)
    if not drawn_any:
        parts.append(h.note(f"No trial has a measured {throughput}: nothing to draw.", "warn"))
    if lines := [f"{m} {slas[m][0]} {slas[m][1]:g}" for m in (throughput, *chosen) if m in slas]:
        parts.append(h.note(f"The red line is the test's SLA (agent_constraints): {', '.join(lines)}."))
    return h.section(f"{base}--latency", title, parts, 3, data="latency")


def _names(metrics: list[str], entry: Entry) -> str:
    return ", ".join(entry.label(m) for m in metrics)


def slas_of(constraints: tuple[str, ...]) -> dict[str, tuple[str, float]]:
    """``("ttft_p90_ms <= 250",)`` -> ``{"ttft_p90_ms": ("<=", 250.0)}``: run.json's constraints as lines to draw
    (a text that is not one, or a second bound on a metric, is left out)."""
    out: dict[str, tuple[str, float]] = {}
    for text in constraints:
        match = _CONSTRAINT.match(text)
        if match is None:
            continue
        try:
            bound = float(match.group(3))
        except ValueError:
            continue
        if math.isfinite(bound):
            out.setdefault(match.group(1), (match.group(2), bound))
    return out


def metric_values(steps: list[Step], metrics: list[str], entry: Entry, it_dir: Path) -> dict[int, dict[str, float]]:
    """Step number -> metric -> value (NaN where not measured): observed metrics from the trajectory, the others
    from each step's job.json (one read per step, only when some metric is not observed)."""
    observed = {m: i for i, m in enumerate(entry.agent_metrics)}
    read = [m for m in metrics if m not in observed]
    out: dict[int, dict[str, float]] = {}
    for s in steps:
        got = {m: _number(s.observation[i]) if i < len(s.observation) else math.nan
               for m, i in observed.items() if m in metrics}  # fmt: skip
        if read:
            job = _job_metrics(it_dir / str(s.step) / JOB_RECORD)
            got |= {m: _number(job.get(m)) for m in read}
        out[s.step] = got
    return out


def _job_metrics(path: Path) -> dict[str, object]:
    try:
        record = json.loads(read_regular(path, MAX_JSON))
    except (OSError, ValueError):
        return {}
    metrics = record.get("metrics") if isinstance(record, dict) else None
    return metrics if isinstance(metrics, dict) else {}


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return math.nan
    return float(value)


def latency_chart(
    drawn: Rows, steps: list[Step], values: dict[int, dict[str, float]], pair: tuple[str, str], entry: Entry,
    slas: dict[str, tuple[str, float]], width: int, sampled: str = "",
) -> Spec:  # fmt: skip
    """``pair`` = (throughput, latency): one series per status of the ``steps`` with both values, and the SLA line
    of either when the test bounds it."""
    throughput, latency = pair
    x, y = (_column(drawn, m, entry, steps, values) for m in pair)
    both = [s for s in steps if all(math.isfinite(values[s.step].get(m, math.nan)) for m in pair)]
    series: list[Spec] = [
        {"label": status, "color": STATUS_STYLE[status], "size": 6, "x": x, "y": y,
         "rows": drawn.refs(s for s in both if s.status == status)}
        for status in MEASURED if any(s.status == status for s in both)
    ]  # fmt: skip
    xs = [values[s.step][throughput] for s in both]
    ys = [values[s.step][latency] for s in both]
    if latency in slas and xs:
        op, bound = slas[latency]
        series.append(_sla(f"SLA {latency} {op} {bound:g}", [min(xs), max(xs)], [bound, bound]))
    if throughput in slas and ys:
        op, bound = slas[throughput]
        series.append(_sla(f"SLA {throughput} {op} {bound:g}", [bound, bound], [min(ys), max(ys)]))
    title = f"{latency} against {throughput}{sampled}"
    layout: dict[str, object] = {"width": width, "height": 340}
    if xs:  # explicit: uPlot's own range ends at the first of equal largest x, leaving the others out of its y range
        low, high = min(xs), max(xs)
        if throughput in slas:
            low, high = min(low, slas[throughput][1]), max(high, slas[throughput][1])
        pad = 0.05 * (high - low) or 0.05 * abs(high) or 1.0
        layout["xrange"] = [low - pad, high + pad]
    return spec(drawn, series, entry.label(throughput), entry.label(latency), title, **layout)


def _sla(label: str, xs: list[float], ys: list[float]) -> Spec:
    return {"label": label, "color": SLA_COLOR, "size": 0, "line": "line", "xs": xs, "ys": ys,
            "tips": [label, label]}  # fmt: skip


def _column(drawn: Rows, metric: str, entry: Entry, steps: list[Step], values: dict[int, dict[str, float]]) -> str:
    """The table column holding ``metric``: its observation's, or one added from the job.json values."""
    if metric in entry.agent_metrics:
        return f"obs:{entry.agent_metrics.index(metric)}"
    return drawn.add_metric(entry.label(metric), {s.step: values[s.step][metric] for s in steps})
