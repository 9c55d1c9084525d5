"""Read a results dir ("run dir") back into typed records for the reports.

Contract: ``load_run(run_dir)`` never runs anything and never writes. It trusts ``run.json`` for what the
scenario declared and falls back to the tree (``<test id>/<iteration>/job.json`` or ``trajectory.csv``) for
old or foreign dirs. A dir with neither is not a results dir: ``ConfigError`` naming it and what was expected.
Damaged rows in ``trajectory.csv`` (the torn last line of an interrupted run) are dropped with a note, so a
report of the completed steps is always possible.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudai.errors import ConfigError
from cloudai.readfile import read_regular
from cloudai.recordfiles import ENV_FILE, SCORED, TRAJECTORY_FILE
from cloudai.reports import aide
from cloudai.reports.collector import paused
from cloudai.reports.confirm import Estimate, confirmed_in
from cloudai.reports.env_csv import env_columns, join_env
from cloudai.reports.regime_value import Objective, RegimeSpec
from cloudai.reports.trajectory import Trajectory, read_trajectory
from cloudai.space import RegimeBins

RUN_MANIFEST = "run.json"
JOB_RECORD = "job.json"
FAILURE_FILE = "dse_failure.txt"
BEST_FILE = "best.toml"  # written when an agent-driven iteration finishes with a best trial
MAX_JSON = 16 << 20  # run.json, job.json, metrics.json: a larger one (or a device) is not one cloudai wrote
# Rewards that are a monotone transform of the first agent metric (``envs.rewards``; reports import no envs).
ONE_METRIC_REWARDS = frozenset({"identity", "negative", "inverse", "log"})
ABOUT = ("cloudai_version", "command", "host")  # what run.json says of how the run was started


@dataclass(frozen=True)
class Entry:
    """One test of the scenario as ``run.json`` declares it (or as inferred from the tree)."""

    id: str
    test_name: str
    workload: str = ""
    agent_driven: bool = False
    live_rl: bool = False
    agent: str | None = None
    agent_metrics: tuple[str, ...] = ("default",)
    env_params: tuple[str, ...] = ()
    reward_function: str = ""
    objectives: dict[str, str] = field(default_factory=dict)  # metric -> "max" | "min"
    constraints: tuple[str, ...] = ()
    log_knobs: tuple[str, ...] = ()
    units: dict[str, str] = field(default_factory=dict)
    regimes: dict[str, RegimeBins] = field(default_factory=dict)  # env param -> its regimes, as the run binned
    default_means: str = ""  # which metric ``default`` is for this test (fio: read_bw), when the workload says
    regime_objective: Objective = "expectation"  # agent_config.regime_objective: the value over the env regimes
    # A serving workload's latency families charted against its throughput metric (run.json's latency_charts)
    latency_charts: tuple[str, tuple[tuple[str, ...], ...]] | None = None
    # A knob of one branch of the space -> (its selector knob, the value choosing the branch) (``Space.when``)
    branches: dict[str, tuple[str, object]] = field(default_factory=dict)

    def active(self, action: dict[str, Any]) -> dict[str, Any]:
        """``action`` without the knobs of the branches it did not choose (``mode = "disagg"``: no ``agg.*``):
        a trial records them at their first value, which is not part of its configuration."""
        if not self.branches:
            return action
        return {k: v for k, v in action.items() if k not in self.branches or _chosen(action, self.branches[k])}

    @property
    def regime_spec(self) -> RegimeSpec | None:
        """How a configuration's value over the env_params regimes is estimated (None: no regimes recorded)."""
        return RegimeSpec(self.regimes, self.regime_objective) if self.regimes and not self.live_rl else None

    def label(self, metric: str) -> str:
        """``bus_bw [GB/s]``: a metric name with its unit when the workload declares one (``default = read_bw``)."""
        unit = self.units.get(metric)
        name = f"default = {self.default_means}" if metric == "default" and self.default_means else metric
        return f"{name} [{unit}]" if unit else name

    @property
    def reward_unit(self) -> str:
        """The reward's unit: its metric's when the reward is the metric itself (identity), else ""."""
        if self.live_rl or self.reward_function != "identity":
            return ""
        return self.units.get(self.agent_metrics[0], "")

    @property
    def objective_metric(self) -> str | None:
        """The metric the reward is a transform of (``step_time_s`` for ``inverse(step_time_s)``); None when the
        reward is no one metric's (live RL, a reward of the whole observation such as ``ai_dynamo_log_scale``, a
        plugin), or unknown (an old run.json)."""
        if self.live_rl or self.reward_function not in ONE_METRIC_REWARDS:
            return None
        return self.agent_metrics[0]

    def measured(self, value: float, spread: str = "") -> str:
        """``step_time_s 8.08 s``: a value of ``objective_metric`` in its own name and unit (``spread``: e.g.
        `` ± 0.2``, before the unit)."""
        metric = self.objective_metric or "reward"
        name = self.default_means if metric == "default" and self.default_means else metric
        unit = self.units.get(metric, "")
        return f"{name} {value:.4g}{spread}{' ' + unit if unit else ''}"

    @property
    def reward_label(self) -> str:
        """What the reward is: ``reward = identity(bus_bw [GB/s])`` (just "reward" when unknown, e.g. live RL)."""
        if self.live_rl or not self.reward_function:
            return "reward"
        return f"reward = {self.reward_function}({self.label(self.agent_metrics[0])})"


