"""Test TOML models: a workload kind (``test_template_name``) with its ``cmd_args``.

The agent fields (``agent``, ``agent_steps``, ...) and ``env_params`` may sit on the test
or on a scenario entry; the entry wins. See docs/test-toml.md for every field.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cloudai.config.fields import (
    Seed,
    StrictPositiveInt,
    check_arg_keys,
    check_env,
    check_mounts,
    check_no_nul,
    number_problem,
)
from cloudai.config.kinds import check_kind, kind_of, scenarios_in_tests_dir
from cloudai.config.tomlfile import read_toml, validate
from cloudai.errors import ConfigError, Problem


class EnvParamSpec(BaseModel):
    """How the environment samples ``cmd_args.<name>`` each trial (domain randomization).

    The candidates stay in ``cmd_args`` (a list or a range); this table only says how to draw
    from them: ``weights`` for a list (uniform when omitted), ``distribution`` for a range
    (``uniform`` by default, ``loguniform`` when the range has ``log = true``; ``normal`` needs
    ``mean`` and ``std`` and is clipped to [low, high]). What this model checks needs no
    ``cmd_args``; the checks against them live in ``cloudai.plan.env_param_checks.check_env_params``.
    """

    model_config = ConfigDict(extra="forbid")

    weights: list[float] | None = Field(default=None, min_length=1)
    distribution: Literal["uniform", "loguniform", "normal"] | None = None
    mean: float | None = None
    std: float | None = Field(default=None, gt=0)

    @field_validator("weights")
    @classmethod
    def _weights(cls, weights: list[float] | None) -> list[float] | None:
        if weights is not None:
            if any(not math.isfinite(w) or w < 0 for w in weights):
                raise ValueError("weights must be finite and not negative")
            if not any(w > 0 for w in weights):
                raise ValueError("weights must not all be zero")
        return weights

    @model_validator(mode="after")
    def _check(self) -> EnvParamSpec:
        if self.weights is not None and self.distribution is not None:
            raise ValueError("give weights (for a list) or distribution (for a range), not both")
        if self.distribution == "normal" and (self.mean is None or self.std is None):
            raise ValueError("distribution 'normal' needs both mean and std")
        if self.distribution != "normal" and (self.mean is not None or self.std is not None):
            raise ValueError("mean and std apply only to distribution = 'normal'")
        return self


# Fields of CloudAI's test and scenario-entry models that cloudai does not honour: an unknown-field error
# says so (never a did-you-mean to an unrelated field of ours), naming what the field does in CloudAI.
DSE_EXCLUDED = re.compile(r"cmd_args(\.[^.\s]+)+")

CLOUDAI_TEST_ONLY: dict[str, str] = {
    "custom_bash": "CloudAI's vLLM/SGLang run these bash lines before a matching command",
    "nsys": "CloudAI wraps the job in an Nsight Systems profile",
    "predictor": "CloudAI runs a performance predictor after the job",
    "proxy_script_repo": "CloudAI's vLLM clones the repository of its disaggregation proxy at install time",
    "training_report": "CloudAI writes a training report",
}


class GitRepoSpec(BaseModel):
    """CloudAI's ``[[git_repos]]`` entry: ``cloudai install`` clones ``url`` at ``commit`` under the system's
    ``install_path`` (as ``<repo>__<commit>``); a containerized job mounts it at ``mount_as`` (default
    ``/git/<repo>__<commit>``), as CloudAI does."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(min_length=1)
    commit: str = Field(min_length=1, pattern=r"^[^\s/:,]+$")
    init_submodules: bool = False
    mount_as: str | None = Field(default=None, pattern=r"^/[^,:\n]*$")

    @field_validator("url", "commit")
    @classmethod
    def _not_an_option(cls, value: str) -> str:
        """``git clone URL`` / ``git checkout COMMIT``: a leading ``-`` would make it an option of git's
        (``--upload-pack=...`` runs a command), whitespace or a control character is no repository or commit."""
        if value.startswith("-") or value != value.strip() or any(c < " " or c == "\x7f" for c in value):
            raise ValueError(
                f"{value!r} starts with '-', or holds whitespace at an end or a control character: git would read it "
                "as an option or not at all; give a repository URL or path (./repo for a local one) and a commit"
            )
        return value

    @property
    def dir_name(self) -> str:
        name = self.url.rstrip("/").rsplit("/", maxsplit=1)[-1].removesuffix(".git")
        return f"{name}__{self.commit}"

    @property
    def container_mount(self) -> str:
        return self.mount_as or f"/git/{self.dir_name}"


