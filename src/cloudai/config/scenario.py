"""Scenario TOML: which tests run, how often, in which order; merged into ``RunEntry`` values.

Everything that can be known from the files alone is checked here (ids, references,
dependency cycles, time limits); checks that need a registry (workload args, agents,
rewards) live in ``cloudai.plan.route``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cloudai.config.fields import NodeCount, StrictPositiveInt, check_dir_name, check_mounts, shown
from cloudai.config.hostlist import check_hostlists, check_node_specs, listed_and_excluded
from cloudai.config.ids import check_ids
from cloudai.config.kinds import check_kind
from cloudai.config.objectives import Constraint, Objective, default_reward, observed_metrics, parse_constraint
from cloudai.config.test import (
    ARG_TABLES,
    CLOUDAI_TEST_ONLY,
    AgentFields,
    EnvParamSpec,
    GitRepoSpec,
    WorkloadConfig,
    checked_cmd_args,
    checked_env_vars,
    checked_extra_cmd_args,
)
from cloudai.config.timelimit import parse_time_limit
from cloudai.config.tomlfile import read_toml, validate
from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.space import ENV_PREFIX, NUM_NODES, is_range

TEST_FIELDS = frozenset(WorkloadConfig.model_fields)  # what a test file may set (and an entry override)
_TABLE_FIELDS = frozenset({"cmd_args", "extra_env_vars"})  # merged key by key (env_params: replaced whole)
DependencyType = Literal["start_post_init", "start_post_comp", "end_post_comp"]


class Dependency(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: DependencyType
    id: str


class ScenarioEntry(AgentFields):
    """One ``[[Tests]]`` entry. ``test_name`` refers to a test file; or define the test inline."""

    CLOUDAI_ONLY: ClassVar[dict[str, str]] = {
        **CLOUDAI_TEST_ONLY,
        "extra_srun_args": "CloudAI adds these words to this entry's srun line",
    }

    id: str = Field(min_length=1)
    test_name: str | None = None
    name: str | None = None
    description: str | None = None
    test_template_name: str | None = None
    num_nodes: NodeCount | list[NodeCount] = Field(default=1)
    time_limit: str | int | None = None
    iterations: StrictPositiveInt = 1
    cmd_args: dict[str, Any] = Field(default_factory=dict)
    extra_env_vars: dict[str, Any] = Field(default_factory=dict)
    extra_cmd_args: dict[str, Any] | str | None = None
    dependencies: list[Dependency] = Field(default_factory=list)
    nodes: list[str] = Field(default_factory=list)  # Slurm: --nodelist (names, host lists, PARTITION:GROUP:N)
    exclude_nodes: list[str] = Field(default_factory=list)  # Slurm: --exclude
    # CloudAI fields accepted for compatibility; they do not change how jobs run here.
    weight: float = 0.0
    sol: float | None = None
    ideal_perf: float | None = None
    extra_container_mounts: list[str] = Field(default_factory=list)
    git_repos: list[GitRepoSpec] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _one_line_id(cls, value: str) -> str:
        return check_dir_name(value, "id")

    _cmd_args = field_validator("cmd_args")(checked_cmd_args)
    _env = field_validator("extra_env_vars")(checked_env_vars)
    _extra = field_validator("extra_cmd_args")(checked_extra_cmd_args)
    _mounts = field_validator("extra_container_mounts")(check_mounts)
    _nodes = field_validator("nodes")(check_node_specs)
    _exclude = field_validator("exclude_nodes")(check_hostlists)

    @model_validator(mode="after")
    def _not_listed_and_excluded(self) -> ScenarioEntry:
        both = listed_and_excluded(self.nodes, self.exclude_nodes)
        if both:
            raise ValueError(f"node(s) {', '.join(both[:5])} both in nodes and in exclude_nodes: keep one")
        if self.nodes and isinstance(self.num_nodes, list):
            raise ValueError(
                f"nodes pins the job to {shown(self.nodes)} while num_nodes = {self.num_nodes} sweeps the node "
                "count: give num_nodes one value, or drop nodes"
            )
        return self


class ScenarioConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    CLOUDAI_ONLY: ClassVar[dict[str, str]] = {"reports": "CloudAI's per-scenario report settings"}

    name: str = Field(min_length=1)
    job_status_check: bool = True
    Tests: list[ScenarioEntry] = Field(min_length=1)
    # CloudAI's hook scenarios (conf/hook/<name>.toml), added as entries by ``cloudai.config.hooks``.
    pre_test: str | None = None
    post_test: str | None = None
    sol_path: str | None = None

    @field_validator("name")
    @classmethod
    def _one_line_name(cls, value: str) -> str:
        return check_dir_name(value, "scenario name")


@dataclass(frozen=True)
class AgentSettings:
    """The merged agent fields of one entry (entry over test over defaults)."""

    name: str = "grid_search"
    steps: int | None = None
    metrics: tuple[str, ...] = ("default",)
    reward: str = "inverse"
    config: dict[str, Any] | None = None
    env_params: dict[str, EnvParamSpec] | None = None
    seed: int | None = None
    explicit: bool = False  # some agent field was set in TOML
    objectives: tuple[Objective, ...] = ()  # agent_objectives; () = maximize the reward
    constraints: tuple[Constraint, ...] = ()  # agent_constraints on measured metrics


@dataclass(frozen=True)
class RunEntry:
    """One scenario entry with its test merged in: what the runner or the agent works from."""

    index: int
    id: str
    test_name: str
    workload: str
    description: str
    cmd_args: dict[str, Any]
    extra_env_vars: dict[str, Any]
    extra_cmd_args: dict[str, Any] | str
    num_nodes: int | list[int]
    time_limit_s: int | None
    iterations: int
    dependencies: tuple[Dependency, ...]
    agent: AgentSettings
    test_file: Path | None
    scenario_file: Path
    extra_container_mounts: tuple[str, ...] = ()  # CloudAI's: more src:dst mounts for a containerized job
    git_repos: tuple[GitRepoSpec, ...] = ()  # cloned by `cloudai install`, mounted in the container; the entry's wins
    nodes: tuple[str, ...] = ()
    exclude_nodes: tuple[str, ...] = ()
    hook: str = ""  # "pre_test"/"post_test": an entry of a hook scenario (``cloudai.config.hooks``)
    scenario_fields: frozenset[str] = frozenset()  # dotted paths the scenario entry set (it wins over the test)
    whole: tuple[str, ...] = ()  # cmd_args names (flat) passed whole, never swept (CloudAI's dse_excluded_args)

    @property
    def knobs(self) -> dict[str, Any]:
        """Every knob of the entry under one flat namespace (``cloudai.space.entry_knobs``)."""
        from cloudai.space import entry_knobs

        return entry_knobs(self.cmd_args, self.extra_env_vars, self.num_nodes, self.whole)

    @property
    def field_prefix(self) -> str:
        return f"Tests[{self.index}]"

    def attribute(self, problems: Iterable[Problem]) -> list[Problem]:
        """Problems found in the merged entry, each moved to the file that holds the wrong value.

        Checks report against ``Tests[i].<field>`` of the scenario; a value the entry took from its
        test file is reported against that file and its own field, naming the scenario entry that
        pulled the test in (a typo in a test's cmd_args is the test's, not the scenario's).
        """
        return [self._attributed(p) for p in problems]

    def _attributed(self, problem: Problem) -> Problem:
        prefix = f"{self.field_prefix}."
        if (
            self.test_file is None
            or problem.file != str(self.scenario_file)
            or not (problem.field or "").startswith(prefix)
        ):
            return problem
        relative = (problem.field or "")[len(prefix) :]
        top = re.split(r"[.\[]", relative, maxsplit=1)[0]
        if top not in TEST_FIELDS or self._from_scenario(relative, top):
            return problem
        used_by = f"test '{self.test_name}', used by {self.field_prefix} (id '{self.id}') of {self.scenario_file}"
        return Problem(str(self.test_file), relative, f"{problem.message} [{used_by}]", problem.hint)

    def _from_scenario(self, relative: str, top: str) -> bool:
        if top not in _TABLE_FIELDS:
            return top in self.scenario_fields
        return any(
            relative == path or relative.startswith(path + ".") or path.startswith(relative + ".")
            for path in self.scenario_fields
        )

    def knob_field(self, name: str) -> str:
        """The TOML path of a knob, for messages: ``Tests[0].cmd_args.algo``."""
        if name.startswith(ENV_PREFIX) or name == NUM_NODES:
            return f"{self.field_prefix}.{name}"
        return f"{self.field_prefix}.cmd_args.{name}"


@dataclass(frozen=True)
class Scenario:
    name: str
    file: Path
    entries: tuple[RunEntry, ...]
    job_status_check: bool = True
    pre_test: str | None = None  # hook scenario names, see ``cloudai.config.hooks``
    post_test: str | None = None

    def entry(self, entry_id: str) -> RunEntry:
        return next(e for e in self.entries if e.id == entry_id)


def load_scenario(
    path: Path, tests: dict[str, tuple[WorkloadConfig, Path]], broken: Mapping[str, list[Problem]] | None = None
) -> Scenario:
    """Read, validate and merge a scenario. Raises one ``ConfigError`` listing every problem.

    ``broken``: tests that failed to load, by the name they claim, with their problems: an entry naming one
    is reported with those problems (its cause), not as an unknown test.
    """
    scenario, problems = scan_scenario(path, tests, broken)
    if problems:
        raise ConfigError(problems=problems)
    return scenario


def scan_scenario(
    path: Path, tests: dict[str, tuple[WorkloadConfig, Path]], broken: Mapping[str, list[Problem]] | None = None
) -> tuple[Scenario, list[Problem]]:
    """The scenario with the entries that merged, and every problem (``load_scenario`` without the stop):
    the rest of a plan can still be checked, so one run reports everything wrong at once."""
    data = read_toml(path)
    check_kind(data, path, "scenario")
    config: ScenarioConfig = validate(ScenarioConfig, data, path)
    problems: list[Problem] = []
    entries: list[RunEntry] = []
    for index, raw in enumerate(config.Tests):
        if broken and raw.test_name is not None and raw.test_name in broken and raw.test_name not in tests:
            problems += broken[raw.test_name]
            continue
        try:
            entries.append(_merge(index, raw, tests, path))
        except ConfigError as exc:
            problems += exc.problems
    problems += check_ids(config.name, [(e.id, [d.id for d in e.dependencies]) for e in config.Tests], path)
    scenario = Scenario(config.name, path, tuple(entries), config.job_status_check, config.pre_test, config.post_test)
    return scenario, problems


def entry_for_test(test: WorkloadConfig, path: Path) -> RunEntry:
    """``test`` as the one entry of a scenario that names it, ``path`` (its file) standing in for the scenario."""
    return _merge(0, ScenarioEntry(id=test.name, test_name=test.name), {test.name: (test, path)}, path)


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``; nested tables merge key by key, everything else replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and not is_range(value):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _set_paths(raw: ScenarioEntry) -> frozenset[str]:
    """The dotted paths ``raw`` sets: table fields down to their leaves (a range table is one leaf)."""
    paths: set[str] = set()

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value and not is_range(value):
            for key, inner in value.items():
                walk(f"{prefix}.{key}", inner)
        else:
            paths.add(prefix)

    for name in raw.model_fields_set:
        value = getattr(raw, name)
        if name in _TABLE_FIELDS and isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{name}.{key}", inner)
        else:
            paths.add(name)
    return frozenset(paths)


def _merge(index: int, raw: ScenarioEntry, tests: dict[str, tuple[WorkloadConfig, Path]], path: Path) -> RunEntry:
    field = f"Tests[{index}]"
    test_file: Path | None = None
    if raw.test_name is not None:
        if raw.test_name not in tests:
            raise ConfigError(
                f"unknown test '{raw.test_name}'",
                file=path,
                field=f"{field}.test_name",
                hint=(did_you_mean(raw.test_name, tests) + " (test names come from --tests-dir)")
                if tests
                else "pass --tests-dir DIR (the directory of test files), or define the test inline with "
                "test_template_name",
            )
        test, test_file = tests[raw.test_name]
    elif raw.test_template_name is not None:
        test = WorkloadConfig(name=raw.name or raw.id, test_template_name=raw.test_template_name)
    else:
        raise ConfigError(
            "entry needs test_name (a test from --tests-dir) or an inline test_template_name",
            file=path,
            field=f"{field}.test_name",
        )
    time_limit_s = None
    if raw.time_limit is not None:
        try:
            time_limit_s = parse_time_limit(raw.time_limit)
        except ValueError as exc:
            raise ConfigError(str(exc), file=path, field=f"{field}.time_limit") from None
    if isinstance(raw.num_nodes, list) and not raw.num_nodes:
        raise ConfigError("empty list", file=path, field=f"{field}.num_nodes", hint="give at least one node count")
    extra_cmd_args = raw.extra_cmd_args if raw.extra_cmd_args is not None else test.extra_cmd_args
    return RunEntry(
        index=index,
        id=raw.id,
        test_name=test.name,
        workload=test.test_template_name,
        description=raw.description or test.description,
        cmd_args=_with_arg_tables(test, deep_merge(test.cmd_args, raw.cmd_args)),
        extra_env_vars={**test.extra_env_vars, **raw.extra_env_vars},
        extra_cmd_args=extra_cmd_args,
        num_nodes=raw.num_nodes,
        time_limit_s=time_limit_s,
        iterations=raw.iterations,
        dependencies=tuple(raw.dependencies),
        agent=_agent_settings(test, raw),
        test_file=test_file,
        scenario_file=path,
        extra_container_mounts=(*test.extra_container_mounts, *raw.extra_container_mounts),
        git_repos=tuple(raw.git_repos or test.git_repos),  # the entry's list replaces the test's, as in CloudAI
        nodes=tuple(raw.nodes),
        exclude_nodes=tuple(raw.exclude_nodes),
        scenario_fields=_set_paths(raw),
        whole=excluded_names(raw.dse_excluded_args if raw.dse_excluded_args is not None else test.dse_excluded_args),
    )


def excluded_names(paths: list[str] | None) -> tuple[str, ...]:
    """``dse_excluded_args`` (``cmd_args.a.b``) as flat knob names (``a.b``)."""
    return tuple(p.strip().removeprefix("cmd_args.") for p in paths or ())


def _with_arg_tables(test: WorkloadConfig, cmd_args: dict[str, Any]) -> dict[str, Any]:
    """``cmd_args`` with the test's ``ARG_TABLES`` under their names (the entry's own ``cmd_args.<table>`` wins)."""
    for table in ARG_TABLES:
        value = getattr(test, table)
        if value is not None:
            entry = cmd_args.get(table)
            cmd_args[table] = deep_merge(value, entry) if isinstance(entry, dict) else value if entry is None else entry
    return cmd_args


def _agent_settings(test: AgentFields, entry: AgentFields) -> AgentSettings:
    def pick(name: str) -> Any:
        value = getattr(entry, name)
        return getattr(test, name) if value is None else value

    defaults = AgentSettings()
    names = ("agent", "agent_steps", "agent_metrics", "agent_reward_function", "agent_config", "env_params", "seed",
             "agent_objectives", "agent_constraints")  # fmt: skip
    objectives = tuple(Objective(m, d) for m, d in (pick("agent_objectives") or {}).items())
    constraints = tuple(parse_constraint(m, t) for m, t in (pick("agent_constraints") or {}).items())
    metrics = observed_metrics(pick("agent_metrics"), objectives, constraints, defaults.metrics)
    return AgentSettings(
        name=pick("agent") or defaults.name,
        steps=pick("agent_steps"),
        metrics=metrics,
        reward=pick("agent_reward_function") or default_reward(objectives) or defaults.reward,
        objectives=objectives,
        constraints=constraints,
        config=pick("agent_config"),
        env_params=pick("env_params"),
        seed=pick("seed"),
        explicit=any(pick(n) is not None for n in names),
    )
