"""The workload contract: argv from one trial's scalar arguments, metrics from its job dir.

A workload is system-agnostic: it never starts processes itself. Contract:

* ``args_model`` (pydantic, ``extra="forbid"``) validates one trial's scalar ``cmd_args``;
  ``validate`` applies it to every candidate of a swept space at load time.
* ``argv(args, job)`` is the command for one trial; values are passed as separate argv
  entries (never through a shell unless the workload *is* a shell command).
* ``steps(args, job)`` (optional): a job of several steps (a server, a wait for it, its client; see
  ``cloudai.steps``), rendered by each system its way; ``argv`` is then what the job is about (its benchmark
  command, for records). Default: none, the job is ``argv``.
* ``installables(args)`` (optional): what ``cloudai install`` puts under the system's ``install_path`` for
  this workload (a pinned Python environment); ``JobContext.install_path`` says where it went.
* ``installed_problem(args, install_path)`` (optional): once ``installables`` are installed, why ``args`` cannot
  run with them (an option the installed tool does not have), as ``(cmd_args field, message)``; checked by
  ``run``/``dry-run`` before anything is written (exit 2). Default: None.
* ``session(install_path)`` (optional): a context a run holds open around the trials it runs on this machine
  (standalone), e.g. a warm worker process the trials reuse instead of each paying a cold start. It must not
  change what a trial measures, only what it costs. Default: nothing.
* ``evaluate(args, job)`` (optional): the trial run in cloudai's own process instead of ``argv``'s (a
  model-backed trial asking a warm worker the ``session`` holds: no process per trial), as a
  ``cloudai.steps.Evaluation``: it writes the job dir's files and returns the exit code and output the argv would
  have, so the job's record is the same; it may decline (None) and the argv runs. A system that runs jobs here
  (standalone) calls it; others run the argv. Default: None, the job is its argv.
* ``constraint(args, resources)`` returns why a point is infeasible, or None. ``resources`` says where the
  trial would run (its nodes, the system's GPUs per node), for rules such as "tp*pp*cp divides the GPUs".
  The search uses it before any trial (``cloudai.workloads.validity``): a grid skips such points, a sampler
  redraws, a space without a valid point is refused at load time.
* ``hard_rule``: True when no job can be built for a point that breaks ``constraint`` (NixlEP's plan on nodes that
  cannot hold it): a plain test breaking it is refused at load too. Default False: a plain test runs as given, as
  CloudAI runs it (its reference configs break some rules).
* ``mounted_env``: ``extra_env_vars`` whose value the job mounts (Triton's ``NIM_CACHE_PATH``): each candidate must be
  one absolute path, checked by ``validate``.
* ``validate`` also holds every number of every candidate to the range its name says (``config.fields.bound_of``:
  parallel sizes >= 1, ports 1..65535, fractions in (0, 1], counts, seconds; never NaN or infinite), pass-through
  flags included, so a new workload gets the bounds without declaring them.
* ``constraint_mask(columns, resources)`` (optional): the same rule over many points at once, so a 10^6-point
  grid is counted in well under a second: ``columns`` maps every flat knob name to a numpy array (one entry per
  point), ``resources`` is a ``ResourceColumns``; returns a bool array, True where the point is valid, or None
  (the default: no vectorised form, the scalar rule is asked point by point). It must agree with ``constraint``.
* ``monotone(metric, values)`` (optional): how ``metric`` moves around the point ``values`` (flat knobs), as a
  ``Monotone``: it never decreases as a ``grows`` knob increases, and ``free`` knobs have no bearing on it. A
  measured point that breaks an upper bound on the metric (``agent_constraints``) then rules out, before any
  step, every point that differs only by larger ``grows`` knobs and any ``free`` ones (``ValidPoints.bound``):
  a serving model's latency at a larger batch. Default: None (nothing known). It must hold for every point:
  a wrong claim hides points from the search.
* ``proposals(measured, meets, choices)`` (optional): points the workload's model says are worth a step, given
  the measured ones (``measured``: each trial's flat values, metrics and reward; ``meets(metric, value)``: whether the
  test's constraints allow it; ``choices``: each flat knob's values). The optuna agent's local search measures
  them first: Aiconfigurator pairs the best measured prefill and decode sides as aiconfigurator does. Default: [].
* ``derived(args, resources)`` (optional): knobs the workload computes from others (dp from tp*pp*cp and the
  GPUs), never asked of the user; shown beside each point by ``dry-run``. Default: none.
* ``container_image(args)`` is the image the command must run in (CloudAI's ``docker_image_url``),
  or None; the system decides how (Slurm: pyxis ``srun --container-image``; standalone: not at all).
* ``container_mounts(args, job)``: ``SRC:DST`` mounts the command needs in that image besides the system's
  own and the test's ``extra_container_mounts`` (after them, as CloudAI orders its workloads' mounts), e.g.
  JaxToolbox's job dir at ``/opt/paxml/workspace/``, NeMoRun's recipe dir at ``/cloudai_workspace``. Default: none.
* ``job_env(args, env)`` (optional): the job's environment given the test's ``extra_env_vars``, with
  what the workload adds (CloudAI's NeMoRun exports ``CLOUDAI_NEMO_TASK``); default: ``env`` unchanged.
* ``ntasks(args)``: 1 for a command that is not an MPI program (Slurm then runs one task, not one
  per allocated task), else None.
* ``value_lists``: cmd_args whose TOML value is a list that is *one* value (CloudAI's list-typed fields, e.g.
  MoEBenchmark's ``deepep_versions``), never candidates of a sweep.
* ``ntasks_per_node(args)``: processes per node when the command fixes that (CloudAI's fio
  ``num_tasks_per_node``), else None; ``mpi`` False: the command is not launched through MPI (Slurm: no
  ``--mpi``).
* ``progress(job_dir)`` (optional): the intermediate values of the headline (first) metric the
  running job has reported so far, as ``[(step, value), ...]`` in step order; the DSE env polls it
  while a trial runs, for pruning. Default: none. It must be cheap and tolerate a torn last line.
* ``read_metrics(job_dir)`` reads ``metrics.json`` (``{"name": number}``; ``default`` is the
  headline metric) and raises ``WorkloadError`` when it is missing or malformed.
* ``latency_charts``: a serving workload's latency metrics and throughput metric, which the report charts against
  each other, one point per trial (``LatencyCharts``). Default None: no such chart.
* ``failure_reason(job_dir)`` gives the tool's own error line for a job that failed (added to
  its exit code in the recorded reason), or None.
"""