class AgentFields(BaseModel):
    """Fields that make a test agent-driven or configure its agent; None means 'not set here'."""

    model_config = ConfigDict(extra="forbid")
    CLOUDAI_ONLY: ClassVar[dict[str, str]] = CLOUDAI_TEST_ONLY

    agent: str | None = None
    agent_steps: StrictPositiveInt | None = None
    agent_metrics: list[str] | None = Field(default=None, min_length=1)
    agent_reward_function: str | None = None
    agent_config: dict[str, Any] | None = None
    agent_objectives: dict[str, Literal["max", "min"]] | None = Field(default=None, min_length=1)
    agent_constraints: dict[str, str] | None = None  # metric -> "<= 50" (cloudai.config.objectives)
    env_params: dict[str, EnvParamSpec] | None = None
    seed: Seed | None = None
    # CloudAI's: cmd_args (``cmd_args.<path>``) passed whole, never swept (a list there is the value, not a knob)
    dse_excluded_args: list[str] | None = None

    @field_validator("dse_excluded_args", mode="before")
    @classmethod
    def _excluded(cls, value: Any) -> Any:
        for path in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            if isinstance(path, str) and not DSE_EXCLUDED.fullmatch(path.strip()):
                raise ValueError(f"{path!r} is not a cmd_args path: write cmd_args.<name>[.<name>...]")
        return [value] if isinstance(value, str) else value

    @field_validator("agent_constraints")
    @classmethod
    def _constraints(cls, constraints: dict[str, str] | None) -> dict[str, str] | None:
        from cloudai.config.objectives import parse_constraint

        for metric, text in (constraints or {}).items():
            parse_constraint(metric, text)
        return constraints


def checked_cmd_args(cmd_args: dict[str, Any]) -> dict[str, Any]:
    """``cmd_args`` of a test or a scenario entry: no NUL in any string (no process could receive it)."""
    check_no_nul(cmd_args, "cmd_args")
    check_arg_keys(cmd_args, "cmd_args")
    return cmd_args


def checked_extra_cmd_args(extra: dict[str, Any] | str | None) -> dict[str, Any] | str | None:
    """``extra_cmd_args`` as a string is split into words like a shell would (never run by one): it must split
    (an unbalanced quote is refused here, not met as a crash once the run began) and hold no NUL."""
    check_no_nul(extra, "extra_cmd_args")
    if isinstance(extra, dict):
        nested = [key for key, value in extra.items() if isinstance(value, dict)]
        if nested:
            raise ValueError(
                f"extra_cmd_args.{nested[0]} is a table; each extra_cmd_args entry is one flag and its value "
                '(write a dotted key, e.g. "a.b" = 1)'
            )
        check_arg_keys(extra, "extra_cmd_args", extra=True)
        for key, value in extra.items():
            problem = number_problem(key, value)
            if problem:
                raise ValueError(f"extra_cmd_args.{key} {problem}")
    if isinstance(extra, str):
        try:
            shlex.split(extra)
        except ValueError as exc:
            raise ValueError(f"cannot be split into words: {exc} (an unbalanced quote?)") from None
    return extra


def checked_env_vars(env: dict[str, Any]) -> dict[str, Any]:
    """``extra_env_vars``: names ``[A-Za-z_][A-Za-z0-9_]*``, values without NUL, a value or a list (no range)."""
    check_env(env)
    return env


