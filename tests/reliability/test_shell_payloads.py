"""No field reaches a shell as code (issue 35): every string of every workload and system, hostile, then executed.

For each registered workload (the registry walked, its pydantic model walked: ``shell_payloads.string_fields``)
and for the Slurm and standalone systems: each string field is set to each payload of ``shell_payloads.PAYLOADS``
(``$(...)``, ``;``, backticks, quotes, ``|``/``&``, a newline, CRLF, and every heredoc end marker the scripts use as
a whole line), starting from the workload's contract sample and one of its shipped/test example TOMLs. The cases
are loaded as ``cloudai dry-run`` loads them (``load_plan``) and rendered as it renders them (``dry_run_plain``,
``dry_run_single_sbatch``), then every script is run by ``bash`` under a stub PATH (``srun`` runs its command,
other tools are no-ops). It must hold that no canary file appears, no file outside the job dirs changes, and no
case is an internal error. A refusal at load that names the field is a pass.

One bash per workload, everything else in this process: ~6 s for the lot on a 2-core machine.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from tests.contracts.test_workload_contract import SAMPLES
from tests.reliability.shell_payloads import (
    PAYLOADS,
    Case,
    StringField,
    changed_outside,
    heredoc_markers,
    heredoc_payloads,
    load_until_accepted,
    make_case,
    run_scripts,
    snapshot,
    string_fields,
    write_toml,
)

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import StandaloneSystemConfig
from cloudai.config.test import ARG_TABLES, AgentFields, WorkloadConfig
from cloudai.errors import ConfigError, Problem
from cloudai.plan.load import Plan, build_system, load_plan
from cloudai.run.plain import dry_run_plain
from cloudai.run.single_sbatch import dry_run_single_sbatch
from cloudai.steps import Run, Shell, Step
from cloudai.workloads import WORKLOADS
from cloudai.workloads.base import JobContext, Workload

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_DIRS = (REPO / "conf", REPO / "tests" / "workloads", REPO / "tests" / "cloudai_tree")
TEST_SKIP = {*AgentFields.model_fields, "name", "description", "test_template_name", "cmd_args", *ARG_TABLES}
SLURM = {
    "name": "slurm",
    "scheduler": "slurm",
    "default_partition": "debug",
    "mpi": "pmix",
    "gpus_per_node": 8,
    "partitions": [{"name": "debug"}],
    "global_env_vars": {"CLOUDAI_SYSTEM": "x"},
}
STANDALONE = {"name": "standalone", "scheduler": "standalone"}
# The system cases render one job of each shape: one srun line, several srun steps, the batch shell itself.
SYSTEM_JOBS = ("Sleep", "vllm", "NeMoLauncher")


@functools.cache
def examples() -> dict[str, list[tuple[Path, dict[str, Any]]]]:
    """Shipped and test example test TOMLs, by workload (sorted by path: conf/ first)."""
    found: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for root in EXAMPLE_DIRS:
        for path in sorted(root.rglob("*.toml")):
            try:
                table = tomllib.loads(path.read_text())
            except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
            name = table.get("test_template_name")
            if isinstance(name, str) and "Tests" not in table:
                found.setdefault(name, []).append((path, table))
    return found


def sample_test(name: str) -> dict[str, Any]:
    sample = SAMPLES[name][0] if name in SAMPLES else {}  # a plugin: its defaults
    table: dict[str, Any] = {"name": "t", "test_template_name": name, "cmd_args": copy.deepcopy(sample)}
    if name.startswith("JaxToolbox"):
        table["extra_env_vars"] = {"COMBINE_THRESHOLD": "1073741824"}
    return _tomlable(table)


def _tomlable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _tomlable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_tomlable(v) for v in value]
    return value


class World:
    """The files of one harness run under ``root/world`` (snapshotted); the stubs under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.world = root / "world"
        self.canary = self.world / "canary"
        self.canary.mkdir(parents=True)
        self.scripts: list[Path] = []
        self.allowed: list[Path] = []
        self.failures: list[str] = []
        self.reached = 0  # cases whose payload text is in a rendered script
        self.slurm_file = self.system_file(SLURM, "slurm")

    def system_file(self, table: dict[str, Any], name: str) -> Path:
        table = {**table, "install_path": str(self.world / "install"), "output_path": str(self.world / "results")}
        return write_toml(self.root / "systems" / f"{name}.toml", table)

    def canary_for(self, tag: str) -> str:
        return str(self.canary / tag)

    def render(self, plan: Plan, system_table: dict[str, Any] | None, kind: str, cases: dict[str, Case]) -> None:
        """``dry-run``'s renderers, one entry at a time (an error is then the entry's own), on the plan's system
        or the one ``system_table`` describes."""
        from cloudai.config.system import system_from_dict

        system = build_system(plan.system_config if system_table is None else system_from_dict(system_table, None))
        for entry in plan.scenario.entries:
            one = Plan(plan.system_config, replace(plan.scenario, entries=(entry,)), {entry.id: plan.checked[entry.id]})
            run_dir = self.world / "results" / kind / entry.id
            run_dir.mkdir(parents=True)
            try:
                if kind.endswith("single"):
                    try:
                        dry_run_single_sbatch(one, run_dir, system, lambda _: None)
                    except ConfigError as exc:
                        if "--single-sbatch" in str(exc):  # a multi-step job: not for one sbatch
                            continue
                        raise
                    self.allowed.append(run_dir)
                else:
                    dry_run_plain(one, run_dir, system, lambda _: None, shown=1)
            except Exception as exc:  # an internal error or a refusal after load: both are failures here
                self.failures.append(f"{kind} {entry.id}: {type(exc).__name__}: {exc}")
                continue
            for script in run_dir.rglob("*.sh"):
                self.scripts.append(script)
                self.allowed.append(script.parent)
                case = cases.get(entry.id)
                if case is not None and case.set and self.canary_for(case.tag) in script.read_text(errors="replace"):
                    self.reached += 1

    def lines_with(self, tags: list[str], limit: int = 12) -> list[str]:
        """The script lines that hold a canary's path: where the payload got in."""
        found = []
        for script in self.scripts:
            for line in script.read_text(errors="replace").splitlines():
                if any(self.canary_for(tag) in line for tag in tags):
                    found.append(f"  {script.relative_to(self.world)}: {line[:300]}")
        return found[:limit]

    def execute(self) -> tuple[list[str], list[str], list[Path]]:
        """Run every script; the canaries that appeared, files changed outside the job dirs, scripts that hung."""
        before = snapshot(self.world)
        hung = run_scripts(self.scripts, self.root)
        after = snapshot(self.world)
        ran = sorted(p.name for p in self.canary.iterdir())
        return ran, changed_outside(before, after, self.allowed), hung


