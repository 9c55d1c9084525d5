"""One run dir's report page: the plain jobs table, then one section per agent-driven (test, iteration).

Section ids (``data-section`` in brackets) are stable, for links and tests: ``overview``, ``jobs``, and per
agent run ``<test id>-<iteration>`` [agent] with sub-sections ``<base>--reward`` [reward], ``--observations``,
``--pareto`` (several objectives), ``--latency`` [latency] (a serving workload: ``plots_serving``), ``--knobs``
[knobs], ``--importance`` [importance], ``--top`` [top], ``--time``, ``--trials``, ``--regimes`` [regimes],
``--episodes`` [episodes] (see ``measure_sections``), ``--confirm`` (the re-run candidates, when the run confirmed).
A section that cannot be computed says why instead of disappearing.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from functools import partial
from operator import attrgetter
from typing import TYPE_CHECKING
from urllib.parse import quote

from cloudai.display import show_action
from cloudai.reports import analysis, confirm, forked, plots, plots_knobs, plots_serving, regimes, thin
from cloudai.reports import html as h
from cloudai.reports import measure_sections as ms
from cloudai.reports.baseline import versus_first
from cloudai.reports.chartdata import Rows
from cloudai.reports.choice import use_line
from cloudai.reports.load import BEST_FILE, AgentRun, Entry, RunData
from cloudai.reports.regime_top import value_in
from cloudai.reports.trajectory import Trajectory
from cloudai.space import REGIME_BINS

if TYPE_CHECKING:
    from cloudai.reports.aide import Pending

FORK_STEPS = 20_000  # from here a run's sections are built in two processes (``forked``): the fork pays


def run_page(run: RunData) -> str:
    body = [_overview(run)]
    if run.jobs:
        body.append(_jobs(run))
    body.extend(agent_section(run, ar) for ar in run.agent_runs)
    if not run.jobs and not run.agent_runs:
        body.append(h.note("No job has finished in this run yet: nothing to report.", "warn"))
    return h.page(f"cloudai report: {run.scenario}", body)


def _overview(run: RunData) -> str:
    """What ran, where, when and how: enough to tell two reports apart and to run it again."""
    when = datetime.fromtimestamp(run.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if run.started_at else "—"
    rows = [
        ("scenario", run.scenario),
        ("system", run.system or "—"),
        ("host", run.about.get("host", "—")),
        ("started", when),
        ("command", run.about.get("command", "—")),
        ("cloudai version", run.about.get("cloudai_version", "—")),
        ("results", str(run.path)),
        ("tests", ", ".join(f"{e.id} ({e.test_name})" for e in run.entries) or "—"),
    ]
    return h.section("overview", "Overview", [h.table(["item", "value"], rows)])


def _jobs(run: RunData) -> str:
    rows = [
        (j.test_id, run.entry(j.test_id).test_name, j.iteration, j.status, j.duration_s, j.headline, j.reason)
        for j in run.jobs
    ]
    header = ["test", "test name", "iteration", "status", "duration (s)", "headline metric", "reason"]
    return h.section("jobs", "Jobs", [h.table(header, rows, status_col=3)])


def agent_section(run: RunData, ar: AgentRun) -> str:
    entry = run.entry(ar.test_id)
    traj = ar.trajectory
    base = f"{ar.test_id}-{ar.iteration}".replace(" ", "_")
    title = f"{ar.test_id} ({entry.test_name}), iteration {ar.iteration}" + (f": {entry.agent}" if entry.agent else "")
    parts = [h.note(n, "warn") for n in traj.notes]
    if ar.failure:
        parts += [h.note("The run failed hard (dse_failure.txt):", "warn"), h.pre(ar.failure)]
    elif ar.status == "incomplete":
        parts.append(
            h.note("Incomplete: the run stopped before its last step (no best.toml); --resume continues it.", "warn")
        )
    by_status = traj.status_counts()
    counts = ", ".join(f"{n} {s}" for s, n in by_status.items()) or "none"
    parts.append(h.para(f"{len(traj.steps)} steps: {counts}."))
    if not traj.steps:
        return h.section(base, title, parts, data="agent")
    traj.best()  # worked out once for both processes (the scored steps: every chart and table asks)
    charted = partial(_charted_sections, run, ar, entry, base)
    (charts, time, script), (head, importance, top, regime) = forked.beside(
        charted, partial(_head_and_tables, ar, entry, base), fork=len(traj.steps) >= FORK_STEPS
    )
    parts += [*head, *charts, _importance(importance.result(), base), top, time, ms.trials_section(ar, base)]
    if regime:
        parts.append(regime)
    if entry.live_rl or traj.episodes > 1:
        confirming = {step for e in ar.confirmed for step in e.steps}
        returns = analysis.episode_returns(traj, confirming)
        table = h.table(["episode", "return", "steps"], [(ep, ret, n) for ep, (ret, n) in returns.items()])
        chart = h.chart(f"{base}--episodes-chart", plots.episode_returns(returns), "episode returns")
        shown = [h.note(analysis.returns_summary(returns)), chart, table]
        if confirming:
            shown.append(
                h.note(
                    f"The {len(confirming)} confirmation re-runs (steps {min(confirming)}-{max(confirming)}) are not"
                    " an episode of the policy: they are under Confirmed candidates."
                )
            )
        parts.append(h.section(f"{base}--episodes", "Episode returns", shown, 3))
    parts.append(script)
    return h.section(base, title, parts, data="agent")


def _head_and_tables(ar: AgentRun, entry: Entry, base: str) -> tuple[list[str], Pending[analysis.Importance], str, str]:
    """What the page says before its charts (the best step, the recommendation, the baseline), the knobs'
    importance (``analysis.importance_later``: a big run's aide ranks them meanwhile), the top configurations and,
    with env params, the regimes ("" without): what is built beside the charts (``forked``)."""
    traj = ar.trajectory
    importance = analysis.importance_later(traj)  # first: the aide has the longest to do it
    parts = []
    if thinned := thin.envelope_note(max(traj.status_counts().values())):
        parts.append(h.note(thinned))
    best = traj.best()
    parts += _confirmed(ar, entry, base)
    if best is not None:
        action = show_action(best.action, sort_keys=True)
        measured = ", ".join(
            f"{entry.label(m)} = {h.fmt(v)}" for m, v in zip(entry.agent_metrics, best.observation, strict=False)
        )
        single = f"{entry.reward_label} = {h.fmt(best.reward)} at step {best.step} (a single measurement; {measured})"
        parts.append(h.para(f"Best {'search step' if ar.confirmed else 'step'}: {single}, action {action}."))
        single_text = f"{entry.reward_label} = {h.fmt(best.reward)}"
        use = use_line(ar.confirmed, (best.step, best.reward, best.action, best.env), single_text, entry.reward_unit)
        if use:
            parts.append(h.note(use, "trap"))
        parts += _baseline(traj, entry, ar)
    if ar.finished:
        href = "/".join(quote(p) for p in (ar.test_id, str(ar.iteration), BEST_FILE))
        parts.append(f"<p>The recommended configuration as a test TOML, ready to run: {h.link(href, href)}</p>")
    regime = _regimes(traj, entry, base, ar.confirmed) if traj.env_params else ""
    return parts, importance, ms.top_section(traj, entry, base, ar.confirmed), regime


def _charted_sections(run: RunData, ar: AgentRun, entry: Entry, base: str) -> tuple[list[str], str, str]:
    """The sections with charts of the steps (reward, observations, latency, Pareto, knob effects), the time spent,
    and the script holding the rows they drew (after every chart in the page): a big run's are built in a child
    (``forked``), the only process that draws into this agent run's table of rows."""
    traj = ar.trajectory
    drawn = Rows(base, traj.knobs, [entry.label(m) for m in entry.agent_metrics], entry.reward_label, traj.env_params)
    reward_chart = h.chart(f"{base}--reward-chart", plots.reward_curve(drawn, traj, entry.reward_label),
                           f"{entry.reward_label} per step")  # fmt: skip
    parts = [h.section(f"{base}--reward", f"Reward per step ({entry.reward_label})", [reward_chart], 3)]
    if not entry.live_rl or entry.agent_metrics != ("default",):
        parts.append(ms.observations_section(drawn, traj, entry, base))
    latency = plots_serving.latency_section(drawn, traj, entry, run.path / ar.test_id / str(ar.iteration), base)
    if latency is not None:
        parts.append(latency)
    pareto = ms.pareto_section(drawn, traj, entry, base)
    if pareto is not None:
        parts.append(pareto)
    if traj.knobs and traj.scored():
        specs, partly = plots_knobs.knob_effects(drawn, traj, entry.log_knobs, entry.reward_label)
        logs = [k for k in traj.knobs if k in entry.log_knobs]
        knob_charts = h.charts(h.chart(f"{base}--knobs-{j}", c, f"reward against {k}")
                               for j, (c, k) in enumerate(zip(specs, traj.knobs, strict=True)))  # fmt: skip
        knob_parts = [knob_charts, *(h.note(n) for n in partly)]
        knob_parts += [h.note(f"Log axes: {', '.join(logs)} (ranges with log = true).")] if logs else []
        parts.append(h.section(f"{base}--knobs", "Knob effects", knob_parts, 3))
    time = ms.time_section(drawn, traj, base)
    return parts, time, drawn.script()


def _baseline(traj: Trajectory, entry: Entry, ar: AgentRun) -> list[str]:
    """The recommendation (or the best step) against the first trial, as the terminal says it."""
    top, best = confirm.winner(ar.confirmed), traj.best()
    first = min(traj.scored(), key=attrgetter("step"), default=None)
    if first is None or best is None:
        return []
    value, action = (top.mean, top.action) if top is not None else (best.reward, best.action)
    base = None
    if top is not None and top.spec is not None and top.regime_aware:  # the baseline over the env regimes too
        base = value_in(traj, first.key, top.spec)
    versus = versus_first(value, action, (first.step, first.action, first.reward), ar.confirmed, entry.reward_unit,
                          base)  # fmt: skip
    return (
        [h.para(f"Against the baseline: {'the recommendation' if top else 'the best step'} is {versus}.")]
        if versus
        else []
    )


def _importance(imp: analysis.Importance, base: str) -> str:
    if not imp.values:
        return h.section(f"{base}--importance", "Parameter importance", [h.note(f"Not computed: {imp.note}.")], 3)
    parts = [
        h.bar_table(["knob", "importance"], imp.values.items()),
        h.note(f"Optuna get_param_importances over {_basis(imp)}; importances sum to 1."),
    ]
    if imp.note:
        parts.append(h.note(imp.note, "warn"))
    return h.section(f"{base}--importance", "Parameter importance", parts, 3)


def _basis(imp: analysis.Importance) -> str:
    if imp.trials < imp.of:
        return f"an even sample of {imp.trials} of the {imp.of} distinct ok trials"
    return f"the {imp.trials} distinct ok trials"


def _confirmed(ar: AgentRun, entry: Entry, base: str) -> list[str]:
    """The recommendation (the confirmed winner, with why) and every re-run candidate, as the terminal says it."""
    top = confirm.winner(ar.confirmed)
    if top is None:
        return []
    why = [h.note(f"Why: {line}.") for line in confirm.verdict_lines(ar.confirmed, entry.reward_unit)]
    value = "value over the env regimes" if top.regime_aware else "mean reward"  # the verdict's own estimate
    header = ["candidate", value, "± 95 % CI", "n", "failed", "action"]
    order = [*confirm.ranked(ar.confirmed), *(e for e in ar.confirmed if not e.rewards)]  # the verdict's order
    rows = [[e.candidate, e.mean, e.ci95, e.n, e.failed, show_action(e.action, sort_keys=True)] for e in order]
    title = "Confirmed candidates (re-run after the search; steps listed in confirm.csv)"
    table = h.section(f"{base}--confirm", title, [h.table(header, rows)], 3)
    return [h.para(f"Recommended (best.toml): {top.text(entry.reward_unit)}."), *why, table]


def _regimes(traj: Trajectory, entry: Entry, base: str, confirmed: list[confirm.Estimate]) -> str:
    title = "Best configuration across environment regimes"
    best = confirm.headline_step(traj, confirmed)
    reg = regimes.regimes(traj, best, entry.regimes, alternative=not confirmed)
    if reg is None:
        return h.section(f"{base}--regimes", title, [h.note("No scored trial to place in a regime.")], 3)
    header = ["env param", "regime", "best mean", "best min", "best n", "all configs mean", "configs", "share better"]
    rows = [[r.param, r.label, r.best_mean, r.best_min, r.best_n, r.all_mean, r.configs, r.beaten_by] for r in reg.rows]
    top = max((abs(v) for r in reg.rows for v in (r.best_mean, r.all_mean) if not math.isnan(v)), default=1.0)
    bars = [h.bars([(r.best_mean, "best"), (r.all_mean, "all")], top) for r in reg.rows]
    legend = h.bar_legend([("best", "best mean"), ("all", "all configs mean")])
    parts = [
        h.note(reg.verdict, "trap" if reg.trap else "note"),
        h.table(header, rows, tail=bars),
        legend,
        h.note(_binning(reg)),
    ]
    return h.section(f"{base}--regimes", title, parts, 3)


def _binning(reg: regimes.Regimes) -> str:
    """How the regimes were formed: the run's own bins (as in best.toml and the terminal), or a fallback."""
    text = (
        f"Regimes as best.toml and the terminal name them: a list's candidates, {REGIME_BINS} equal bins of a "
        "range (log scale for a loguniform one)."
    )
    if reg.empty:
        text += f" No scored trial in: {', '.join(reg.empty)}."
    if reg.guessed:
        text += (
            f" {', '.join(reg.guessed)}: no regimes recorded in run.json (an older run), binned by the observed "
            "values (quartiles for a continuous param)."
        )
    return text
