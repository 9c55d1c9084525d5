"""The DSE handler: run (or dry-run) every agent-driven entry of a plan through its agent.

For each agent-driven entry and iteration, ``run_agent_entries`` builds the env
(``build_env``: the one place an env class is picked, offline ``CloudAIGymEnv`` or the
live-RL sibling) and the agent (``AGENTS``, ``agent_config`` validated by its model),
calls ``agent.run()``, then writes ``best.toml`` and prints the best trial. Outcomes:

* finished: exit code 0, or 1 when no trial succeeded (nothing to recommend);
* an exception in the agent or the env: in-flight jobs are cancelled, the finished steps
  written, ``dse_failure.txt`` (what, at which step, the traceback, the exact ``--resume``
  command) is left in the iteration dir, and the exit code is 1;
* Ctrl-C / SIGTERM: the same clean-up, then ``Interrupted`` carrying the resume command.

``--resume DIR`` continues in DIR: each iteration's env reads its trajectory back, the
agent is told every recorded step, and runs on to ``agent_steps``; no step is re-run.
``check_resume`` refuses a DIR whose tests changed since (``cloudai.run.fingerprint``).

After the search, the top candidates are re-run (``cloudai.run.confirm``) when the reward is
noisy, and the terminal and best.toml lead with the confirmed estimate; ``--warm-start`` dirs
(``cloudai.run.warm``) are told to the agent before its first ask.
"""

from __future__ import annotations

import json
import os
import shlex
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.atomicfile import atomic_write
from cloudai.envs.base import BaseGym, Feedback
from cloudai.errors import ConfigError, Interrupted
from cloudai.readfile import read_regular
from cloudai.recordfiles import SCORED, TRAJECTORY_FILE, UNBUDGETED
from cloudai.run import Echo
from cloudai.run.fingerprint import resume_changes

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.plan.route import CheckedEntry
    from cloudai.reports.trajectory import Trajectory
    from cloudai.systems.base import System

FAILURE_FILE = "dse_failure.txt"


def build_env(
    plan: Plan,
    checked: CheckedEntry,
    run_dir: Path,
    *,
    iteration: int = 0,
    system: System | None = None,
    resume: bool = False,
    on_step: Callable[[Feedback], None] | None = None,
) -> BaseGym:
    """The env of one (entry, iteration), recording into ``<run_dir>/<test id>/<iteration>/``."""
    from cloudai.agents import AGENTS
    from cloudai.envs.env_params import sampler_for
    from cloudai.envs.offline import CloudAIGymEnv
    from cloudai.envs.trial import TrialSetup
    from cloudai.plan.agent_checks import agent_config
    from cloudai.plan.load import build_system
    from cloudai.workloads import WORKLOADS

    entry = checked.entry
    agent_cls = AGENTS.get(entry.agent.name)
    config = agent_config(entry, agent_cls)
    jobs_at_once = int(getattr(plan.system_config, "max_concurrent_jobs", 8))
    # Live RL: max_parallel environments at once (agents that cannot ask ahead drive one).
    environments = config.max_parallel if agent_cls.can_ask_ahead else 1
    setup = TrialSetup(
        entry=entry,
        space=checked.space,
        workload=None if checked.live_rl else WORKLOADS.get(entry.workload)(),
        system=system if system is not None else build_system(plan.system_config),
        out_dir=run_dir / entry.id / str(iteration),
        iteration=iteration,
        penalty_reward=config.penalty_reward,
        max_in_flight=environments if checked.live_rl else jobs_at_once,
        sampler=sampler_for(entry, checked.space),
        resume=resume,
        on_step=on_step,
    )
    if checked.live_rl:
        return _live_env_class()(setup)
    return CloudAIGymEnv(setup)