# CloudAI's test-level tables beside cmd_args that a workload reads as arguments (vLLM's and SGLang's benchmark
# client and semantic evaluation): merged into cmd_args under their own name (a scenario entry overrides them
# as ``[Tests.cmd_args.bench_cmd_args]``), so their values are knobs like any other (``max_concurrency = [8, 64]``).
ARG_TABLES = ("bench_cmd_args", "semantic_eval_cmd_args")


class WorkloadConfig(AgentFields):
    """One file of ``--tests-dir``. CloudAI's test files load unchanged."""

    name: str = Field(min_length=1)
    description: str = ""
    test_template_name: str = Field(min_length=1)
    cmd_args: dict[str, Any] = Field(default_factory=dict)
    extra_env_vars: dict[str, Any] = Field(default_factory=dict)
    extra_cmd_args: dict[str, Any] | str = Field(default_factory=dict)
    extra_container_mounts: list[str] = Field(default_factory=list)  # more src:dst mounts when in a container
    git_repos: list[GitRepoSpec] = Field(default_factory=list)
    bench_cmd_args: dict[str, Any] | None = None  # see ARG_TABLES
    semantic_eval_cmd_args: dict[str, Any] | None = None

    _cmd_args = field_validator("cmd_args")(checked_cmd_args)
    _env = field_validator("extra_env_vars")(checked_env_vars)
    _extra = field_validator("extra_cmd_args")(checked_extra_cmd_args)
    _mounts = field_validator("extra_container_mounts")(check_mounts)


@dataclass
class TestFiles:
    """The tests of a directory: those that loaded, and every problem. ``broken`` maps the name a file that
    failed to load claims (its ``name``, else its stem) to its problems, so that a scenario naming it is told
    the cause once rather than "unknown test"."""

    tests: dict[str, tuple[WorkloadConfig, Path]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    broken: dict[str, list[Problem]] = field(default_factory=dict)


def scan_tests(tests_dir: Path) -> TestFiles:
    """Every ``*.toml`` under ``tests_dir``, by test name, collecting problems instead of stopping at one."""
    if not tests_dir.exists():
        raise ConfigError("tests directory not found", file=tests_dir, hint="pass --tests-dir DIR")
    if not tests_dir.is_dir():
        raise ConfigError(
            "is a file, expected a directory of test TOML files",
            file=tests_dir,
            hint="pass the directory that holds it to --tests-dir",
        )
    found = TestFiles()
    files = sorted(tests_dir.rglob("*.toml"))
    scenarios: list[Path] = []
    for path in files:
        try:
            data = read_toml(path)
            if kind_of(data) == "scenario":
                scenarios.append(path)
                continue
            test = test_from(data, path)
        except ConfigError as exc:
            found.problems += exc.problems
            found.broken.setdefault(_claimed_name(path), []).extend(exc.problems)
            continue
        if test.name in found.tests:
            problem = Problem(
                str(path),
                "name",
                f"test name '{test.name}' is also used by {found.tests[test.name][1]}",
                "give each test a unique name",
            )
            found.problems.append(problem)
            found.broken.setdefault(test.name, []).append(problem)
            continue
        found.tests[test.name] = (test, path)
    found.problems += scenarios_in_tests_dir(tests_dir, scenarios, len(files))
    return found


def load_tests(tests_dir: Path) -> dict[str, tuple[WorkloadConfig, Path]]:
    """Every ``*.toml`` under ``tests_dir`` by test name. Raises one error listing every problem."""
    found = scan_tests(tests_dir)
    if found.problems:
        raise ConfigError(problems=found.problems)
    return found.tests


def _claimed_name(path: Path) -> str:
    try:
        name = read_toml(path).get("name")
    except ConfigError:
        name = None
    return name if isinstance(name, str) and name else path.stem


def load_test(path: Path) -> WorkloadConfig:
    return test_from(read_toml(path), path)


def test_from(data: dict[str, Any], path: Path) -> WorkloadConfig:
    """The test file ``path`` holding ``data``; a scenario or a system file is told so, not "unknown field"."""
    check_kind(data, path, "test")
    return validate(WorkloadConfig, data, path)