@dataclass(frozen=True)
class JobRecord:
    """One finished (or abandoned) job: what ``job.json`` and ``metrics.json`` say."""

    test_id: str
    iteration: int
    status: str
    duration_s: float | None
    metrics: dict[str, float]
    reason: str = ""

    @property
    def headline(self) -> float | None:
        """The ``default`` metric, the one a user sorts by."""
        return self.metrics.get("default")


@dataclass
class AgentRun:
    """One agent-driven (test, iteration): its trajectory (with env regimes and read notes) and any hard failure."""

    test_id: str
    iteration: int
    trajectory: Trajectory
    failure: str = ""  # dse_failure.txt: the run failed hard
    finished: bool = True  # best.toml was written: the agent ran to its last step
    confirmed: list[Estimate] = field(default_factory=list)  # confirm.csv: the re-run candidates' estimates
    reasons: dict[int, str] = field(default_factory=dict)  # step -> why it did not succeed (its job.json)

    @property
    def status(self) -> str:
        """``failed`` (hard failure, or no step scored), ``incomplete`` (stopped early: Ctrl-C, a kill), or ``ok``."""
        if self.failure or self.trajectory.best() is None:
            return "failed"
        return "ok" if self.finished else "incomplete"


@dataclass
class RunData:
    """Everything a report shows about one run dir."""

    path: Path
    scenario: str
    system: str
    started_at: float | None
    entries: list[Entry]
    jobs: list[JobRecord] = field(default_factory=list)
    agent_runs: list[AgentRun] = field(default_factory=list)
    about: dict[str, str] = field(default_factory=dict)  # run.json's cloudai_version, command, host (when recorded)

    def entry(self, test_id: str) -> Entry:
        return next((e for e in self.entries if e.id == test_id), Entry(test_id, test_id))


def load_run(run_dir: Path) -> RunData:
    """Read ``run_dir``; ``ConfigError`` when it is missing, not a dir, or holds no cloudai results."""
    with paused():  # 1.5-2x as long to read 10 000 steps otherwise (see collector)
        return _load(run_dir)


def _load(run_dir: Path) -> RunData:
    if not run_dir.is_dir():
        raise ConfigError("no such results directory", file=run_dir, hint="pass a dir written by `cloudai run`")
    manifest = _read_manifest(run_dir)
    entries = _entries(manifest) if manifest is not None else _infer_entries(run_dir)
    if manifest is None and not entries:
        raise ConfigError(
            "not a cloudai results directory: expected run.json or <test id>/<iteration>/job.json "
            "or <test id>/<iteration>/trajectory.csv",
            file=run_dir,
            hint=_hint(run_dir),
        )
    run = RunData(
        path=run_dir,
        scenario=str((manifest or {}).get("scenario") or run_dir.name),
        system=str((manifest or {}).get("system") or ""),
        started_at=_float((manifest or {}).get("started_at")),
        entries=entries,
        about={k: str(v) for k in ABOUT if isinstance(v := (manifest or {}).get(k), str)},
    )
    for entry in entries:
        for it_dir in _iteration_dirs(run_dir / entry.id):
            iteration = int(it_dir.name)
            if entry.agent_driven or (it_dir / TRAJECTORY_FILE).exists():
                run.agent_runs.append(_agent_run(entry, it_dir, iteration))
            elif (it_dir / JOB_RECORD).exists():
                run.jobs.append(_job_record(entry.id, iteration, it_dir))
    return run