def run_agent_entries(
    plan: Plan,
    run_dir: Path,
    system: System,
    echo: Echo,
    resume: bool,
    *,
    resume_command: str = "",
    warm_dirs: tuple[Path, ...] = (),
) -> int:
    """Run every agent-driven entry (every iteration); the exit code (see the module docstring)."""
    from cloudai.agents import AGENTS
    from cloudai.plan.agent_checks import short_sweep_note
    from cloudai.plan.valid_space import entry_rule, valid_note

    code = 0
    for checked in plan.checked.values():
        if not checked.agent_driven:
            continue
        note = short_sweep_note(checked.entry, checked.space, AGENTS.get(checked.entry.agent.name))
        if note:
            echo(f"note: {note}")
        rule = entry_rule(checked, system.gpus_per_node)
        if rule is not None:
            echo(f"{checked.entry.id}: {valid_note(checked, rule)}")
        valid = rule.count() if rule is not None else None
        for iteration in range(checked.entry.iterations):
            result = _run_iteration(
                plan, checked, run_dir, system, echo, iteration, resume, resume_command, warm_dirs, valid
            )
            if result is None:  # a hard failure: the rest would likely fail the same way
                return 1
            code = max(code, result)
    return code


def _run_iteration(
    plan: Plan,
    checked: CheckedEntry,
    run_dir: Path,
    system: System,
    echo: Echo,
    iteration: int,
    resume: bool,
    resume_command: str,
    warm_dirs: tuple[Path, ...] = (),
    valid: int | None = None,
) -> int | None:
    """One iteration; its exit code, or None after a hard failure (``dse_failure.txt`` written). ``valid``: how
    many points of the grid the workload's rule allows (the default ``agent_steps`` of a sweep), when known."""
    from cloudai.agents import AGENTS
    from cloudai.envs.env_params import sampler_for
    from cloudai.plan.agent_checks import agent_config, default_steps
    from cloudai.reports.confirm import action_key, confirmed_in, winner
    from cloudai.reports.regime_top import value_in
    from cloudai.run.best import BEST_FILE, best_text, outcome_lines, regime_notes
    from cloudai.run.confirm import confirm_plan, regime_spec, run_confirmation, search_steps
    from cloudai.run.progress import StepProgress
    from cloudai.run.rundir import record_observation_names

    entry = checked.entry
    agent_cls = AGENTS.get(entry.agent.name)
    steps = default_steps(entry, checked.space, agent_cls, valid) or 0
    out_dir = run_dir / entry.id / str(iteration)
    (out_dir / FAILURE_FILE).unlink(missing_ok=True)
    config = agent_config(entry, agent_cls)
    sampler = None if checked.live_rl else sampler_for(entry, checked.space)
    confirm = confirm_plan(entry, config, checked.live_rl, len(sampler.regimes()) if sampler else 1)
    if sampler and confirm[0] * confirm[1] > steps:
        echo(f"note: {entry.id}: confirmation re-runs {confirm[0]} candidate(s) {config.confirm_repeats} time(s) in "
             f"each of {len(sampler.regimes())} env_params regimes: {confirm[0] * confirm[1]} steps, more than the "
             "search's; lower agent_config.confirm or confirm_repeats to spend less")  # fmt: skip
    progress = StepProgress(f"{entry.id}/{iteration}", steps + confirm[0] * confirm[1], echo)
    finished: list[Feedback] = []  # this process's scored steps, slim: all the end-of-run notes read
    counts: Counter[str] = Counter()  # every step's status, this process's and the recorded ones

    def on_step(feedback: Feedback) -> None:
        counts[feedback.status] += 1
        if feedback.status in SCORED:  # 10^5 failed steps cost no memory
            finished.append(_slim(feedback, entry.agent.metrics))
        progress.update(feedback)

    env = build_env(plan, checked, run_dir, iteration=iteration, system=system, resume=resume, on_step=on_step)
    spec = regime_spec(env, config)
    if env.live:  # the server names what it observes: the records say so
        record_observation_names(run_dir, entry.id, env.define_observation_space())
    history = env.history()
    counts.update(f.status for f in history)
    progress.done = sum(f.status not in UNBUDGETED for f in history)
    progress.best = max((f.reward for f in history if f.status in SCORED), default=None)
    if agent_cls.can_ask_ahead and not env.live and config.max_parallel > env.max_in_flight:
        echo(f"note: {entry.id}: max_parallel = {config.max_parallel} is capped at the system's "
             f"max_concurrent_jobs = {env.max_in_flight}")  # fmt: skip
    if env.live and config.enqueue:  # the server's space is known only now
        from cloudai.plan.points import check_enqueue

        problems = check_enqueue(entry, env.define_action_space(), config.enqueue)
        if problems:
            env.close()
            raise ConfigError(problems=problems)
    warm = None
    if warm_dirs:
        from cloudai.plan.agent_checks import agent_space
        from cloudai.run.warm import load_warm_start

        action_space = env.define_action_space() if env.live else agent_space(entry, checked.space)
        warm = load_warm_start(warm_dirs, entry.id, action_space, checked.space, tuple(entry.agent.metrics))
        echo(warm.note(f"{entry.id}/{iteration}"))
    try:
        with progress:
            agent = agent_cls(env, config, steps)
            agent.uncounted = {f.step for f in history} - {f.step for f in search_steps(history, out_dir)}
            if warm is not None:
                agent.warm_start(warm.told)
            ran = agent.run()
            searched = len(search_steps(history, out_dir)) + counts.total() - len(history)  # failed ones too
            search = search_steps([*history, *finished], out_dir)
            parallel = config.max_parallel if agent_cls.can_ask_ahead else 1
            confirmed = run_confirmation(env, search, [*history, *finished], confirm, out_dir, parallel, spec)
    except KeyboardInterrupt:
        env.close()
        raise Interrupted(
            f"interrupted: {entry.id} iteration {iteration} stopped before step {env.next_step}; "
            f"finished steps are in {out_dir / 'trajectory.csv'}\n  resume with: {resume_command}"
        ) from None
    except Exception as exc:
        in_flight = list(getattr(env, "in_flight", []))
        echo(f"error: {entry.id} iteration {iteration} failed: {type(exc).__name__}: {exc}", err=True)
        try:
            env.close()
            echo(f"  details: {_write_failure(out_dir, checked, env, exc, in_flight, resume_command)}", err=True)
        except OSError as also:  # e.g. the disk is full: still say how to go on
            echo(f"  (no {FAILURE_FILE} written: {also})", err=True)
        echo(f"  resume with: {resume_command}", err=True)
        return None
    env.close()
    if spec is not None and confirmed:  # every recorded step (failed ones too), as the report reads them
        confirmed = confirmed_in(_recorded(out_dir), out_dir, spec)
    if ran < steps:
        why = agent.stop_reason or "the agent had nothing left to try"
        echo(f"note: {entry.id}/{iteration}: stopped after {ran} of {steps} step(s) (agent_steps): {why}")
    recorded = progress.done
    best = max((f for f in search if f.status in SCORED), key=lambda f: (f.reward, -f.step), default=None)
    if best is None:
        echo(f"{entry.id}/{iteration}: no trial succeeded in {recorded} step(s); see {out_dir / 'trajectory.csv'}")
        return 1
    single, top = best, winner(confirmed)
    first = min((f for f in search if f.status in SCORED), key=lambda f: f.step)  # the baseline
    if top is not None:  # the TOML of the confirmed winner, from its best search step (its env_params)
        best = max((f for f in search if action_key(f.action) == action_key(top.action) and f.status in SCORED),
                   key=lambda f: f.reward)  # fmt: skip
    regimes = regime_notes([*history, *finished], best, env.env_param_sampler(), top)
    notes = [*regimes, *agent.best_notes()]
    text = best_text(entry, checked.space, best, recorded, notes, confirmed=confirmed)
    path = atomic_write(out_dir / BEST_FILE, text)
    base = value_in(_recorded(out_dir), action_key(first.action), spec) if spec is not None and top else None
    for line in outcome_lines(f"{entry.id}/{iteration}", entry, single, first, searched, confirmed, out_dir, base):
        echo(line)
    echo(f"  test TOML: {path}")
    for line in regimes:
        echo(f"  {line}")
    _after_run(checked, [*history, *finished], counts, out_dir, echo, tuple(env.define_observation_space()))
    return 0