from __future__ import annotations

import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ValidationError

from cloudai.config.fields import check_absolute_path, number_problems
from cloudai.config.test import GitRepoSpec
from cloudai.config.tomlfile import problems_from
from cloudai.errors import Problem
from cloudai.installables import Installable
from cloudai.space import Categorical, Space
from cloudai.steps import Evaluation, Step
from cloudai.workloads.arg_checks import as_written, bad_image, chosen_branch, nested
from cloudai.workloads.outputs import (  # noqa: F401  # re-exported: the workloads import them from here
    MAX_METRICS_BYTES,
    METRICS_FILE,
    STDOUT_FILE,
    STDOUT_HEAD,
    STDOUT_TAIL,
    read_metrics_file,
    read_stdout,
    write_metrics,
)

if TYPE_CHECKING:
    import numpy as np


def _int_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# A size as the tools write it ("128", "4G", "2:128"); a bare number (``minbytes = 128``) means the same text.
SizeText = Annotated[str, BeforeValidator(_int_as_text)]


@dataclass(frozen=True)
class JobContext:
    """What a workload may know about the job it builds a command for."""

    job_dir: Path
    num_nodes: int = 1
    extra_cmd_args: Mapping[str, Any] | str = ""
    install_path: Path | None = None  # the system's install_path (absolute): where `cloudai install` put things
    gpus_per_node: int | None = None  # the system's (Slurm's ``gpus_per_node``); None where it does not say
    env: Mapping[str, str] = field(default_factory=dict)  # the job's environment (``job_env``'s result)
    git_repos: tuple[GitRepoSpec, ...] = ()  # the test's [[git_repos]], expected at install_path / dir_name
    time_limit_s: float | None = None  # the entry's time_limit (a launcher that submits its own job passes it on)
    extra_container_mounts: tuple[str, ...] = ()  # the test's (a launcher that submits its own job passes them on)
    hf_home: Path | None = None  # the system's Hugging Face cache (CloudAI's hf_home_path), absolute