def _read_manifest(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / RUN_MANIFEST
    if not path.exists():
        return None
    try:
        data = json.loads(read_regular(path, MAX_JSON))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"unreadable run manifest: {exc}", file=path) from None
    if not isinstance(data, dict) or not isinstance(data.get("entries", []), list):
        raise ConfigError("run manifest is not an object with an 'entries' list", file=path)
    return data


def _entries(manifest: dict[str, Any]) -> list[Entry]:
    entries = []
    for raw in manifest.get("entries", []):
        if not isinstance(raw, dict) or "id" not in raw:
            continue
        entries.append(
            Entry(
                id=str(raw["id"]),
                test_name=str(raw.get("test_name") or raw["id"]),
                workload=str(raw.get("workload") or ""),
                agent_driven=bool(raw.get("agent_driven")),
                live_rl=bool(raw.get("live_rl")),
                agent=raw.get("agent"),
                agent_metrics=tuple(str(m) for m in raw.get("agent_metrics") or ("default",)),
                env_params=tuple(str(p) for p in raw.get("env_params") or ()),
                reward_function=str(raw.get("reward_function") or ""),
                objectives={str(k): str(v) for k, v in (raw.get("objectives") or {}).items()},
                constraints=tuple(str(c) for c in raw.get("constraints") or ()),
                log_knobs=tuple(str(k) for k in raw.get("log_knobs") or ()),
                units={str(k): str(v) for k, v in (raw.get("units") or {}).items()},
                regimes=_regimes(raw.get("env_param_regimes")),
                default_means=str(raw.get("default_means") or ""),
                regime_objective="worst" if raw.get("regime_objective") == "worst" else "expectation",
                latency_charts=_latency_charts(raw.get("latency_charts")),
                branches={
                    str(k): (str(v[0]), v[1])
                    for k, v in (raw.get("branches") or {}).items()
                    if isinstance(v, list) and len(v) == 2
                },
            )
        )
    return entries


