"""Checks before the first submission (``mpi``, node counts, node names) and the Slurm operations
real clusters need: one ``scontrol`` call per poll, a pending job's reason, ``pending_timeout``.

Parsers run on output captured from the local Slurm; the rest runs against it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import CONF
from tests.slurm.conftest import HERE
from tests.slurm.test_system import finish

from cloudai.cli import cli
from cloudai.config.slurm import SlurmSystemConfig
from cloudai.errors import ConfigError
from cloudai.systems.base import JobSpec, JobStatus, NodeNeed
from cloudai.systems.slurm.commands import SlurmCommands
from cloudai.systems.slurm.preflight import check_mpi, parse_mpi_list, parse_sinfo_nodes
from cloudai.systems.slurm.system import SlurmSystem

CAPTURED = HERE / "captured"


def test_parse_mpi_list_on_captured_output() -> None:
    names = parse_mpi_list((CAPTURED / "srun_mpi_list.txt").read_text())
    assert names == ["pmix", "none", "cray_shasta", "pmi2", "pmix_v4"]


def test_parse_mpi_list_old_format() -> None:
    assert parse_mpi_list("srun: MPI types are...\nsrun: mpi/none\nsrun: mpi/pmi2\n") == ["none", "pmi2"]


def test_parse_sinfo_nodes() -> None:
    assert parse_sinfo_nodes((CAPTURED / "sinfo_nodes.txt").read_text()) == {"debug": ["vm"]}
    text = "gpu|n01\ngpu|n02\ncpu|n02\ngpu|n01\n\nbroken\n"
    assert parse_sinfo_nodes(text) == {"gpu": ["n01", "n02"], "cpu": ["n02"]}


def _config(config: SlurmSystemConfig, **changes: object) -> SlurmSystemConfig:
    return SlurmSystemConfig.model_validate({**config.model_dump(), **changes})


@pytest.mark.slurm
@pytest.mark.parametrize("mpi", ["none", "pmi2"])
def test_mpi_the_cluster_loads_passes(config: SlurmSystemConfig, mpi: str) -> None:
    commands = SlurmCommands(30)
    check_mpi(commands, _config(config, mpi=mpi))
    assert commands.calls["srun"] == (1 if mpi == "none" else 2)  # the list once, a --test-only probe


@pytest.mark.slurm
def test_mpi_pmix_without_pmix_library_is_refused(config: SlurmSystemConfig) -> None:
    """srun lists pmix on this cluster, but its plugin cannot load: every job would fail."""
    with pytest.raises(ConfigError) as caught:
        check_mpi(SlurmCommands(30), _config(config, mpi="pmix"))
    text = str(caught.value)
    assert "mpi: Slurm system 'local-slurm': mpi = 'pmix'" in text
    assert "can not load PMIx library" in text
    assert "one of: none, cray_shasta, pmi2" in text and "pmix_v4" not in text.split("hint:")[1]


@pytest.mark.slurm
def test_mpi_not_offered_names_what_is(config: SlurmSystemConfig) -> None:
    with pytest.raises(ConfigError) as caught:
        SlurmSystem(_config(config, mpi="pmi3")).check()
    assert "mpi = 'pmi3' is not offered by this cluster (srun --mpi=list: pmix, none, cray_shasta, pmi2" in str(
        caught.value
    )


@pytest.mark.slurm
def test_preflight_node_counts_and_names(config: SlurmSystemConfig) -> None:
    system = SlurmSystem(_config(config, exclude_nodes=[]))
    system.preflight([NodeNeed("a", 1), NodeNeed("b", 4, nodes=("vm",))])  # a named list decides the count
    with pytest.raises(ConfigError) as caught:
        system.preflight([NodeNeed("s.toml: Tests[0]", 4), NodeNeed("s.toml: Tests[1]", 1, nodes=("vm", "gpu7"))])
    assert [p.message for p in caught.value.problems] == [
        "needs 4 nodes, partition 'debug' has 1",
        "nodes gpu7 are not in partition 'debug' (sinfo lists: vm)",
    ]
    assert caught.value.problems[0].field == "s.toml: Tests[0]"
    with pytest.raises(ConfigError, match=r"needs 1 nodes, partition 'debug' has 0 \(1 excluded\)"):
        SlurmSystem(_config(config, exclude_nodes=["vm"])).preflight([NodeNeed("x", 1)])


@pytest.mark.slurm
def test_shipped_dse_synthetic_is_refused_before_the_sweep(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["run", "--system-config", str(CONF / "common" / "system" / "local_slurm.toml"),
         "--tests-dir", str(CONF / "common" / "test"),
         "--test-scenario", str(CONF / "common" / "test_scenario" / "dse_synthetic.toml"),
         "--output-dir", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "Tests[0] (synthetic): needs 4 nodes, partition 'debug' has 1" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.slurm
def test_final_states_take_one_scontrol_call_for_all(system: SlurmSystem, tmp_path: Path) -> None:
    """No accounting here: three finished jobs are looked up with one ``scontrol show job``."""
    jobs = [system.submit(JobSpec(f"j{i}", ("bash", "-c", f"exit {i}"), tmp_path / f"j{i}")) for i in range(3)]
    finish(system, jobs)
    fresh = SlurmSystem(system.config)  # knows nothing yet: asks for all three at once
    finals = fresh._finals(jobs)  # the batching is the contract under test
    assert [finals[job].returncode for job in jobs] == [0, 1, 2]
    assert fresh.commands.calls["scontrol"] == 1
    assert fresh.commands.calls["sacct"] == 1  # accounting found off once


@pytest.mark.slurm
def test_pending_reason_is_shown_and_pending_timeout_fails_the_job(config: SlurmSystemConfig, tmp_path: Path) -> None:
    held = _config(config, extra_sbatch_args=["--begin=now+3600"], pending_timeout="00:00:01")
    system = SlurmSystem(held)
    notes: list[str] = []
    system.notify = notes.append
    job = system.submit(JobSpec("waits", ("true",), tmp_path / "waits"))
    try:
        finish(system, [job], limit_s=60)
    finally:
        subprocess.run(["scancel", job.job_id], timeout=30, check=False)
    assert job.status is JobStatus.FAILED
    assert job.reason == "pending for more than 1s (pending_timeout): BeginTime"
    assert notes[0] == f"waits (Slurm job {job.job_id}) pending: BeginTime"


def test_pending_timeout_is_validated() -> None:
    base = {"name": "c", "scheduler": "slurm", "default_partition": "p", "partitions": [{"name": "p"}]}
    assert SlurmSystemConfig.model_validate({**base, "pending_timeout": "00:10:00"}).pending_timeout_s == 600
    with pytest.raises(ValueError, match="is not a time limit"):
        SlurmSystemConfig.model_validate({**base, "pending_timeout": "soon"})


@pytest.mark.slurm
def test_partition_the_cluster_lacks_is_named(config: SlurmSystemConfig) -> None:
    other = _config(config, default_partition="gpu", partitions=[{"name": "gpu"}])
    with pytest.raises(ConfigError) as caught:
        SlurmSystem(other).preflight([NodeNeed("x", 1)])
    (problem,) = caught.value.problems
    assert problem.field == "default_partition"
    assert problem.message == "Slurm system 'local-slurm': partition 'gpu' is not on this cluster (sinfo lists: debug)"


@pytest.mark.slurm
def test_agent_config_pending_timeout_fails_the_trial_with_the_reason(tmp_path: Path) -> None:
    """A DSE whose trials cannot start (``--begin`` an hour away): each trial is failed, not waited for."""
    import csv
    import json

    from tests.conftest import cloudai
    from tests.slurm.conftest import SYSTEM_TOML

    system = tmp_path / "system.toml"
    system.write_text(
        SYSTEM_TOML.read_text().replace("[[partitions]]", 'extra_sbatch_args = ["--begin=now+3600"]\n\n[[partitions]]')
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.toml").write_text(
        'name = "t"\ntest_template_name = "Synthetic"\nagent = "grid_search"\nagent_metrics = ["bus_bw"]\n'
        'agent_config = { pending_timeout = "00:00:01", max_parallel = 2 }\n'
        '[cmd_args]\nalgo = ["ring", "tree"]\nduration_s = 0\n'
    )
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[[Tests]]\nid = "dse"\ntest_name = "t"\n')
    done = cloudai("run", "--system-config", system, "--tests-dir", tmp_path / "tests", "--test-scenario", scenario,
                   "--output-dir", tmp_path / "out", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stderr  # every trial failed
    assert "pending: BeginTime" in done.stdout
    (trajectory,) = (tmp_path / "out").rglob("trajectory.csv")
    rows = list(csv.DictReader(trajectory.open()))
    assert [row["status"] for row in rows] == ["failed", "failed"]
    jobs = [json.loads(p.read_text()) for p in sorted(trajectory.parent.glob("*/job.json"))]
    assert [job["reason"] for job in jobs] == ["pending for more than 1s (pending_timeout): BeginTime"] * 2
