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
"""

from __future__ import annotations

import json
import shlex
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.envs.base import BaseGym, Feedback
from cloudai.errors import ConfigError, Interrupted
from cloudai.run import Echo

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.plan.route import CheckedEntry
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
    from cloudai.envs.offline import CloudAIGymEnv, TrialSetup
    from cloudai.plan.agent_checks import agent_config
    from cloudai.plan.load import build_system
    from cloudai.workloads import WORKLOADS

    entry = checked.entry
    config = agent_config(entry, AGENTS.get(entry.agent.name))
    setup = TrialSetup(
        entry=entry,
        space=checked.space,
        workload=None if checked.live_rl else WORKLOADS.get(entry.workload)(),
        system=system if system is not None else build_system(plan.system_config),
        out_dir=run_dir / entry.id / str(iteration),
        iteration=iteration,
        penalty_reward=config.penalty_reward,
        max_in_flight=int(getattr(plan.system_config, "max_concurrent_jobs", 8)),
        sampler=sampler_for(entry, checked.space),
        resume=resume,
        on_step=on_step,
    )
    if checked.live_rl:
        return _live_env_class()(setup)
    return CloudAIGymEnv(setup)


def run_agent_entries(
    plan: Plan, run_dir: Path, system: System, echo: Echo, resume: bool, *, resume_command: str = ""
) -> int:
    """Run every agent-driven entry (every iteration); the exit code (see the module docstring)."""
    code = 0
    for checked in plan.checked.values():
        if not checked.agent_driven:
            continue
        for iteration in range(checked.entry.iterations):
            result = _run_iteration(plan, checked, run_dir, system, echo, iteration, resume, resume_command)
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
) -> int | None:
    """One iteration; its exit code, or None after a hard failure (``dse_failure.txt`` written)."""
    from cloudai.agents import AGENTS
    from cloudai.atomicfile import atomic_write
    from cloudai.plan.agent_checks import agent_config, default_steps
    from cloudai.run.best import BEST_FILE, best_text, regime_notes
    from cloudai.run.progress import StepProgress

    entry = checked.entry
    agent_cls = AGENTS.get(entry.agent.name)
    steps = default_steps(entry, checked.space, agent_cls) or 0
    out_dir = run_dir / entry.id / str(iteration)
    (out_dir / FAILURE_FILE).unlink(missing_ok=True)
    progress = StepProgress(f"{entry.id}/{iteration}", steps, echo)
    finished: list[Feedback] = []

    def on_step(feedback: Feedback) -> None:
        finished.append(feedback)
        progress.update(feedback)

    env = build_env(plan, checked, run_dir, iteration=iteration, system=system, resume=resume, on_step=on_step)
    history = env.history()
    progress.done = len(history)
    progress.best = max((f.reward for f in history if f.status in ("ok", "cached")), default=None)
    config = agent_config(entry, agent_cls)
    if agent_cls.can_ask_ahead and not env.live and config.max_parallel > env.max_in_flight:
        echo(f"note: {entry.id}: max_parallel = {config.max_parallel} is capped at the system's "
             f"max_concurrent_jobs = {env.max_in_flight}")  # fmt: skip
    try:
        with progress:
            agent = agent_cls(env, config, steps)
            agent.run()
    except KeyboardInterrupt:
        env.close()
        raise Interrupted(
            f"interrupted: {entry.id} iteration {iteration} stopped before step {env.next_step}; "
            f"finished steps are in {out_dir / 'trajectory.csv'}\n  resume with: {resume_command}"
        ) from None
    except Exception as exc:
        in_flight = list(getattr(env, "in_flight", []))
        echo(f"error: {entry.id} iteration {iteration} failed: {type(exc).__name__}: {exc}")
        try:
            env.close()
            echo(f"  details: {_write_failure(out_dir, checked, env, exc, in_flight, resume_command)}")
        except OSError as also:  # e.g. the disk is full: still say how to go on
            echo(f"  (no {FAILURE_FILE} written: {also})")
        echo(f"  resume with: {resume_command}")
        return None
    env.close()
    best, recorded = agent.best, progress.done
    if best is None:
        echo(f"{entry.id}/{iteration}: no trial succeeded in {recorded} step(s); see {out_dir / 'trajectory.csv'}")
        return 1
    regimes = regime_notes([*history, *finished], best, env.env_param_sampler())
    notes = [*regimes, *agent.best_notes()]
    text = best_text(entry, checked.space, best, recorded, notes)
    path = atomic_write(out_dir / BEST_FILE, text)
    echo(f"{entry.id}/{iteration}: best of {recorded} step(s) is step {best.step}: reward {best.reward:.6g}")
    echo(f"  action {json.dumps(best.action)}; test TOML: {path}")
    for line in regimes:
        echo(f"  {line}")
    _after_run(checked, [*history, *finished], out_dir, echo)
    return 0


def _after_run(checked: CheckedEntry, steps: list[Feedback], out_dir: Path, echo: Echo) -> None:
    """Status counts, the Pareto front (several objectives), trials.csv and the Optuna study's dashboard command."""
    from cloudai.agents.optuna_storage import JOURNAL_FILE, dashboard_command
    from cloudai.atomicfile import atomic_write
    from cloudai.reports.trials_csv import TRIALS_FILE, trials_from_dir
    from cloudai.run.pareto_out import write_pareto

    counts = Counter(f.status for f in steps)
    if set(counts) - {"ok"}:
        echo("  steps: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda x: -x[1])))
    write_pareto(checked.entry, checked.space, steps, out_dir, echo)
    if (out_dir / "trajectory.csv").is_file():
        atomic_write(out_dir / TRIALS_FILE, trials_from_dir(out_dir, checked.entry.agent.metrics))
    if (out_dir / JOURNAL_FILE).is_file():
        echo(f"  Optuna study: {dashboard_command(out_dir)}")


def check_resume(plan: Plan, run_dir: Path) -> None:
    """``run_dir`` must be a results dir of this scenario (its ``run.json`` names the same tests)."""
    manifest = run_dir / "run.json"
    if not manifest.is_file():
        raise ConfigError(
            "not a cloudai results directory (no run.json)", file=run_dir, hint="pass a dir that `cloudai run` wrote"
        )
    try:
        data = json.loads(manifest.read_text())
        ids = [e["id"] for e in data["entries"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"run.json is unreadable: {exc}", file=manifest) from None
    if data.get("scenario") != plan.scenario.name or ids != [e.id for e in plan.scenario.entries]:
        raise ConfigError(
            f"this run was of scenario '{data.get('scenario')}' with tests {ids}, not of '{plan.scenario.name}'",
            file=manifest,
            hint="resume with the same --tests-dir and --test-scenario the run was started with",
        )


def resume_command(system_config: Path | None, tests_dir: Path, test_scenario: Path, run_dir: Path) -> str:
    """The exact command that continues this run, with absolute paths (works from any directory)."""
    args = ["cloudai", "run"]
    if system_config is not None:
        args += ["--system-config", str(system_config.resolve())]
    args += ["--tests-dir", str(tests_dir.resolve()), "--test-scenario", str(test_scenario.resolve())]
    return shlex.join([*args, "--resume", str(run_dir.resolve())])


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
        f"where:  at step {env.next_step - 1} (the last step started); steps in flight were cancelled: {in_flight}\n"
        f"record: every finished step is in {out_dir / 'trajectory.csv'}\n"
        f"resume: {resume_cmd}\n\n"
        "traceback:\n" + "".join(traceback.format_exception(exc))
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / FAILURE_FILE
    path.write_text(text)
    return path
