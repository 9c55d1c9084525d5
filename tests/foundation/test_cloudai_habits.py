"""Issue 23: a CloudAI user's habits work — the system variable, inline tests, --hook-dir, list KIND -v,
--log-level WARN, Slurm's time formats, and every problem of a scenario reported at once, at its cause."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import cloudai

from cloudai.config.timelimit import parse_time_limit

SLURM_SYSTEM = 'name = "login-cluster"\nscheduler = "slurm"\ndefault_partition = "p"\n[[partitions]]\nname = "p"\n'
SLEEP = 'name = "sleep"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 0\n'
ONE = 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n'
METRIC_TEST = r"""name = "sleep"
test_template_name = "BashCmd"
[cmd_args]
cmd = 'f() { echo "{\"default\": 1}" > metrics.json; }; f'
x = [1, 2]
"""


def scenario_args(tmp_path: Path, write: Callable[[str, str], Path], scenario: str = ONE) -> list[str]:
    write("tests/sleep.toml", SLEEP)
    return ["--tests-dir", str(tmp_path / "tests"), "--test-scenario", str(write("s.toml", scenario))]


def test_system_config_falls_back_to_the_variable(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    system = write("system.toml", SLURM_SYSTEM)
    env = {**os.environ, "CLOUDAI_SYSTEM_CONFIG": str(system)}
    result = cloudai("dry-run", *scenario_args(tmp_path, write), "--output-dir", tmp_path / "out", env=env)
    assert result.returncode == 0, result.stderr
    assert f"on login-cluster (system: $CLOUDAI_SYSTEM_CONFIG={system})" in result.stdout
    assert list((tmp_path / "out").glob("*/a/0/sbatch.sh")), "the job was rendered for Slurm, not run here"


def test_the_flag_wins_over_the_variable_and_the_default_is_named(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    env = {**os.environ, "CLOUDAI_SYSTEM_CONFIG": str(write("system.toml", SLURM_SYSTEM))}
    local = write("local.toml", 'name = "here"\nscheduler = "standalone"\n')
    args = [*scenario_args(tmp_path, write), "--output-dir", str(tmp_path / "out")]
    flagged = cloudai("run", *args, "--system-config", local, env=env)
    assert flagged.returncode == 0, flagged.stderr
    assert f"on here (system: --system-config {local})" in flagged.stdout
    plain = cloudai("run", *args, env={k: v for k, v in os.environ.items() if k != "CLOUDAI_SYSTEM_CONFIG"})
    assert "on standalone (system: built-in default (standalone: this machine))" in plain.stdout


def test_tests_dir_is_optional_for_inline_tests(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    inline = 'name = "s"\n[[Tests]]\nid = "a"\ntime_limit = "00:60:00"\nname = "nap"\ntest_template_name = "Sleep"\n'
    scenario = write("s.toml", inline + "[Tests.cmd_args]\nseconds = 0\n")
    result = cloudai("run", "--test-scenario", scenario, "--output-dir", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    named = cloudai("run", "--test-scenario", write("t.toml", ONE), "--output-dir", tmp_path / "out")
    assert named.returncode == 2 and "unknown test 'sleep'" in named.stderr
    assert "pass --tests-dir DIR" in named.stderr


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("00:60:00", 3600), ("00:99:99", 99 * 60 + 99), ("1-25:00:00", 49 * 3600), ("90", 5400), ("0:0:90", 90)],
)
def test_time_limits_are_what_slurm_accepts(text: str, seconds: int) -> None:
    assert parse_time_limit(text) == seconds


def test_hook_dir_names_where_hooks_are(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write("myhooks/nap.toml", 'name = "nap_hook"\n[[Tests]]\nid = "h"\ntest_name = "hooksleep"\n')
    write("myhooks/test/hooksleep.toml", SLEEP.replace('"sleep"', '"hooksleep"'))
    args = scenario_args(tmp_path, write, 'name = "s"\npre_test = "nap_hook"\n' + ONE.removeprefix('name = "s"\n'))
    missing = cloudai("dry-run", *args, "--output-dir", tmp_path / "out")
    assert missing.returncode == 2 and "unknown hook scenario 'nap_hook'" in missing.stderr
    found = cloudai("dry-run", *args, "--hook-dir", tmp_path / "myhooks", "--output-dir", tmp_path / "out")
    assert found.returncode == 0, found.stderr
    assert "pre_test.h" in found.stdout


def test_list_takes_a_kind_and_verbose() -> None:
    agents = cloudai("list", "agents")
    assert agents.returncode == 0 and "grid_search" in agents.stdout and "Sleep" not in agents.stdout
    assert "PydanticUndefined" not in agents.stdout and "enqueue = []" in agents.stdout
    workloads = cloudai("list", "workloads", "-v")
    assert "Fio" in workloads.stdout and "metrics: " in workloads.stdout and 'fio_binary = "fio"' in workloads.stdout
    from cloudai.workloads import WORKLOADS

    real = {"Fio", "NcclTest", "UCCTest", "OSUBench"}  # measure real hardware: their best is confirmed by default
    real |= {"DDLBTest", "NIXLBench", "NIXLKVBench", "NixlEP", "MoEBenchmark", "ChakraReplay"}  # issue 26's
    real |= {"AIDynamo", "TritonInference", "vllm", "sglang", "DynamoMocker"}  # serving (issues 24, 37)
    assert {name for name in WORKLOADS.names() if WORKLOADS.get(name).noisy} == real
    assert workloads.stdout.count("; noisy (the best is confirmed)") == len(real)
    reports = cloudai("list", "reports")
    assert "report.html" in reports.stdout and "trajectory.csv" in reports.stdout
    systems = cloudai("list", "systems", "-v")
    assert "default_partition = (required)" in systems.stdout and 'install_path = "install"' in systems.stdout
    assert (
        "= '" not in systems.stdout + workloads.stdout
        and "=None" not in workloads.stdout
        and "Args(" not in workloads.stdout
    )
    assert 'genai_perf = { name = "genai_perf", cmd = "genai-perf profile", args = {} }' in workloads.stdout


def test_log_level_warn_is_accepted(tmp_path: Path) -> None:
    result = cloudai("--log-level", "WARN", "list", "rewards")
    assert result.returncode == 0, result.stderr
    assert "identity" in result.stdout


def test_every_problem_of_a_scenario_at_once_each_once_at_its_cause(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    write("tests/broken.toml", 'name = "broken"\ntest_template_name = "Sleep"\n[cmd_args]\nsecondz = 1\n')
    scenario = (
        'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "broken"\n'
        '[[Tests]]\nid = "b"\ntest_name = "sleep"\nagent = "nope"\n[Tests.cmd_args]\nseconds = [0, 1]\n'
        '[[Tests]]\nid = "c"\ntest_name = "sleep"\ntime_limit = "soon"\n'
    )
    system = write("system.toml", 'name = "x"\nscheduler = "standalone"\nouput_path = "r"\n')
    args = scenario_args(tmp_path, write, scenario)
    result = cloudai("run", *args, "--system-config", system, "--output-dir", tmp_path / "out")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert any("broken.toml: cmd_args.secondz" in line for line in errors), result.stderr
    assert any("unknown agent 'nope'" in line for line in errors), result.stderr
    assert any("Tests[2].time_limit" in line for line in errors), result.stderr
    assert any("system.toml: ouput_path" in line for line in errors), result.stderr
    assert "unknown test" not in result.stderr
    assert len(errors) == len(set(errors)), "a problem was printed twice"
    assert not (tmp_path / "out").exists()


def test_verify_names_the_cause_of_a_test_that_failed_to_load(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    write("tests/bad.toml", 'name = "bad"\ntest_template_name = "Sleep"\n[env_params.seconds]\nweights = [1]\n')
    scenario = write("s.toml", 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "bad"\n')
    result = cloudai("verify-configs", scenario, "--tests-dir", tmp_path / "tests")
    assert result.returncode == 2
    assert "unknown test" not in result.stderr
    assert "bad.toml" in result.stderr and "env_params" in result.stderr, result.stderr


def test_resume_command_keeps_hook_dir_and_omits_a_missing_tests_dir(tmp_path: Path) -> None:
    from cloudai.run.dse import RunFiles, resume_command

    command = resume_command(RunFiles(None, None, tmp_path / "s.toml", tmp_path / "hooks"), tmp_path / "r")
    assert "--tests-dir" not in command and f"--hook-dir {tmp_path / 'hooks'}" in command


@pytest.mark.parametrize("command", ["run", "dry-run"])
def test_debug_log_and_log_file_hold_the_debug_log(
    tmp_path: Path, write: Callable[[str, str], Path], command: str
) -> None:
    write("tests/sleep.toml", METRIC_TEST)
    scenario = write("s.toml", ONE)
    log_file = tmp_path / "cloudai.log"
    args = ["--tests-dir", tmp_path / "tests", "--test-scenario", scenario, "--output-dir", tmp_path / "out"]
    result = cloudai(command, *args, "--log-file", log_file)
    assert result.returncode == 0, result.stderr
    (debug,) = (tmp_path / "out").glob("*/debug.log")
    for text in (debug.read_text(), log_file.read_text()):
        assert "DEBUG cloudai.plan: command: " in text and "a (test sleep, workload BashCmd): agent-driven" in text
        assert "DEBUG cloudai.jobs.spec: job a.0.1: " in text
        assert ("job a.0.2 ended ok" in text) == (command == "run")
        stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) cloudai")
        assert all(stamp.match(line) for line in text.splitlines() if line[:2] == "20"), "logging's time format"
    assert "DEBUG" not in result.stderr, "the console stays at WARNING"


@pytest.mark.parametrize(
    ("where", "text", "field"),
    [
        ("test", "[nsys]\nenable = true\n", "nsys"),
        ("test", 'custom_bash = "ulimit -n 4096"\n', "custom_bash"),
        ("entry", 'extra_srun_args = "--exclusive"\n', "Tests[0].extra_srun_args"),
        ("scenario", "[reports.per_test]\nenable = true\n", "reports"),
    ],
)
def test_cloudai_fields_we_do_not_support_say_so(
    tmp_path: Path, write: Callable[[str, str], Path], where: str, text: str, field: str
) -> None:
    test = SLEEP.replace("[cmd_args]", text + "[cmd_args]") if where == "test" else SLEEP
    write("tests/sleep.toml", test)
    scenario = {"entry": ONE + text, "scenario": ONE.replace('name = "s"\n', 'name = "s"\n' + text)}.get(where, ONE)
    args = ["--tests-dir", tmp_path / "tests", "--test-scenario", write("s.toml", scenario)]
    result = cloudai("dry-run", *args, "--output-dir", tmp_path / "out")
    assert result.returncode == 2
    assert f"{field}: CloudAI field not supported by cloudai (yet)" in result.stderr, result.stderr
    assert "did you mean" not in result.stderr and "Traceback" not in result.stderr


def test_a_mistyped_range_is_echoed_whole(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    write(
        "tests/syn.toml",
        'name = "syn"\ntest_template_name = "Synthetic"\n[cmd_args]\nnum_channel = { low = 1, high = 32 }\n',
    )
    result = cloudai("dry-run", "--tests-dir", tmp_path / "tests", "--test-scenario",
                     write("s.toml", ONE.replace("sleep", "syn")), "--output-dir", tmp_path / "out")  # fmt: skip
    assert result.returncode == 2
    assert "cmd_args.num_channel: unknown field (= {low = 1, high = 32})" in result.stderr, result.stderr
    assert "did you mean 'num_channels'?" in result.stderr