def owner_of(cases: dict[str, Case]) -> Callable[[Problem], Case | None]:
    """The case a problem is about: its test file is ``<tag>.toml``."""
    return lambda problem: cases.get(Path(problem.file).stem) if problem.file else None


def dse_excluded(case: Case) -> None:
    """A list-valued cmd_arg is a sweep unless CloudAI's ``dse_excluded_args`` says it is one value."""
    paths = {".".join(str(p) for p in f.path) for f in case.set if f.path[0] == "cmd_args" and "list" in f.wrap}
    if paths:
        case.table["dse_excluded_args"] = sorted({*case.table.get("dse_excluded_args", []), *paths})


def workload_fields(name: str) -> tuple[list[StringField], list[str]]:
    workload = WORKLOADS.get(name)
    fields, shell = string_fields(WorkloadConfig, TEST_SKIP | set(workload.shell_code))
    if workload.args_model is not None:
        args, args_shell = string_fields(workload.args_model, (), ("cmd_args",))
        fields, shell = fields + args, shell + args_shell
    return fields, [*shell, *sorted(workload.shell_code)]


def source_markers(name: str) -> set[str]:
    """The heredoc end markers the workload's own source names (``"CLOUDAI_AIPERF_EOF"``): a heredoc its example
    does not render still gets its marker tried."""
    module = Path(inspect.getfile(WORKLOADS.get(name)))
    files = module.parent.glob("*.py") if module.parent.name != "workloads" else [module]
    return {m for f in files for m in re.findall(r"[\"']([A-Z][A-Z0-9_]*EOF)[\"']", f.read_text())}