def _recorded(out_dir: Path) -> Trajectory:
    """The iteration's trajectory.csv with env.csv: every step, as the report reads it."""
    from cloudai.recordfiles import ENV_FILE
    from cloudai.reports.trajectory import read_env, read_trajectory

    traj = read_trajectory(out_dir / TRAJECTORY_FILE)
    read_env(out_dir / ENV_FILE, traj)
    return traj


def _slim(feedback: Feedback, metrics: tuple[str, ...]) -> Feedback:
    """A scored step as the end-of-run notes read it (best.toml, regimes, confirmation, Pareto): its ``info``
    cut to ``metrics`` (only when they say more than the observation; ``best_text`` rebuilds them from it) and
    ``env_params``. A few hundred bytes per step instead of the env's whole info (its job dir, its reason...)."""
    info: dict[str, Any] = {}
    if extra := feedback.extra_metrics(metrics):
        info["metrics"] = extra
    if env := feedback.info.get("env_params"):
        info["env_params"] = env
    return replace(feedback, info=info)


def _after_run(
    checked: CheckedEntry,
    steps: list[Feedback],
    counts: Counter[str],
    out_dir: Path,
    echo: Echo,
    observed: tuple[str, ...],
) -> None:
    """Status counts, the Pareto front (several objectives), trials.csv and the Optuna study's dashboard command.

    ``steps``: the scored ones (and every recorded one on resume); ``counts``: every step's status; ``observed``:
    the observation's names (a live server's own when the test names no ``agent_metrics``)."""
    from cloudai.reports.trials_csv import write_trials
    from cloudai.run.pareto_out import write_pareto

    if set(counts) - {"ok"}:
        echo("  steps: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda x: -x[1])))
    write_pareto(checked.entry, checked.space, steps, out_dir, echo, recorded=counts.total())
    if (out_dir / TRAJECTORY_FILE).is_file():
        write_trials(out_dir, observed)
    if checked.entry.agent.name == "optuna":  # only its runs have a study (and only they may import optuna)
        from cloudai.agents.optuna_storage import JOURNAL_FILE, dashboard_command

        if (out_dir / JOURNAL_FILE).is_file():
            echo(f"  Optuna study: {dashboard_command(out_dir)}")


def check_resume(plan: Plan, run_dir: Path, warm_command: str = "") -> None:
    """``run_dir`` must be a results dir of this scenario (its ``run.json`` names the same tests), whose
    tests are unchanged (``fingerprints``); ``warm_command`` is the new run to suggest when they changed."""
    manifest = run_dir / "run.json"
    if not manifest.is_file():
        raise ConfigError(
            "not a cloudai results directory (no run.json)", file=run_dir, hint="pass a dir that `cloudai run` wrote"
        )
    try:
        data = json.loads(read_regular(manifest, 16 << 20))
        ids = [e["id"] for e in data["entries"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"run.json is unreadable: {exc}", file=manifest) from None
    if data.get("scenario") != plan.scenario.name or ids != [e.id for e in plan.scenario.entries]:
        raise ConfigError(
            f"this run was of scenario '{data.get('scenario')}' with tests {ids}, not of '{plan.scenario.name}'",
            file=manifest,
            hint="resume with the same --tests-dir and --test-scenario the run was started with",
        )
    changes = resume_changes(data.get("fingerprints") or {}, list(plan.scenario.entries), plan.system_config)
    if not changes:
        check_records(plan, run_dir)
    if changes:
        raise ConfigError(
            "the tests changed since this run started; resuming would mix two experiments in one trajectory:\n  "
            + "\n  ".join(changes),
            file=manifest,
            field="--resume",
            hint="undo the edit to resume this run (raising only agent_steps is allowed), or start a new run "
            f"that learns from this one: {warm_command or f'cloudai run ... --warm-start {run_dir}'}",
        )


def check_records(plan: Plan, run_dir: Path) -> None:
    """Every recorded step of an agent-driven entry reads back whole (``read_trajectory``: a damaged row names its
    line, a device or an oversized file is refused) and its action is a point of the test's space, before
    anything is written: a resume must not trust, or rewrite, a record it cannot."""
    from cloudai.envs.env_params import sampler_for
    from cloudai.space import point_problem
    from cloudai.trajectory.records import read_trajectory

    for checked in plan.checked.values():
        test_dir = run_dir / checked.entry.id
        if not checked.agent_driven or checked.live_rl or not test_dir.is_dir():
            continue  # a live server defines its own actions
        sampler = sampler_for(checked.entry, checked.space)
        names = tuple(sampler.names) if sampler else ()
        space = checked.space.without(set(names))
        for it_dir in sorted(d for d in test_dir.iterdir() if d.name.isdigit()):
            for row in read_trajectory(it_dir, names):
                problem = point_problem(space, row.action)
                if problem is not None:
                    raise ConfigError(
                        f"step {row.step} records an action that is not a point of the test: {problem}",
                        file=it_dir / TRAJECTORY_FILE,
                        hint="this record is not of this test (edited or copied in): start a new run",
                    )


@dataclass(frozen=True)
class RunFiles:
    """The files ``cloudai run`` was given (None: not given), for the commands that continue or redo it."""

    system_config: Path | None
    tests_dir: Path | None
    test_scenario: Path
    hook_dir: Path | None = None


def resume_command(files: RunFiles, run_dir: Path) -> str:
    """The exact command that continues this run, with absolute paths (works from any directory).

    Started through ``uv run`` (which sets ``UV`` and ``UV_RUN_RECURSION_DEPTH``), it is ``uv run cloudai ...``.
    The system is named even when it came from ``$CLOUDAI_SYSTEM_CONFIG``: the resume must not depend on it.
    """
    through_uv = bool(os.environ.get("UV")) and "UV_RUN_RECURSION_DEPTH" in os.environ
    args = [*(["uv", "run"] if through_uv else []), "cloudai", "run"]
    for flag, path in (("--system-config", files.system_config), ("--tests-dir", files.tests_dir)):
        if path is not None:
            args += [flag, str(path.resolve())]
    args += ["--test-scenario", str(files.test_scenario.resolve())]
    if files.hook_dir is not None:
        args += ["--hook-dir", str(files.hook_dir.resolve())]
    return shlex.join([*args, "--resume", str(run_dir.resolve())])


def warm_start_command(files: RunFiles, run_dir: Path) -> str:
    """The new run that learns from ``run_dir`` (``--warm-start``), with absolute paths."""
    return resume_command(files, run_dir).replace(" --resume ", " --warm-start ", 1)


def _live_env_class() -> Callable[..., BaseGym]:
    """The live-RL env (a sibling of ``CloudAIGymEnv`` built from the same ``TrialSetup``)."""
    from cloudai.envs.live import LiveGymEnv

    return LiveGymEnv


def _write_failure(
    out_dir: Path, checked: CheckedEntry, env: BaseGym, exc: BaseException, in_flight: list[int], resume_cmd: str
) -> Path:
    entry = checked.entry
    text = (
        f"cloudai: the agent-driven run of '{entry.id}' (agent {entry.agent.name}) failed hard.\n\n"
        f"what:   {type(exc).__name__}: {exc}\n"
        f"where:  at step {env.last_started} (the last step started); steps in flight were cancelled: {in_flight}\n"
        f"record: every finished step is in {out_dir / 'trajectory.csv'}\n"
        f"resume: {resume_cmd}\n\n"
        "traceback:\n" + "".join(traceback.format_exception(exc))
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    return atomic_write(out_dir / FAILURE_FILE, text)  # a full disk leaves none, never an empty one
