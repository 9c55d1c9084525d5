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

Beside it: ``tally`` (what an iteration keeps of its steps), ``conclude`` (best.toml and the terminal's lines once a
search is over), ``failure`` (``dse_failure.txt``), ``resume_check`` (what ``--resume`` checks) and ``commands`` (the
resume and warm-start commands); the names they had here are still exported from here.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.envs.base import BaseGym, Feedback
from cloudai.errors import ConfigError, Interrupted
from cloudai.run import Echo
from cloudai.run.commands import RunFiles, resume_command, warm_start_command
from cloudai.run.failure import FAILURE_FILE, report_failure
from cloudai.run.resume_check import check_records, check_resume
from cloudai.run.tally import Tally

if TYPE_CHECKING:
    from cloudai.agents.base import AgentConfig, BaseAgent
    from cloudai.plan.load import Plan
    from cloudai.plan.route import CheckedEntry
    from cloudai.reports.regime_value import RegimeSpec
    from cloudai.run.conclude import Found
    from cloudai.run.warm import WarmStart
    from cloudai.systems.base import System

__all__ = [
    "FAILURE_FILE",
    "RunFiles",
    "build_env",
    "check_records",
    "check_resume",
    "resume_command",
    "run_agent_entries",
    "warm_start_command",
]


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
    from cloudai.plan.agent_checks import agent_config, default_steps
    from cloudai.run.conclude import conclude
    from cloudai.run.confirm import regime_spec
    from cloudai.run.progress import StepProgress

    entry, label = checked.entry, f"{checked.entry.id}/{iteration}"
    agent_cls = AGENTS.get(entry.agent.name)
    steps = default_steps(entry, checked.space, agent_cls, valid) or 0
    out_dir = run_dir / entry.id / str(iteration)
    (out_dir / FAILURE_FILE).unlink(missing_ok=True)
    config = agent_config(entry, agent_cls)
    confirm = _confirm_plan(checked, config, steps, echo)
    tally = Tally(entry.agent.metrics, StepProgress(label, steps + confirm[0] * confirm[1], echo))
    env = build_env(plan, checked, run_dir, iteration=iteration, system=system, resume=resume, on_step=tally.on_step)
    spec = regime_spec(env, config)
    _opened(env, checked, run_dir, agent_cls, config, tally, echo)
    warm = _warm_start(env, checked, warm_dirs, label, echo)
    try:
        found = _search(env, agent_cls, config, steps, tally, confirm, out_dir, spec, warm)
    except KeyboardInterrupt:
        env.close()
        raise Interrupted(
            f"interrupted: {entry.id} iteration {iteration} stopped before step {env.next_step}; "
            f"finished steps are in {out_dir / 'trajectory.csv'}\n  resume with: {resume_command}"
        ) from None
    except Exception as exc:
        report_failure(echo, checked, iteration, env, exc, out_dir, resume_command)
        return None
    env.close()
    return conclude(checked, label, env, spec, tally, found, out_dir, echo)


def _confirm_plan(checked: CheckedEntry, config: AgentConfig, steps: int, echo: Echo) -> tuple[int, int]:
    """How many candidates confirmation re-runs, how many steps each (``confirm_plan``); a note when that is more
    than the search's ``steps``."""
    from cloudai.envs.env_params import sampler_for
    from cloudai.run.confirm import confirm_plan

    entry = checked.entry
    sampler = None if checked.live_rl else sampler_for(entry, checked.space)
    confirm = confirm_plan(entry, config, checked.live_rl, len(sampler.regimes()) if sampler else 1)
    if sampler and confirm[0] * confirm[1] > steps:
        echo(f"note: {entry.id}: confirmation re-runs {confirm[0]} candidate(s) {config.confirm_repeats} time(s) in "
             f"each of {len(sampler.regimes())} env_params regimes: {confirm[0] * confirm[1]} steps, more than the "
             "search's; lower agent_config.confirm or confirm_repeats to spend less")  # fmt: skip
    return confirm


def _opened(
    env: BaseGym,
    checked: CheckedEntry,
    run_dir: Path,
    agent_cls: type[BaseAgent],
    config: AgentConfig,
    tally: Tally,
    echo: Echo,
) -> None:
    """The env just built: its recorded steps tallied, a live server's observation names recorded, a cap on
    ``max_parallel`` said, a live server's space checked against ``enqueue`` (the env closed if it fails)."""
    from cloudai.run.rundir import record_observation_names

    entry = checked.entry
    if env.live:  # the server names what it observes: the records say so
        record_observation_names(run_dir, entry.id, env.define_observation_space())
    tally.replayed(env.history())
    if agent_cls.can_ask_ahead and not env.live and config.max_parallel > env.max_in_flight:
        echo(f"note: {entry.id}: max_parallel = {config.max_parallel} is capped at the system's "
             f"max_concurrent_jobs = {env.max_in_flight}")  # fmt: skip
    if env.live and config.enqueue:  # the server's space is known only now
        from cloudai.plan.points import check_enqueue

        problems = check_enqueue(entry, env.define_action_space(), config.enqueue)
        if problems:
            env.close()
            raise ConfigError(problems=problems)


def _warm_start(
    env: BaseGym, checked: CheckedEntry, warm_dirs: tuple[Path, ...], label: str, echo: Echo
) -> WarmStart | None:
    """The ``--warm-start`` dirs' steps of this test, in the agent's space (None without ``--warm-start``)."""
    if not warm_dirs:
        return None
    from cloudai.plan.agent_checks import agent_space
    from cloudai.run.warm import load_warm_start

    entry = checked.entry
    action_space = env.define_action_space() if env.live else agent_space(entry, checked.space)
    warm = load_warm_start(warm_dirs, entry.id, action_space, checked.space, tuple(entry.agent.metrics))
    echo(warm.note(label))
    return warm


def _search(
    env: BaseGym,
    agent_cls: type[BaseAgent],
    config: AgentConfig,
    steps: int,
    tally: Tally,
    confirm: tuple[int, int],
    out_dir: Path,
    spec: RegimeSpec | None,
    warm: WarmStart | None,
) -> Found:
    """The agent's run to ``steps`` (told the recorded and warm-start steps first), then confirmation's re-runs."""
    from cloudai.run.conclude import Found
    from cloudai.run.confirm import run_confirmation, search_steps

    history = tally.history
    with tally.progress, _frozen_heap():
        agent = agent_cls(env, config, steps)
        agent.uncounted = {f.step for f in history} - {f.step for f in search_steps(history, out_dir)}
        if warm is not None:
            agent.warm_start(warm.told)
        ran = agent.run()
        searched = len(search_steps(history, out_dir)) + tally.counts.total() - len(history)  # failed ones too
        search = search_steps(tally.steps(), out_dir)
        parallel = config.max_parallel if agent_cls.can_ask_ahead else 1
        confirmed = run_confirmation(env, search, tally.steps(), confirm, out_dir, parallel, spec)
    return Found(agent, steps, ran, searched, search, confirmed)


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """The objects alive when the search starts (modules, the plan, the config models: ~45 000) are kept out of the
    cyclic garbage collector's full passes while the trials run (``gc.freeze``): each pass walked them all, ~20 ms
    every few hundred trials as the run's records grow. Unfrozen after, so garbage among them is freed later."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _live_env_class() -> Callable[..., BaseGym]:
    """The live-RL env (a sibling of ``CloudAIGymEnv`` built from the same ``TrialSetup``)."""
    from cloudai.envs.live import LiveGymEnv

    return LiveGymEnv
