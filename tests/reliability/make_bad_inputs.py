"""Regenerate tests/bad_inputs/ (the committed corpus): ``uv run python tests/reliability/make_bad_inputs.py``."""

import json
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "bad_inputs"
SLEEP = 'name = "sleep"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 0\n'
SYN = (
    'name = "syn"\ntest_template_name = "Synthetic"\n[cmd_args]\nalgo = ["ring", "tree"]\n'
    "message_size = 1048576\nduration_s = 0\n"
)
OK = 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n'
SYN_OK = 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "syn"\n'
RUN = ["run", "--tests-dir", "{case}/tests", "--test-scenario", "{case}/scenario.toml"]
CASES = []


def case(name, scenario=None, msg=(), tests=None, files=None, args=None, code=2, verify=None):
    CASES.append(
        dict(
            name=name,
            scenario=scenario,
            msg=list(msg),
            tests=tests if tests is not None else {"sleep.toml": SLEEP},
            files=files or {},
            args=args or RUN,
            code=code,
            verify=verify,
        )
    )


dep = lambda t, i: f'[[Tests.dependencies]]\ntype = "{t}"\nid = "{i}"\n'
# --- syntax / file level
case("toml_syntax_error", 'name = "s"\n[[Tests]\n', ["scenario.toml", "line 2"], verify=["scenario.toml"])
case(
    "not_utf8",
    None,
    ["scenario.toml", "UTF-8"],
    files={"scenario.toml": b'name = "\xff\xfe"\n'},
    verify=["scenario.toml"],
)
case("huge_file", None, ["scenario.toml", "larger than"], args=RUN, verify=None)
CASES[-1]["generate"] = {"scenario.toml": 10 * 1024 * 1024}
case(
    "deeply_nested",
    None,
    ["scenario.toml"],
    files={"scenario.toml": ('name = "s"\nx = ' + "[" * 5000 + "]" * 5000 + "\n").encode()},
    verify=["scenario.toml"],
)
case(
    "missing_scenario_file",
    None,
    ["nope.toml", "file not found"],
    args=["run", "--tests-dir", "{case}/tests", "--test-scenario", "{case}/nope.toml"],
)
case(
    "scenario_is_directory",
    None,
    ["sdir", "is a directory"],
    files={"sdir/keep.txt": b""},
    args=["run", "--tests-dir", "{case}/tests", "--test-scenario", "{case}/sdir"],
)
case(
    "tests_dir_is_file",
    OK,
    ["scenario.toml", "expected a directory"],
    args=["run", "--tests-dir", "{case}/scenario.toml", "--test-scenario", "{case}/scenario.toml"],
)
case(
    "tests_dir_missing",
    OK,
    ["nodir", "tests directory not found"],
    args=["run", "--tests-dir", "{case}/nodir", "--test-scenario", "{case}/scenario.toml"],
)
case("broken_symlink", None, ["scenario.toml", "file not found"], files={"scenario.toml": ("SYMLINK", "gone.toml")})
case(
    "output_dir_not_writable",
    OK,
    ["cannot create the results directory"],
    args=RUN + ["--output-dir", "/proc/cloudai-results"],
)
case("log_file_in_missing_dir", OK, ["log file"], args=RUN + ["--log-file", "{case}/no/such/dir/log.txt"])
# --- scenario structure
case(
    "unknown_scenario_field",
    OK + "iteratons = 2\n",
    ["scenario.toml", "Tests[0].iteratons", "did you mean 'iterations'"],
    verify=["scenario.toml"],
)
case("unknown_top_level_field", 'nme = "s"\n' + OK, ["scenario.toml", "nme"], verify=["scenario.toml"])
case("wrong_type", OK + 'iterations = "many"\n', ["Tests[0].iterations"], verify=["scenario.toml"])
case("zero_iterations", OK + "iterations = 0\n", ["Tests[0].iterations"], verify=["scenario.toml"])
case(
    "scenario_without_name",
    '[[Tests]]\nid = "a"\ntest_name = "sleep"\n',
    ["scenario.toml", "name"],
    verify=["scenario.toml"],
)
case("empty_scenario", 'name = "s"\nTests = []\n', ["scenario.toml", "Tests"], verify=["scenario.toml"])
case(
    "missing_test",
    'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "slep"\n',
    ["Tests[0].test_name", "did you mean 'sleep'"],
    verify=["scenario.toml"],
)
case("entry_without_test", 'name = "s"\n[[Tests]]\nid = "a"\n', ["Tests[0].test_name"], verify=["scenario.toml"])
case(
    "unknown_dependency_id",
    OK + dep("start_post_comp", "b"),
    ["Tests[0].dependencies[0].id", "unknown test id 'b'"],
    verify=["scenario.toml"],
)
case("bad_dependency_type", OK + dep("after", "a"), ["Tests[0].dependencies[0].type"], verify=["scenario.toml"])
case("self_dependency", OK + dep("start_post_comp", "a"), ["depends on itself"], verify=["scenario.toml"])
case(
    "dependency_cycle",
    'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n'
    + dep("start_post_comp", "b")
    + '[[Tests]]\nid = "b"\ntest_name = "sleep"\n'
    + dep("end_post_comp", "a"),
    ["dependency cycle", "a -> b -> a"],
    verify=["scenario.toml"],
)
case(
    "duplicate_id",
    OK + '[[Tests]]\nid = "a"\ntest_name = "sleep"\n',
    ["Tests[1].id", "duplicate id 'a'"],
    verify=["scenario.toml"],
)
case(
    "id_path_traversal",
    'name = "s"\n[[Tests]]\nid = "../../etc"\ntest_name = "sleep"\n',
    ["Tests[0].id", "not allowed"],
    verify=["scenario.toml"],
)
case(
    "id_with_slash",
    'name = "s"\n[[Tests]]\nid = "a/b"\ntest_name = "sleep"\n',
    ["Tests[0].id", "not allowed"],
    verify=["scenario.toml"],
)
case(
    "bad_time_limit", OK + 'time_limit = "ten minutes"\n', ["Tests[0].time_limit", "HH:MM:SS"], verify=["scenario.toml"]
)
case("zero_time_limit", OK + 'time_limit = "00:00:00"\n', ["Tests[0].time_limit"], verify=["scenario.toml"])
case("empty_num_nodes_list", OK + "num_nodes = []\n", ["Tests[0].num_nodes"], verify=["scenario.toml"])
# --- tests and workloads
case(
    "unknown_workload",
    'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "x"\n',
    ["x.toml", "test_template_name", "did you mean 'Sleep'"],
    tests={"x.toml": 'name = "x"\ntest_template_name = "Slep"\n'},
    verify=["tests/x.toml"],
)
case("duplicate_test_names", OK, ["again.toml", "also used by"], tests={"sleep.toml": SLEEP, "again.toml": SLEEP})
case(
    "test_unknown_field",
    OK,
    ["sleep.toml", "descripton", "did you mean 'description'"],
    tests={"sleep.toml": SLEEP.replace("[cmd_args]", 'descripton = "x"\n[cmd_args]')},
    verify=["tests/sleep.toml"],
)
case("test_missing_template", OK, ["sleep.toml", "test_template_name"], tests={"sleep.toml": 'name = "sleep"\n'})
case(
    "unknown_cmd_arg",
    OK + "[Tests.cmd_args]\nsecnds = 1\n",
    ["Tests[0].cmd_args.secnds", "did you mean 'seconds'"],
    verify=["scenario.toml"],
)
case("negative_sleep", OK + "[Tests.cmd_args]\nseconds = -1\n", ["Tests[0].cmd_args.seconds"], verify=["scenario.toml"])
case(
    "shell_in_sleep_seconds",
    OK + '[Tests.cmd_args]\nseconds = "1; touch pwned"\n',
    ["Tests[0].cmd_args.seconds"],
    verify=["scenario.toml"],
)
case(
    "empty_list",
    OK + "[Tests.cmd_args]\nseconds = []\n",
    ["Tests[0].cmd_args.seconds", "empty list"],
    verify=["scenario.toml"],
)
case(
    "range_low_ge_high",
    OK + "[Tests.cmd_args]\nseconds = { low = 2, high = 1 }\n",
    ["Tests[0].cmd_args.seconds", "less than high"],
    verify=["scenario.toml"],
)
case(
    "range_unknown_key",
    OK + "[Tests.cmd_args]\nseconds = { low = 1, high = 2, lg = true }\n",
    ["Tests[0].cmd_args.seconds", "lg"],
    verify=["scenario.toml"],
)
case(
    "log_range_nonpositive",
    OK + "[Tests.cmd_args]\nseconds = { low = 0, high = 2, log = true }\n",
    ["Tests[0].cmd_args.seconds", "low > 0"],
    verify=["scenario.toml"],
)
case(
    "bash_cmd_empty",
    'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "b"\n',
    ["Tests[0].cmd_args.cmd"],
    tests={"b.toml": 'name = "b"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = ""\n'},
    verify=["scenario.toml"],
)
# --- systems
case(
    "unknown_scheduler",
    OK,
    ["system.toml", "scheduler", "unknown scheduler 'pbs'"],
    files={"system.toml": b'name = "x"\nscheduler = "pbs"\n'},
    args=RUN + ["--system-config", "{case}/system.toml"],
    verify=["system.toml"],
)
case(
    "system_unknown_field",
    OK,
    ["system.toml", "output_pth", "did you mean 'output_path'"],
    files={"system.toml": b'name = "x"\nscheduler = "standalone"\noutput_pth = "x"\n'},
    args=RUN + ["--system-config", "{case}/system.toml"],
    verify=["system.toml"],
)
case(
    "system_without_scheduler",
    OK,
    ["system.toml", "scheduler"],
    files={"system.toml": b'name = "x"\n'},
    args=RUN + ["--system-config", "{case}/system.toml"],
)
case(
    "system_bad_concurrency",
    OK,
    ["system.toml", "max_concurrent_jobs"],
    files={"system.toml": b'name = "x"\nscheduler = "standalone"\nmax_concurrent_jobs = 0\n'},
    args=RUN + ["--system-config", "{case}/system.toml"],
    verify=["system.toml"],
)
# --- CLI flags
case("missing_required_flag", OK, ["--tests-dir"], args=["run", "--test-scenario", "{case}/scenario.toml"])
case("unknown_flag", OK, ["--frobnicate"], args=RUN + ["--frobnicate"])
case("unknown_command", None, ["No such command"], args=["rn"])

shutil.rmtree(ROOT, ignore_errors=True)
for i, c in enumerate(CASES, 1):
    d = ROOT / f"{i:02d}_{c['name']}"
    (d / "tests").mkdir(parents=True)
    for n, t in c["tests"].items():
        (d / "tests" / n).write_text(t)
    if c["scenario"] is not None:
        (d / "scenario.toml").write_text(c["scenario"])
    for n, content in c["files"].items():
        p = d / n
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, tuple):
            os.symlink(content[1], p)
        else:
            p.write_bytes(content)
    spec = {"args": c["args"], "exit_code": c["code"], "message": c["msg"]}
    if c.get("generate"):
        spec["generate"] = c["generate"]
    if c["verify"]:
        spec["in_verify"] = c["verify"]
    (d / "case.json").write_text(json.dumps(spec, indent=1) + "\n")
print(len(CASES), "cases")