@dataclass(frozen=True)
class Resources:
    """What a constraint may know of where a trial runs: the job's node count and the system's GPUs per node
    (None where the system does not say: standalone, or a Slurm system without ``gpus_per_node``)."""

    num_nodes: int = 1
    gpus_per_node: int | None = None

    @property
    def num_gpus(self) -> int | None:
        return None if self.gpus_per_node is None else self.num_nodes * self.gpus_per_node


ONE_NODE = Resources()


@dataclass(frozen=True)
class ResourceColumns:
    """``Resources`` for a column of points (``constraint_mask``): ``num_nodes`` is an int array, one per point."""

    num_nodes: np.ndarray
    gpus_per_node: int | None = None

    @property
    def num_gpus(self) -> np.ndarray | None:
        return None if self.gpus_per_node is None else self.num_nodes * self.gpus_per_node


@dataclass(frozen=True)
class Monotone:
    """How one metric moves around a point (``Workload.monotone``): it never decreases as a knob of ``grows``
    increases, and the knobs of ``free`` have no bearing on it, every other knob held (flat names)."""

    grows: frozenset[str]
    free: frozenset[str] = frozenset()


# A measured step as ``Workload.proposals`` sees it: its flat values, its metrics and its reward.
MeasuredStep = tuple[Mapping[str, Any], Mapping[str, float], float]


@dataclass(frozen=True)
class LatencyCharts:
    """Latency against throughput, one chart per family of ``latencies`` (TTFT, ITL, ...), one point per trial.

    A family is one latency's statistics (``("ttft_p90_ms", "ttft_ms", "ttft_p99_ms")``): the chart draws the one the
    test has an ``agent_constraints`` SLA on (and the SLA as a line), else the first. Written into ``run.json``
    (the reports import no workloads)."""

    throughput: str
    latencies: tuple[tuple[str, ...], ...]

    def to_json(self) -> dict[str, object]:
        return {"throughput": self.throughput, "latencies": [list(family) for family in self.latencies]}