def _regimes(raw: object) -> dict[str, RegimeBins]:
    found = {str(k): RegimeBins.from_json(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    return {k: v for k, v in found.items() if v is not None}


def _chosen(action: dict[str, Any], branch: tuple[str, object]) -> bool:
    selector, value = branch
    return selector not in action or action[selector] == value


def _latency_charts(raw: object) -> tuple[str, tuple[tuple[str, ...], ...]] | None:
    """``{"throughput": m, "latencies": [[m, ...], ...]}`` (``workloads.base.LatencyCharts``); None otherwise."""
    if not isinstance(raw, dict) or not isinstance(raw.get("throughput"), str):
        return None
    families = raw.get("latencies")
    if not isinstance(families, list):
        return None
    kept = tuple(tuple(str(m) for m in f) for f in families if isinstance(f, list) and f)
    return (raw["throughput"], kept) if kept else None


def entry_of(it_dir: Path) -> Entry:
    """The entry of ``<run dir>/<test id>/<iteration>`` as its run.json declares it (a bare Entry without one)."""
    test_id, run_dir = it_dir.parent.name, it_dir.parent.parent
    manifest = _read_manifest(run_dir)
    found = [e for e in _entries(manifest) if e.id == test_id] if manifest else []
    return found[0] if found else Entry(test_id, test_id)


def _infer_entries(run_dir: Path) -> list[Entry]:
    """Tests of a dir without ``run.json``: children holding ``<iteration>/{job.json,trajectory.csv}``."""
    entries = []
    for child in sorted(p for p in run_dir.iterdir() if p.is_dir()):
        its = [d for d in _iteration_dirs(child) if (d / JOB_RECORD).exists() or (d / TRAJECTORY_FILE).exists()]
        if its:
            driven = any((d / TRAJECTORY_FILE).exists() for d in its)
            episodes = driven and any(_has_episodes(d / TRAJECTORY_FILE) for d in its)
            entries.append(Entry(child.name, child.name, agent_driven=driven, live_rl=episodes))
    return entries


def _has_episodes(path: Path) -> bool:
    return path.exists() and read_trajectory(path).episodes > 1


def _iteration_dirs(test_dir: Path) -> list[Path]:
    if not test_dir.is_dir():
        return []
    return sorted((p for p in test_dir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))


def _job_record(test_id: str, iteration: int, job_dir: Path) -> JobRecord:
    try:
        record = json.loads(read_regular(job_dir / JOB_RECORD, MAX_JSON))
    except (OSError, ValueError):
        record = {"status": "unknown", "reason": "job.json unreadable"}
    metrics = _metrics(record.get("metrics"))
    if (job_dir / "metrics.json").exists():
        with contextlib.suppress(OSError, ValueError):
            metrics.update(_metrics(json.loads(read_regular(job_dir / "metrics.json", MAX_JSON))))  # a job wrote it
    start, end = _float(record.get("started_at")), _float(record.get("ended_at"))
    duration = end - start if start is not None and end is not None else None
    status, reason = str(record.get("status", "unknown")), str(record.get("reason") or "")
    return JobRecord(test_id, iteration, status, duration, metrics, reason)


def _agent_run(entry: Entry, it_dir: Path, iteration: int) -> AgentRun:
    traj_path, env_path = it_dir / TRAJECTORY_FILE, it_dir / ENV_FILE
    if traj_path.exists():
        # with an aide (a big run, reports.aide): env.csv's columns read, and the action cells checked, beside this
        env = aide.later(env_columns, env_path) if env_path.exists() else None
        # for the knobs' importance (``analysis.importance_later``): now, while this process reads, the aide has the
        # time (after, its import competed with the page's two halves for the two cores)
        aide.preload("optuna")
        trajectory = read_trajectory(traj_path, trusted=aide.running())
        if env is not None:
            join_env(trajectory, env.result())
    else:
        trajectory = Trajectory(notes=["no trajectory.csv: the agent completed no step"])
    failure = (it_dir / FAILURE_FILE).read_text(errors="replace") if (it_dir / FAILURE_FILE).exists() else ""
    confirmed = confirmed_in(trajectory, it_dir, entry.regime_spec)
    reasons = _reasons(it_dir, trajectory)
    return AgentRun(
        entry.id, iteration, trajectory, failure, (it_dir / BEST_FILE).exists(), confirmed=confirmed, reasons=reasons
    )


def _reasons(it_dir: Path, trajectory: Trajectory) -> dict[int, str]:
    """Why each unsuccessful step failed: its job.json reason; a constraint step without a job was never run."""
    reasons: dict[int, str] = {}
    for step in trajectory.steps:
        if step.status in SCORED:
            continue
        if step.reason:  # trajectory.csv's reason column (runs since it exists)
            reasons[step.step] = step.reason
            continue
        path = it_dir / str(step.step) / JOB_RECORD
        try:
            record = json.loads(read_regular(path, MAX_JSON))
            if step.status == "constraint" and record.get("status") == "ok":
                reasons[step.step] = "measured outside agent_constraints"
            else:
                reasons[step.step] = str(record.get("reason") or record.get("status") or "")
        except (OSError, ValueError):
            if step.status == "constraint":
                reasons[step.step] = "infeasible point: not run (the workload's constraint)"
    return reasons


def _metrics(raw: object) -> dict[str, float]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): float(v) for k, v in raw.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _hint(run_dir: Path) -> str:
    runs = sorted(p.name for p in run_dir.iterdir() if (p / RUN_MANIFEST).exists()) if run_dir.is_dir() else []
    if runs:
        return f"this looks like an output_path; pass one of its run dirs: {', '.join(runs[:5])}"
    return "pass a <output_path>/<scenario>_<timestamp> dir written by `cloudai run`"
