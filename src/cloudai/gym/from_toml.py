"""Build a cloudai test's environment from TOML: ``make`` (a ``GymnasiumAdapter``) and ``load_env`` (the ``BaseGym``).

    import gymnasium, cloudai.gym
    env = gymnasium.make("cloudai/Test-v0", tests_dir="conf/test", scenario="conf/scenario/x.toml")

``load_env`` loads and validates the scenario (``load_plan``), picks the
agent-driven entry (``test_id``, or the only one), creates the results dir
``<output>/<scenario>_<timestamp>/`` with its ``run.json``, and builds the test's env,
which records every trial in ``<test id>/0/trajectory.csv`` there. Nothing is written
before validation passed. ``overrides`` replace the entry's ``cmd_args`` by flat name
(``make(..., duration_s=0)``) and are validated like the TOML.

The spec is registered ``nondeterministic``: a trial is a real job (timing noise, the
env's cache answering a repeated action, env_params seeded per step), so Gymnasium's
step-determinism check does not apply.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError, did_you_mean

if TYPE_CHECKING:
    from cloudai.envs.base import BaseGym
    from cloudai.gym.adapter import GymnasiumAdapter
    from cloudai.plan.load import Plan
    from cloudai.plan.route import CheckedEntry


@dataclass(frozen=True)
class LoadedEnv:
    """A built env with what it was built from: the checked entry and the results dir."""

    env: BaseGym
    checked: CheckedEntry
    run_dir: Path
    plan: Plan | None = None

    def another(self, iteration: int) -> BaseGym:
        """One more env of the same test, recording into ``<run_dir>/<test id>/<iteration>/`` (a serve session's)."""
        assert self.plan is not None, "built by load_env"
        return _build(self.plan, self.checked, self.run_dir, iteration)

    @property
    def trial_dir(self) -> Path:
        """Where the entry's trajectory.csv is written."""
        return self.run_dir / self.checked.entry.id / "0"


def pick_entry(plan: Plan, test_id: str | None) -> CheckedEntry:
    """The agent-driven entry named ``test_id``, or the only one; a ``ConfigError`` otherwise."""
    agent = {i: c for i, c in plan.checked.items() if c.agent_driven}
    file = plan.scenario.file
    if test_id is not None:
        if test_id not in plan.checked:
            raise ConfigError(f"no test '{test_id}' in the scenario", file=file, field="Tests",
                              hint=did_you_mean(test_id, plan.checked))  # fmt: skip
        if test_id not in agent:
            raise ConfigError(f"test '{test_id}' is not agent-driven: it has no list/range knob and no live_rl_mode",
                              file=file, field="Tests")  # fmt: skip
        return agent[test_id]
    if len(agent) != 1:
        found = ", ".join(agent) or "none"
        raise ConfigError(f"pick one agent-driven test with test_id (found: {found})", file=file, field="Tests")
    return next(iter(agent.values()))


def _with_overrides(plan: Plan, checked: CheckedEntry, overrides: dict[str, Any]) -> CheckedEntry:
    from cloudai.config.scenario import deep_merge
    from cloudai.plan.route import check_scenario
    from cloudai.space import unflatten

    entry = dataclasses.replace(checked.entry, cmd_args=deep_merge(checked.entry.cmd_args, unflatten(overrides)))
    scenario = dataclasses.replace(plan.scenario, entries=(entry,))
    return check_scenario(scenario)[entry.id]


def load_env(
    tests_dir: str | Path,
    scenario: str | Path,
    test_id: str | None = None,
    *,
    system_config: str | Path | None = None,
    output_dir: str | Path | None = None,
    **overrides: Any,
) -> LoadedEnv:
    """Validate, pick the entry, create the results dir, build the env (see the module docstring)."""
    from cloudai.plan.load import load_plan
    from cloudai.run.rundir import create_run_dir, output_root, record_observation_names, write_run_manifest

    plan = load_plan(None if system_config is None else Path(system_config), Path(tests_dir), Path(scenario))
    checked = pick_entry(plan, test_id)
    if overrides:
        checked = _with_overrides(plan, checked, overrides)
        plan = dataclasses.replace(
            plan,
            scenario=dataclasses.replace(plan.scenario, entries=(checked.entry,)),
            checked={checked.entry.id: checked},
        )
    root = output_root(plan, None if output_dir is None else Path(output_dir))
    run_dir = create_run_dir(root, plan.scenario.name)
    write_run_manifest(plan, run_dir)
    env = _build(plan, checked, run_dir)
    if env.live:  # the server names what it observes: the records say so
        record_observation_names(run_dir, checked.entry.id, env.define_observation_space())
    return LoadedEnv(env, checked, run_dir, plan)


def _build(plan: Plan, checked: CheckedEntry, run_dir: Path, iteration: int = 0) -> BaseGym:
    """The DSE helper's builder for one entry (``cloudai.run.dse``)."""
    from cloudai.run.dse import build_env

    return build_env(plan, checked, run_dir, iteration=iteration)


def make(
    tests_dir: str | Path,
    scenario: str | Path,
    test_id: str | None = None,
    *,
    max_steps: int | None = None,
    **overrides: Any,
) -> GymnasiumAdapter:
    """A ``GymnasiumAdapter`` over the test's env; episodes truncate at ``max_steps`` (default ``agent_steps``)."""
    loaded = load_env(tests_dir, scenario, test_id, **overrides)
    kwargs = {"tests_dir": tests_dir, "scenario": scenario, "test_id": test_id, "max_steps": max_steps, **overrides}
    return adapt(loaded.env, loaded, max_steps, kwargs)


def adapt(env: BaseGym, loaded: LoadedEnv, max_steps: int | None, kwargs: dict[str, Any]) -> GymnasiumAdapter:
    """``env`` (one of ``loaded``'s) as a ``GymnasiumAdapter`` with the spec ``make(**kwargs)`` builds again."""
    from gymnasium.envs.registration import EnvSpec

    from cloudai.gym.adapter import GymnasiumAdapter
    from cloudai.gym.registration import ENV_ID

    steps = max_steps if max_steps is not None else loaded.checked.entry.agent.steps
    adapter = GymnasiumAdapter(env, max_steps=steps)
    # The spec ``gymnasium.make("cloudai/Test-v0", ...)`` would give (it replaces this one when it is
    # the caller): a trial is a real job, so nondeterministic; ``spec.make()`` builds an equal env.
    adapter.spec = EnvSpec(ENV_ID, entry_point=f"{__name__}:make", nondeterministic=True, kwargs=kwargs)
    return adapter