class Workload(ABC):
    name: ClassVar[str]
    args_model: ClassVar[type[BaseModel] | None] = None
    produces_metrics: ClassVar[bool] = False  # True: a job without valid metrics.json has failed
    metrics: ClassVar[tuple[str, ...] | None] = None  # the metric names it reports; None: not declared, () none
    noisy: ClassVar[bool] = False  # the same point measures differently when re-run: confirm the best by default
    units: ClassVar[dict[str, str]] = {}  # metric -> unit, shown on report axes and tables
    latency_charts: ClassVar[LatencyCharts | None] = None  # a serving workload's latency-vs-throughput charts
    # What a real run needs: "cpu" runs on any machine (this one too); "gpu" needs GPUs (tests use a stand-in
    # that prints the tool's output). docs/test-toml.md's coverage table says it for every workload.
    hardware: ClassVar[Literal["cpu", "gpu"]] = "gpu"
    mpi: ClassVar[bool] = True  # False: not an MPI program's launch (Slurm renders no ``--mpi``; CloudAI's fio)
    value_lists: ClassVar[frozenset[str]] = frozenset()  # list-valued cmd_args that are one value, not a sweep
    # cmd_args that choose a branch: ``{selector: tables}``, e.g. Aiconfigurator's ``{"mode": ("agg", "disagg")}``:
    # with ``mode`` given, the knobs under ``[cmd_args.agg]`` apply only where ``mode = "agg"`` (``Space.when``).
    branches: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    # True: no job can be built for a point that breaks ``constraint`` (a plain test breaking it is refused at load,
    # exit 2); False: the rule steers the search, a plain test breaking it runs as CloudAI runs it.
    hard_rule: ClassVar[bool] = False
    mounted_env: ClassVar[tuple[str, ...]] = ()  # extra_env_vars whose value the job mounts: one absolute path each
    # Test fields (beside ``ShellCode`` cmd_args) whose text a shell runs as written, on purpose (BashCmd's string
    # ``extra_cmd_args``, appended to its ``cmd``); every other field reaches a script quoted or is refused at load.
    shell_code: ClassVar[frozenset[str]] = frozenset()

    @abstractmethod
    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]: ...

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        return ()

    def num_nodes(self, args: Mapping[str, Any]) -> int | None:
        """The nodes a job needs when its scenario entry does not set ``num_nodes`` (CloudAI's AIDynamo: its
        prefill plus decode nodes); None: the entry's own (1 by default)."""
        return None

    def default_means(self, cmd_args: Mapping[str, Any]) -> str | None:
        """Which of ``metrics`` the ``default`` metric is for these (test-level, possibly swept) ``cmd_args``, so
        results say ``read_bw 3 655 MiB/s`` rather than ``default 3655``; None: not one of them, or not fixed."""
        return None

    def installables(self, args: Mapping[str, Any]) -> Sequence[Installable]:
        """What ``cloudai install`` must put under the system's ``install_path`` first (``cloudai.installables``)."""
        return ()

    def installed_problem(self, args: Mapping[str, Any], install_path: Path) -> tuple[str, str] | None:
        """Why ``args`` cannot run with the installed ``installables`` (``(cmd_args field, message)``), or None."""
        return None

    def session(self, install_path: Path | None) -> AbstractContextManager[None]:
        """Held open by a run around its trials on this machine (see the module docstring)."""
        return nullcontext()

    def evaluate(self, args: Mapping[str, Any], job: JobContext) -> Evaluation | None:
        """The trial run in this process instead of the argv (see the module docstring); None: the argv."""
        return None

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        return None

    def constraint_mask(self, columns: Mapping[str, np.ndarray], resources: ResourceColumns) -> np.ndarray | None:
        return None

    def monotone(self, metric: str, values: Mapping[str, Any]) -> Monotone | None:
        """How ``metric`` moves around the point ``values`` (see the module docstring); None: nothing known."""
        return None

    def proposals(
        self,
        measured: Sequence[MeasuredStep],
        meets: Callable[[str, float], bool],
        choices: Mapping[str, Sequence[Any]],
    ) -> list[dict[str, Any]]:
        return []

    def derived(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> dict[str, Any]:
        return {}

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return None

    def job_env(self, args: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, str]:
        return dict(env)

    def ntasks(self, args: Mapping[str, Any]) -> int | None:
        """How many processes the command must run as, when it fixes that (1: not an MPI program); None: the
        system's own (Slurm: one per task of the allocation)."""
        return None

    def container_mounts(self, args: Mapping[str, Any], job: JobContext) -> Sequence[str]:
        """``src:dst`` mounts the command needs in its container, after the test's ``extra_container_mounts``."""
        return ()

    def container_env(self, args: Mapping[str, Any], job: JobContext) -> Mapping[str, str]:
        """Variables for the command in its container only (a path under one of ``container_mounts``): a system
        that runs the job on the host does not set them."""
        return {}

    def ntasks_per_node(self, args: Mapping[str, Any]) -> int | None:
        """Processes per node when the command fixes that; None: the system's own."""
        return None

    def validate(self, space: Space, *, file: Path | None, prefix: str) -> list[Problem]:
        """Check every candidate value of the knobs in ``space`` that are this workload's args."""
        if self.args_model is None:
            return []
        args = {k: v for k, v in space.fixed.items() if not k.startswith("extra_env_vars.") and k != "num_nodes"}
        trial_points = [{}]
        for dim in space.dims:
            if dim.name.startswith("extra_env_vars.") or dim.name == "num_nodes":
                continue
            values = dim.choices if isinstance(dim, Categorical) else (dim.clip(dim.low), dim.clip(dim.high))
            trial_points += [{dim.name: v} for v in values]
            args.setdefault(dim.name, values[0])
        problems: dict[str, Problem] = {p.field or prefix: p for p in self._mounted_env_problems(space, file, prefix)}
        for point in trial_points:
            values = nested(chosen_branch(space, {**args, **point}, point))
            for path, message in number_problems(values):  # bounds by name, for every workload (issue 35)
                field = f"{prefix}.{path}"
                hint = "give a value in that range" if "finite" not in message else "give a finite number"
                problems.setdefault(field, Problem(str(file) if file else None, field, message, hint))
            try:
                self.args_model.model_validate(values)
                wrong = bad_image(self.container_image(values))
                if wrong:
                    field = f"{prefix}.docker_image_url"
                    problems.setdefault(field, Problem(str(file) if file else None, field, wrong, "give one image"))
            except ValidationError as exc:
                for p in problems_from(exc, self.args_model, file, knobs=True):
                    field = f"{prefix}.{p.field}" if p.field else prefix
                    message = as_written(p.message, space, p.field)
                    problems.setdefault(field, Problem(p.file, field, message, p.hint))
        return list(problems.values())

    def _mounted_env_problems(self, space: Space, file: Path | None, prefix: str) -> list[Problem]:
        """Each candidate of a ``mounted_env`` variable is one absolute path (a newline there split the mount)."""
        found: list[Problem] = []
        for name in self.mounted_env:
            knob = f"extra_env_vars.{name}"
            dims = [d for d in space.dims if d.name == knob and isinstance(d, Categorical)]
            values = [space.fixed[knob]] if knob in space.fixed else list(dims[0].choices) if dims else []
            for value in values:
                try:
                    check_absolute_path(str(value), name)
                except ValueError as exc:
                    field = f"{prefix.removesuffix('cmd_args')}{knob}"
                    found.append(Problem(str(file) if file else None, field, str(exc), "give the directory's path"))
                    break
        return found

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        return read_metrics_file(job_dir / METRICS_FILE)

    def failure_reason(self, job_dir: Path) -> str | None:
        return None

    def progress(self, job_dir: Path) -> list[tuple[int, float]]:
        return []


def constraint_of(
    workload: Workload, values: Mapping[str, Any], gpus_per_node: int | None, *, nodes_set: bool = True
) -> str | None:
    """``workload.constraint`` for one point of a test's space (its ``cmd_args``, ``extra_env_vars.*`` and
    ``num_nodes`` knobs, flat), on a system with ``gpus_per_node``. ``nodes_set``: the scenario entry sets
    ``num_nodes``; when it does not, the job gets ``workload.num_nodes(args)`` nodes where that says."""
    from cloudai.space import split_knobs

    args, _, num_nodes = split_knobs(values)
    return workload.constraint(args, Resources(job_nodes(workload, args, num_nodes, nodes_set), gpus_per_node))


def job_nodes(workload: Workload, args: Mapping[str, Any], num_nodes: int, nodes_set: bool) -> int:
    """The nodes a job gets: the entry's ``num_nodes`` when it sets it, else ``workload.num_nodes(args)`` where
    the workload says (CloudAI's AIDynamo: prefill + decode nodes), else the default."""
    return num_nodes if nodes_set else workload.num_nodes(args) or num_nodes


def cloudai_extra_args(extra: Mapping[str, Any] | str) -> list[str]:
    """``extra_cmd_args`` as CloudAI appends them: a string split like a shell would (never run by
    one); a table ``{"--stepfactor": "2", "--flag": ""}`` as ``--stepfactor 2 --flag`` (keys verbatim)."""
    if isinstance(extra, str):
        return shlex.split(extra)
    words: list[str] = []
    for key, value in extra.items():
        words += [str(key), str(value)] if value not in ("", None) else [str(key)]
    return words


def override_args(extra: Mapping[str, Any] | str) -> list[str]:
    """``extra_cmd_args`` as CloudAI appends them to a Hydra / NeMo-Run command: a table as ``key=value`` words
    (a key alone when its value is empty), a string split like a shell would."""
    if isinstance(extra, str):
        return shlex.split(extra)
    return [f"{key}={value}" if value not in ("", None) else str(key) for key, value in extra.items()]
