"""Node placement as CloudAI renders it: ``nodes`` -> ``#SBATCH --nodelist`` (instead of ``-N``),
system and entry ``exclude_nodes`` -> ``#SBATCH --exclude``; ``PARTITION:GROUP:COUNT`` specs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import CONF
from tests.slurm.conftest import SYSTEM_TOML
from tests.slurm.test_system import finish

from cloudai.cli import cli
from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import ConfigError
from cloudai.systems.base import JobSpec, JobStatus, NodeNeed
from cloudai.systems.slurm.placement import PlacementError, expand_hostlist, placed_count, resolve_nodes
from cloudai.systems.slurm.render import render_sbatch
from cloudai.systems.slurm.system import SlurmSystem


def cluster(**extra: object) -> SlurmSystemConfig:
    return SlurmSystemConfig.model_validate(
        {
            "name": "c",
            "scheduler": "slurm",
            "default_partition": "main",
            "partitions": [
                {
                    "name": "main",
                    "groups": [{"name": "g1", "nodes": ["n-[001-003]"]}, {"name": "g2", "nodes": ["n-004", "n-005"]}],
                }
            ],
            **extra,
        }
    )


def test_expand_hostlist() -> None:
    assert expand_hostlist("n-[001-003,7],m1, m2") == ["n-001", "n-002", "n-003", "n-7", "m1", "m2"]
    assert expand_hostlist("rack[1-2]-a") == ["rack1-a", "rack2-a"]
    with pytest.raises(PlacementError, match="runs backwards"):
        expand_hostlist("n[5-3]")
    with pytest.raises(PlacementError, match="not a Slurm host list"):
        expand_hostlist("n[1-2][3]")


def test_a_host_list_is_counted_not_expanded_and_bounded() -> None:
    """10^7 names are refused from their count alone (expanding them took 1.1 GB and 15-30 s)."""
    from cloudai.config.hostlist import HostlistError, check_hostlist, count_hosts

    assert count_hosts("n[0-9999999],m[01-10,12]") == 10_000_000 + 11
    with pytest.raises(HostlistError, match="names 10000000 nodes; at most 100000"):
        check_hostlist("n[0-9999999]")
    for bad, why in [("n[a-b]", "not a number or a range"), ("n 1", "only letters"), ("a,,b", "empty node name")]:
        with pytest.raises(HostlistError, match=why):
            check_hostlist(bad)


def test_resolve_group_specs_names_and_duplicates() -> None:
    config = cluster()
    assert resolve_nodes(["main:g1:2", "n-002", "main:g2:max_avail"], config) == ["n-001", "n-002", "n-004", "n-005"]
    assert placed_count(config, 8, ["main:g1:2"]) == 2 and placed_count(config, 8, []) == 8
    for spec, message in [
        ("mian:g1:1", "unknown partition 'mian'; did you mean 'main'?"),
        ("main:g3:1", "unknown group 'g3' in partition 'main'; known: g1, g2"),
        ("main:g1:4", "'main:g1:4' asks for 4 nodes; group 'g1' has 3"),
        ("main:g1:zero", "COUNT must be a positive number or max_avail"),
        ("main:g1", "use PARTITION:GROUP:COUNT"),
    ]:
        with pytest.raises(PlacementError, match=re.escape(message)):
            resolve_nodes([spec], config)


def test_rendered_nodelist_replaces_node_count_and_excludes_merge() -> None:
    config = cluster(exclude_nodes=["n-[009-010]"])
    spec = JobSpec("t.0", ("true",), Path("/r/t/0"), num_nodes=4, nodes=("main:g1:2",), exclude_nodes=("n-009", "x1"))
    lines = render_sbatch(spec, config).splitlines()
    assert "#SBATCH --nodelist=n-001,n-002" in lines
    assert "#SBATCH --exclude=n-009,n-010,x1" in lines
    assert not any(line.startswith("#SBATCH -N") for line in lines)
    plain = render_sbatch(JobSpec("t.0", ("true",), Path("/r/t/0"), num_nodes=3), cluster()).splitlines()
    assert "#SBATCH -N 3" in plain and not any("--nodelist" in x or "--exclude" in x for x in plain)


def test_bad_group_spec_is_refused_by_preflight_without_asking_slurm() -> None:
    system = SlurmSystem(cluster())
    with pytest.raises(ConfigError) as caught:
        system.preflight([NodeNeed("s.toml: Tests[0] (a)", 1, nodes=("main:nope:1",))], live=False)
    assert str(caught.value).startswith("s.toml: Tests[0] (a): unknown group 'nope' in partition 'main'")
    assert sum(system.commands.calls.values()) == 0


SCENARIO = """name = "placed"
[[Tests]]
id = "on_vm"
test_name = "hello"
nodes = ["{node}"]
exclude_nodes = ["spare1"]
"""


def test_dry_run_renders_the_scenario_entry_placement(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.format(node="vm"))
    result = CliRunner().invoke(
        cli,
        ["dry-run", "--system-config", str(SYSTEM_TOML), "--tests-dir", str(CONF / "common" / "test"),
         "--test-scenario", str(scenario), "--output-dir", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    script = next((tmp_path / "out").rglob("sbatch.sh")).read_text().splitlines()
    assert "#SBATCH --nodelist=vm" in script and "#SBATCH --exclude=spare1" in script


def test_dry_run_refuses_an_unknown_group(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.format(node="debug:gpus:1"))
    result = CliRunner().invoke(
        cli,
        ["dry-run", "--system-config", str(SYSTEM_TOML), "--tests-dir", str(CONF / "common" / "test"),
         "--test-scenario", str(scenario), "--output-dir", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "Tests[0] (on_vm): unknown group 'gpus' in partition 'debug'" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.slurm
def test_job_pinned_to_a_node_runs_there(system: SlurmSystem, tmp_path: Path) -> None:
    job = system.submit(JobSpec("pinned", ("hostname", "-s"), tmp_path / "pinned", nodes=("vm",)))
    finish(system, [job])
    assert job.status is JobStatus.OK
    assert "#SBATCH --nodelist=vm" in (tmp_path / "pinned" / "sbatch.sh").read_text()


def test_single_sbatch_allocates_the_named_nodes_and_pins_each_step() -> None:
    from cloudai.systems.slurm.single_sbatch import ScriptStep, render_single_sbatch

    run = Path("/r/run")
    steps = [
        ScriptStep(JobSpec("a.0", ("true",), run / "a" / "0", nodes=("main:g1:2",))),
        ScriptStep(JobSpec("b.0", ("true",), run / "b" / "0", nodes=("n-005",), exclude_nodes=("n-009",))),
    ]
    lines = render_single_sbatch(steps, cluster(), run, "s").splitlines()
    assert "#SBATCH --nodelist=n-001,n-002,n-005" in lines and "#SBATCH --exclude=n-009" in lines
    srun = [line for line in lines if "srun" in line and "--job-name" in line]
    assert "-N 2 --job-name=a.0" in srun[0] and "--nodelist=n-001,n-002" in srun[0]
    assert "-N 1 --job-name=b.0" in srun[1] and "--nodelist=n-005" in srun[1]