def bases_of(name: str, world: World) -> list[dict[str, Any]]:
    """The first shipped/test example TOML that loads as a plain test on its own, else the contract sample."""
    for path, table in examples().get(name, [])[:3]:
        table = {**_tomlable(table), "name": "t"}
        try:
            plan = load_cases(world, f"probe-{path.stem}", {"t": Case("t", table, table)}, world.slurm_file)
        except (AssertionError, ConfigError):
            continue
        if not any(c.agent_driven for c in plan.checked.values()):
            return [table]
    return [sample_test(name)]


def load_cases(world: World, label: str, cases: dict[str, Case], system_file: Path) -> Plan:
    tests_dir = world.root / "tests" / label
    scenario = world.root / "scenarios" / f"{label}.toml"

    def write() -> None:
        for tag, case in cases.items():
            dse_excluded(case)
            write_toml(tests_dir / f"{tag}.toml", {**case.table, "name": tag})
        entries = [{"id": tag, "test_name": tag} for tag in cases]
        write_toml(scenario, {"name": label, "Tests": entries})

    return load_until_accepted(
        list(cases.values()), write, lambda: load_plan(system_file, tests_dir, scenario), owner_of(cases)
    )


def payload_cases(prefix: str, bases: list[dict[str, Any]], fields: list[StringField], world: World,
                  markers: Iterable[str]) -> dict[str, Case]:  # fmt: skip
    cases: dict[str, Case] = {}
    for b, base in enumerate(bases):
        for kind, payload in [*PAYLOADS, *heredoc_payloads(markers)]:
            tag = re.sub(r"[^a-z0-9]+", "-", f"{prefix}-{b}-{kind}".lower()).strip("-")
            cases[tag] = make_case(tag, base, fields, payload(world.canary_for(tag)))
    return cases


def check(world: World, cases: list[Case], label: str, reaches: bool = True) -> None:
    """Run the scripts; no canary, no change outside the job dirs, no internal error, no hang. Each case's
    (field, payload) pairs tried, refused or rendered, are appended to ``$CLOUDAI_HARNESS_STATS`` when set."""
    ran, changed, hung = world.execute()
    assert not world.failures, f"{label}: internal errors while rendering:\n" + "\n".join(world.failures)
    assert not ran, f"{label}: payloads ran: {ran}\n" + "\n".join(world.lines_with(ran))  # where they got in
    assert not changed, f"{label}: files changed outside the job dirs: {changed[:10]}"
    assert not hung, f"{label}: scripts hung under the stubs: {hung[:5]}"
    tried = sum(len(c.set) + len(c.refused) for c in cases)
    assert tried > 0 and (world.reached > 0 or not reaches), f"{label}: no payload reached a script (harness?)"
    if os.environ.get("CLOUDAI_HARNESS_STATS"):
        fields = {f.name for c in cases for f in c.set} | {name for c in cases for name in c.refused}
        refused = sum(len(c.refused) for c in cases)
        stats = {"label": label, "payloads": len(cases), "fields": len(fields), "tried": tried, "refused": refused,
                 "scripts": len(world.scripts), "ran": len(ran)}  # fmt: skip
        with open(os.environ["CLOUDAI_HARNESS_STATS"], "a") as fh:
            fh.write(json.dumps(stats) + "\n")


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def try_workload(name: str, world: World) -> None:
    """Every string field of workload ``name`` with every payload, rendered and run; fails on any payload that ran."""
    fields, _ = workload_fields(name)  # the ShellCode fields are left out
    bases = bases_of(name, world)
    base_cases = {f"base-{i}": Case(f"base-{i}", b, copy.deepcopy(b)) for i, b in enumerate(bases)}
    base_plan = load_cases(world, "bases", base_cases, world.slurm_file)
    world.render(base_plan, {**SLURM, "install_path": str(world.world / "install")}, "bases", {})
    markers = heredoc_markers(world.scripts) | source_markers(name)
    cases = payload_cases(name, bases, fields, world, markers)
    plan = load_cases(world, "cases", cases, world.slurm_file)
    slurm = {**SLURM, "install_path": str(world.world / "install")}
    standalone = {**STANDALONE, "install_path": str(world.world / "install")}
    world.render(plan, slurm, "slurm", cases)
    world.render(plan, standalone, "standalone", cases)
    world.render(plan, slurm, "single", cases)
    check(world, list(cases.values()), name)


@pytest.mark.parametrize("name", WORKLOADS.names())
def test_no_payload_runs_from_a_workload_field(name: str, world: World) -> None:
    try_workload(name, world)


class _LeakyArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = "x"


class _Leaky(Workload):
    """A plugin that pastes a field into a shell step: what the harness must find without being told."""

    name = "_LeakyProbe"
    args_model = _LeakyArgs
    hardware = "cpu"

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        return ["true"]

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        return (Shell(f"echo {args.get('label', 'x')}"), Run(("true",)))


def test_the_harness_finds_a_new_workloads_unquoted_field(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered, never listed: its ``label`` is found by the model walk and its payloads run (the canary names
    them), so the harness fails."""
    monkeypatch.setitem(WORKLOADS._loaded, _Leaky.name, _Leaky)
    with pytest.raises(AssertionError, match=r"payloads ran: .*leakyprobe-0-subst") as caught:
        try_workload(_Leaky.name, world)
    assert "echo $(touch" in str(caught.value)


def load_system_case(world: World, case: Case, jobs: dict[str, Case]) -> Plan:
    """``case`` as the system of a scenario running ``jobs``, loaded until accepted (its refusals dropped)."""
    system_file = world.root / "systems" / f"{case.tag}.toml"
    tests, scenario = world.root / "tests" / case.tag, world.root / "scenarios" / f"{case.tag}.toml"

    def write() -> None:
        world.system_file(case.table, case.tag)
        for name, job in jobs.items():
            write_toml(tests / f"{name}.toml", {**job.table, "name": name})
        write_toml(scenario, {"name": case.tag, "Tests": [{"id": name, "test_name": name} for name in jobs]})

    def owner(problem: Problem) -> Case | None:
        return case if problem.file == str(system_file) else None

    return load_until_accepted([case], write, lambda: load_plan(system_file, tests, scenario), owner)


@pytest.mark.parametrize(("scheduler", "base"), [("slurm", SLURM), ("standalone", STANDALONE)])
def test_no_payload_runs_from_a_system_field(scheduler: str, base: dict[str, Any], world: World) -> None:
    model = SlurmSystemConfig if scheduler == "slurm" else StandaloneSystemConfig
    fields, _ = string_fields(model, {"scheduler"})
    jobs = {name: Case(name, sample_test(name), sample_test(name)) for name in SYSTEM_JOBS}
    cases = []
    for kind, payload in [*PAYLOADS, *heredoc_payloads(())]:
        tag = f"{scheduler}-{kind}".lower()
        case = make_case(tag, base, fields, payload(world.canary_for(tag)))
        plan = load_system_case(world, case, jobs)
        world.render(plan, None, f"{tag}-sbatch", dict.fromkeys(jobs, case))
        if scheduler == "slurm":
            world.render(plan, None, f"{tag}-single", dict.fromkeys(jobs, case))
        cases.append(case)
    check(world, cases, scheduler, reaches=scheduler == "slurm")
