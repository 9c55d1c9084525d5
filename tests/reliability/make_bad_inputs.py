"""Regenerate the numbered cases of tests/bad_inputs/ (the committed corpus; ``hand_*`` cases are written by hand):
``uv run python tests/reliability/make_bad_inputs.py``."""

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
# a value the entry took from its test file is reported there, naming the entry that used it (issue 15 #8)
IN_TEST = "used by Tests[0] (id 'a')"
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
    [IN_TEST, "toml: cmd_args.cmd"],
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


# --- DSE and env_params (each case's test has its own name, so verify-configs on the whole
# corpus checks every scenario against its own test)
def dse(name, msg, args="", top="", tail="", scenario="", verify=("scenario.toml",), tmpl="Synthetic", extra=None):
    test = (
        f'name = "{name}"\ntest_template_name = "{tmpl}"\n{top}[cmd_args]\n'
        + ('algo = ["ring", "tree"]\nmessage_size = 1048576\nduration_s = 0\n' if tmpl == "Synthetic" else "")
        + args
        + tail
    )
    sc = f'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "{name}"\n' + scenario
    case(name, sc, msg, tests={f"{name}.toml": test}, verify=list(verify), args=extra)


RS = 'agent = "random_search"\n'
dse(
    "env_params_unknown_field",
    ["env_params_unknown_field.toml", "env_params.jitter.weigths", "did you mean 'weights'"],
    "jitter = [0.0, 0.1]\n",
    RS,
    "[env_params.jitter]\nweigths = [1, 1]\n",
    verify=["tests/env_params_unknown_field.toml"],
)
dse(
    "env_params_on_scalar",
    ["scenario.toml", IN_TEST, "toml: cmd_args.jitter", "scalar"],
    "jitter = 0.1\n",
    RS,
    "[env_params.jitter]\n",
)
dse(
    "env_params_unknown_cmd_arg",
    [IN_TEST, "toml: env_params.jiter", "did you mean 'jitter'"],
    "jitter = [0.0, 0.1]\n",
    RS,
    "[env_params.jiter]\n",
)
dse(
    "env_params_weights_length",
    [IN_TEST, "toml: env_params.jitter.weights", "2 weight(s) for 3 candidate(s)"],
    "jitter = [0.0, 0.1, 0.3]\n",
    RS,
    "[env_params.jitter]\nweights = [0.5, 0.5]\n",
)
dse(
    "env_params_weights_negative",
    ["env_params_weights_negative.toml", "env_params.jitter.weights", "not negative"],
    "jitter = [0.0, 0.1]\n",
    RS,
    "[env_params.jitter]\nweights = [1.0, -1.0]\n",
    verify=["tests/env_params_weights_negative.toml"],
)
dse(
    "env_params_weights_all_zero",
    ["env_params_weights_all_zero.toml", "env_params.jitter.weights", "all be zero"],
    "jitter = [0.0, 0.1]\n",
    RS,
    "[env_params.jitter]\nweights = [0, 0]\n",
    verify=["tests/env_params_weights_all_zero.toml"],
)
dse(
    "env_params_distribution_on_list",
    [IN_TEST, "toml: env_params.jitter.distribution", "applies to a range"],
    "jitter = [0.0, 0.1]\n",
    RS,
    '[env_params.jitter]\ndistribution = "uniform"\n',
)
dse(
    "env_params_weights_on_range",
    [IN_TEST, "toml: env_params.jitter.weights", "is a range"],
    "jitter = { low = 0.0, high = 0.3 }\n",
    RS + "agent_steps = 4\n",
    "[env_params.jitter]\nweights = [1, 2]\n",
)
dse(
    "env_params_normal_without_std",
    ["env_params_normal_without_std.toml", "env_params.jitter", "needs both mean and std"],
    "jitter = { low = 0.0, high = 0.3 }\n",
    RS + "agent_steps = 4\n",
    '[env_params.jitter]\ndistribution = "normal"\nmean = 0.1\n',
    verify=["tests/env_params_normal_without_std.toml"],
)
dse(
    "env_params_normal_mean_outside",
    [IN_TEST, "toml: env_params.jitter.mean", "outside"],
    "jitter = { low = 0.0, high = 0.3 }\n",
    RS + "agent_steps = 4\n",
    '[env_params.jitter]\ndistribution = "normal"\nmean = 2.0\nstd = 0.1\n',
)
dse(
    "env_params_with_grid_search",
    [IN_TEST, "toml: env_params", "does not sample env_params"],
    "jitter = [0.0, 0.1]\n",
    'agent = "grid_search"\n',
    "[env_params.jitter]\n",
)
dse(
    "env_params_table_also_swept",
    [IN_TEST, "toml: env_params.nccl", "swept by the agent: nccl.algo"],
    'cmd = "true"\n',
    RS,
    '[cmd_args.nccl]\nalgo = ["ring", "tree"]\n[env_params.nccl]\n',
    tmpl="BashCmd",
)
dse(
    "env_params_on_num_nodes",
    [IN_TEST, "toml: env_params.num_nodes", "cmd_args only"],
    "",
    RS,
    "[env_params.num_nodes]\n",
    scenario="num_nodes = [1, 2]\n",
)
dse("dse_unknown_agent", [IN_TEST, "toml: agent", "did you mean 'optuna'"], top='agent = "optuan"\n')
dse(
    "dse_unknown_reward",
    [IN_TEST, "toml: agent_reward_function", "did you mean 'inverse'"],
    top='agent_reward_function = "invers"\n',
)
dse(
    "dse_unknown_metric",
    [IN_TEST, "toml: agent_metrics", "unknown metric 'bus_bandwidth'"],
    top='agent_metrics = ["bus_bandwidth"]\n',
)
dse("dse_duplicate_metric", [IN_TEST, "toml: agent_metrics", "twice"], top='agent_metrics = ["bus_bw", "bus_bw"]\n')
dse(
    "dse_range_without_grid_points",
    [IN_TEST, "toml: cmd_args.num_channels", "without grid_points"],
    'num_channels = { low = 1, high = 8, dtype = "int" }\n',
    'agent = "grid_search"\n',
)
dse(
    "dse_range_without_steps",
    [IN_TEST, "toml: agent_steps", "needs agent_steps"],
    'num_channels = { low = 1, high = 8, dtype = "int" }\n',
    RS,
)
dse(
    "dse_agent_config_unknown_key",
    [IN_TEST, "toml: agent_config.max_paralel"],
    top="agent_config = { max_paralel = 2 }\n",
)
dse("dse_agent_config_wrong_type", [IN_TEST, "toml: agent_config.seed"], top='agent_config = { seed = "seven" }\n')
dse(
    "dse_agent_config_bad_value",
    [IN_TEST, "toml: agent_config.max_parallel"],
    top="agent_config = { max_parallel = 0 }\n",
)
dse(
    "dse_zero_agent_steps",
    ["dse_zero_agent_steps.toml", "agent_steps"],
    top="agent_steps = 0\n",
    verify=["tests/dse_zero_agent_steps.toml"],
)
# --- live RL (the environment class is checked at load time, without constructing it)
LIVE = 'agent = "random_search"\nagent_steps = 3\nagent_metrics = ["throughput"]\nagent_reward_function = "identity"\n'
live = lambda cls: f"live_rl_mode = true\nenv_class = {cls!r}\n".replace("'", '"')
dse(
    "live_bare_class_name",
    [IN_TEST, "toml: cmd_args.env_class", "not a dotted path"],
    live("ServingSim"),
    LIVE,
    tmpl="Sleep",
)
dse(
    "live_missing_module",
    [IN_TEST, "toml: cmd_args.env_class", "no module 'no_such_pkg"],
    live("no_such_pkg.sim.Env"),
    LIVE,
    tmpl="Sleep",
)
dse(
    "live_missing_class",
    [IN_TEST, "toml: cmd_args.env_class", "no class 'ServingSimm'", "did you mean 'ServingSim'"],
    live("cloudai.gym.examples.ServingSimm"),
    LIVE,
    tmpl="Sleep",
)
dse(
    "live_not_a_gym_server",
    [IN_TEST, "toml: cmd_args.env_class", "does not implement GymServer"],
    live("collections.OrderedDict"),
    LIVE,
    tmpl="Sleep",
)
dse(
    "live_class_and_url",
    [IN_TEST, "toml: cmd_args.env_url", "not both"],
    live("cloudai.gym.examples.ServingSim") + 'env_url = "http://127.0.0.1:9"\n',
    LIVE,
    tmpl="Sleep",
)
dse(
    "live_without_agent_steps",
    [IN_TEST, "toml: agent_steps", "live RL needs agent_steps"],
    live("cloudai.gym.examples.ServingSim"),
    LIVE.replace("agent_steps = 3\n", ""),
    tmpl="Sleep",
)
dse(
    "live_with_single_sbatch",
    ["Tests[0].cmd_args.live_rl_mode", "--single-sbatch"],
    live("cloudai.gym.examples.ServingSim"),
    LIVE,
    tmpl="Sleep",
    verify=(),
    extra=RUN + ["--single-sbatch"],
)
case(
    "live_mixed_with_plain",
    'name = "s"\n[[Tests]]\nid = "live"\ntest_name = "sim"\n[[Tests]]\nid = "plain"\ntest_name = "sleep"\n',
    ["agent-driven tests (live)", "plain tests (plain)"],
    tests={
        "sleep.toml": SLEEP,
        "sim.toml": 'name = "sim"\ntest_template_name = "Sleep"\n'
        + LIVE
        + "[cmd_args]\n"
        + live("cloudai.gym.examples.ServingSim"),
    },
)
# --- Slurm systems
SLURM = 'name = "c"\nscheduler = "slurm"\ndefault_partition = "debug"\n'
PART = '[[partitions]]\nname = "debug"\n'
for name, text, msg in [
    (
        "slurm_unknown_default_partition",
        SLURM.replace('"debug"', '"debgu"') + PART,
        ["default_partition", "not a declared partition", "did you mean 'debug'"],
    ),
    ("slurm_unknown_field", SLURM + "gpus_per_nod = 8\n" + PART, ["gpus_per_nod", "did you mean 'gpus_per_node'"]),
    ("slurm_no_partitions", SLURM + "partitions = []\n", ["partitions"]),
    ("slurm_partition_unknown_field", SLURM + PART + 'nodez = ["n1"]\n', ["partitions[0].nodez"]),
    ("slurm_partition_without_name", SLURM + '[[partitions]]\nnodes = ["n1"]\n', ["partitions[0].name"]),
    ("slurm_wrong_type", SLURM + 'gpus_per_node = "eight"\n' + PART, ["gpus_per_node"]),
    ("slurm_negative_poll", SLURM + "poll_interval_s = -1\n" + PART, ["poll_interval_s"]),
]:
    case(
        name,
        OK,
        ["system.toml", *msg],
        files={"system.toml": text.encode()},
        args=RUN + ["--system-config", "{case}/system.toml"],
        verify=["system.toml"],
    )
# --- --resume on a dir that is not this scenario's (it must not change)
RUN_JSON = '{"scenario": "other", "scenario_file": "/x/other.toml", "entries": [{"id": "b"}]}'
TRAJ = "step,episode,action,reward,observation,status,elapsed_s\n1,1,{},1.0,[1.0],ok,0.1\n"
for name, sc, files, msg in [
    (
        "resume_other_dse_scenario",
        'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "syn"\n',
        {"resume/run.json": RUN_JSON, "resume/b/0/trajectory.csv": TRAJ},
        ["run.json", "scenario 'other'"],
    ),
    (
        "resume_other_plain_scenario",
        OK,
        {"resume/run.json": RUN_JSON, "resume/b/0/job.json": "{}"},
        ["run.json", "scenario 'other'"],
    ),
    (
        "resume_not_a_results_dir",
        'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "syn"\n',
        {"resume/notes.txt": "mine"},
        ["resume", "no run.json"],
    ),
    (
        "resume_damaged_run_json",
        'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "syn"\n',
        {"resume/run.json": "{not json"},
        ["run.json", "unreadable"],
    ),
]:
    case(
        name,
        sc,
        msg,
        tests={"sleep.toml": SLEEP, "syn.toml": SYN},
        files={k: v.encode() for k, v in files.items()},
        args=RUN + ["--resume", "{resume}"],
    )
# --- names that would escape the results dir
case(
    "scenario_name_traversal",
    'name = "../../escape"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n',
    ["scenario.toml", "name", "not allowed"],
    verify=["scenario.toml"],
)
case(
    "scenario_name_with_slash",
    'name = "a/b"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n',
    ["scenario.toml", "name", "not allowed"],
    verify=["scenario.toml"],
)
# --- files that exist but cannot be read (run without CAP_DAC_OVERRIDE when root: see the test)
case("unreadable_scenario", OK, ["scenario.toml", "not readable"])
CASES[-1]["unreadable"] = ["scenario.toml"]
case("unreadable_test", OK, ["sleep.toml", "Permission denied"])
CASES[-1]["unreadable"] = ["tests/sleep.toml"]
case(
    "unreadable_system",
    OK,
    ["system.toml", "not readable"],
    files={"system.toml": b'name = "x"\nscheduler = "standalone"\n'},
    args=RUN + ["--system-config", "{case}/system.toml"],
)
CASES[-1]["unreadable"] = ["system.toml"]
case(
    "output_dir_is_file",
    OK,
    ["cannot create the results directory"],
    files={"taken": b"a file"},
    args=RUN + ["--output-dir", "{case}/taken"],
)
# --- cluster workloads (NcclTest, UCCTest, OSUBench): their cmd_args are checked before anything runs
NCCL = 'name = "nccl"\ntest_template_name = "NcclTest"\n[cmd_args]\n'
NCCL_OK = 'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "nccl"\n'
case(
    "nccl_unknown_subtest_name",
    NCCL_OK,
    [IN_TEST, "toml: cmd_args.subtest_name", '"all_reduce_perf_mpi"'],
    tests={"nccl.toml": NCCL + 'subtest_name = "all_reduce_perf_mpii"\n'},
    verify=["scenario.toml"],
)
case(
    "osu_missing_benchmark",
    NCCL_OK.replace('"nccl"', '"osu"'),
    [IN_TEST, "toml: cmd_args.benchmark", "required field is missing"],
    tests={
        "osu.toml": 'name = "osu"\ntest_template_name = "OSUBench"\n[cmd_args]\ndocker_image_url = ""\n'
        'benchmarks_dir = "/opt/osu"\n'
    },
    verify=["scenario.toml"],
)
case(
    "slurm_unknown_container_runtime",
    OK,
    ["system.toml", "container_runtime"],
    files={"system.toml": (SLURM + 'container_runtime = "enroot"\n' + PART).encode()},
    args=RUN + ["--system-config", "{case}/system.toml"],
    verify=["system.toml"],
)

# --- issue 17: values that used to crash, pass silently or inject (each echoes the value it refuses)
SYS = RUN + ["--system-config", "{case}/system.toml"]
dse(  # the toml package reads nan/inf in tables, not inline tables
    "dse_range_nan",
    [IN_TEST, "toml: cmd_args.jitter", "nan"],
    top=RS + "agent_steps = 2\n",
    tail="[cmd_args.jitter]\nlow = 0.0\nhigh = nan\n",
)
dse(
    "dse_range_inf",
    [IN_TEST, "toml: cmd_args.jitter", "-inf"],
    "jitter = { low = -inf, high = 1.0 }\n",
    RS + "agent_steps = 2\n",
)
dse(
    "dse_negative_seed",
    ["dse_negative_seed.toml", "seed", "-1"],
    top=RS + "seed = -1\n",
    verify=["tests/dse_negative_seed.toml"],
)
dse(
    "dse_optuna_negative_seed",
    [IN_TEST, "toml: agent_config.seed", "-5"],
    top='agent = "optuna"\nagent_config = { seed = -5 }\n',
)
dse(
    "dse_seed_too_big",
    [IN_TEST, "toml: agent_config.seed", "4294967296"],
    top=RS + "agent_config = { seed = 4294967296 }\n",
)
dse(
    "dse_penalty_nan",
    [IN_TEST, "toml: agent_config.penalty_reward", "nan"],
    top=RS + "[agent_config]\npenalty_reward = nan\n",
)
dse(
    "dse_agent_steps_bool",
    ["dse_agent_steps_bool.toml", "agent_steps", "true is not an integer"],
    top=RS + "agent_steps = true\n",
    verify=["tests/dse_agent_steps_bool.toml"],
)
dse(
    "dse_int_range_without_integer",
    [IN_TEST, "toml: cmd_args.num_channels", "holds no integer", "0.2"],
    'num_channels = { low = 0.2, high = 0.8, dtype = "int" }\n',
    RS + "agent_steps = 2\n",
)
dse(
    "dse_agent_on_sleep",
    [IN_TEST, "toml: cmd_args.seconds", "seconds = [0, 1] makes this a search", "'Sleep' reports no metrics"],
    "seconds = [0, 1]\n",
    RS,
    tmpl="Sleep",
)
case(
    "env_params_on_plain_test",
    OK.replace('"sleep"', '"plainenv"'),
    ["plainenv.toml", "env_params.seconds needs candidates", "scalar 0"],
    tests={"plainenv.toml": SLEEP.replace('"sleep"', '"plainenv"') + "[env_params.seconds]\n"},
    verify=["scenario.toml"],
)
for name, key, shown in [
    ("env_name_with_equals", '"A=B"', "'A=B'"),
    ("env_name_with_semicolon", '"X;touch TMP/p;Y"', "'X;touch TMP/p;Y'"),
    ("env_name_empty", '""', "''"),
    ("env_name_with_newline", '"A\\nB"', "'A\\nB'"),
]:
    case(
        name,
        OK + f'[Tests.extra_env_vars]\n{key} = "v"\n',
        ["scenario.toml", "Tests[0].extra_env_vars", shown, "not allowed"],
        verify=["scenario.toml"],
    )
case(
    "env_value_nul",
    OK + '[Tests.extra_env_vars]\nX = "a\\u0000b"\n',
    ["Tests[0].extra_env_vars", "NUL", "'a\\x00b'"],
    verify=["scenario.toml"],
)
case(
    "env_range_on_extra_env_vars",
    OK + "[Tests.extra_env_vars]\nX = { low = 1, high = 2 }\n",
    ["Tests[0].extra_env_vars", "is a table", "'low': 1"],
    verify=["scenario.toml"],
)
case(
    "cmd_arg_nul",
    'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "b"\n',
    ["b.toml", "cmd_args", "NUL", "'echo \\x00'"],
    tests={"b.toml": 'name = "b"\ntest_template_name = "BashCmd"\n[cmd_args]\ncmd = "echo \\u0000"\n'},
    verify=["tests/b.toml"],
)
case(
    "time_limit_huge",
    OK + 'time_limit = "99999999999999999999"\n',
    ["Tests[0].time_limit", "longer than a year", "99999999999999999999"],
    verify=["scenario.toml"],
)
case(
    "time_limit_four_fields",
    OK + 'time_limit = "1:00:99:99"\n',
    ["Tests[0].time_limit", "'1:00:99:99'", "is not a time limit"],
    verify=["scenario.toml"],
)
case("num_nodes_zero", OK + "num_nodes = 0\n", ["Tests[0].num_nodes", "given 0"], verify=["scenario.toml"])
case(
    "num_nodes_negative_in_list",
    OK + "num_nodes = [1, -2]\n",
    ["Tests[0].num_nodes[1]", "given -2"],
    verify=["scenario.toml"],
)
case(
    "iterations_bool",
    OK + "iterations = true\n",
    ["Tests[0].iterations", "true is not an integer"],
    verify=["scenario.toml"],
)
case(
    "scenario_name_with_newline",
    'name = "s\\n"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n',
    ["scenario.toml", "name", "'s\\n'", "not allowed"],
    verify=["scenario.toml"],
)
case(
    "id_with_newline",
    'name = "s"\n[[Tests]]\nid = "a\\n#SBATCH --output=/tmp/x"\ntest_name = "sleep"\n',
    ["scenario.toml", "Tests[0].id", "'a\\n#SBATCH --output=/tmp/x'", "not allowed"],
    verify=["scenario.toml"],
)
case(
    "test_toml_is_dev_zero",
    OK,
    ["sleep.toml", "not a regular file", "character device"],
    tests={},
    files={"tests/sleep.toml": ("SYMLINK", "/dev/zero")},
)
case(
    "scenario_is_dev_urandom",
    None,
    ["scenario.toml", "not a regular file", "character device"],
    files={"scenario.toml": ("SYMLINK", "/dev/urandom")},
)
case(
    "system_env_name_with_semicolon",
    OK,
    ["system.toml", "global_env_vars", "'A;B'"],
    files={"system.toml": b'name = "x"\nscheduler = "standalone"\n[global_env_vars]\n"A;B" = "1"\n'},
    args=SYS,
    verify=["system.toml"],
)
for name, text, msg in [
    (
        "slurm_account_with_newline",
        SLURM + 'account = "acct\\n#SBATCH --output=/tmp/x"\n' + PART,
        ["account", "'acct\\n#SBATCH --output=/tmp/x'", "not allowed"],
    ),
    (
        "slurm_sbatch_arg_with_newline",
        SLURM + 'extra_sbatch_args = ["--mem=1G\\ntouch /tmp/x"]\n' + PART,
        ["extra_sbatch_args[0]", "'--mem=1G\\ntouch /tmp/x'", "not allowed"],
    ),
    ("slurm_env_name_with_space", SLURM + '[global_env_vars]\n"A B" = "1"\n' + PART, ["global_env_vars", "'A B'"]),
]:
    case(name, OK, ["system.toml", *msg], files={"system.toml": text.encode()}, args=SYS, verify=["system.toml"])
dse(
    "live_token_var_with_newline",
    [IN_TEST, "toml: cmd_args.env_token_var", "'TOK\\n'", "not an environment variable name"],
    'live_rl_mode = true\nenv_url = "http://127.0.0.1:9"\nenv_token_var = "TOK\\n"\n',
    LIVE,
    tmpl="Sleep",
)
case(
    "output_dir_with_newline",
    OK,
    ["output directory", "holds a newline"],
    args=RUN + ["--output-dir", "{case}/out\nx"],
)

case(
    "system_unknown_job_containment",
    OK,
    ["system.toml", "job_containment", '"none"'],
    files={"system.toml": b'name = "x"\nscheduler = "standalone"\njob_containment = "none"\n'},
    args=SYS,
    verify=["system.toml"],
)

# --- issue 15 (i15b): the file that is wrong is named; env_params on a plain scalar, empty table or not
case(
    "test_file_cmd_arg_typo",
    OK,
    ["sleep.toml: cmd_args.secnds", "did you mean 'seconds'", IN_TEST],
    tests={"sleep.toml": SLEEP.replace("seconds", "secnds")},
)
case(
    "env_params_empty_table_on_plain_scalar",
    OK,
    ["sleep.toml: cmd_args.seconds", "is the scalar 0", IN_TEST],
    tests={"sleep.toml": SLEEP + "[env_params.seconds]\n"},
)
case(
    "env_params_table_on_plain_scalar",
    OK,
    ["sleep.toml: cmd_args.seconds", "is the scalar 0", IN_TEST],
    tests={"sleep.toml": SLEEP + "[env_params.seconds]\nweights = [1.0]\n"},
)

# --- issue 15 (i15b): pydantic's messages in a user's words: the value, the accepted forms, a did-you-mean
case(
    "cmd_arg_min_max_table",
    OK,
    [
        "sleep.toml: cmd_args.seconds",
        "{{min = 1, max = 4}} is not a number",  # braces doubled: fragments go through str.format
        "did you mean the range {{low = 1, high = 4}}",
    ],
    tests={"sleep.toml": SLEEP.replace("seconds = 0", "seconds = { min = 1, max = 4 }")},
)
case(
    "dependency_type_echoed",
    OK + '[[Tests]]\nid = "b"\ntest_name = "sleep"\n' + dep("after_lunch", "a"),
    ["Tests[1].dependencies[0].type", '"after_lunch" is not one of "start_post_init", "start_post_comp"'],
    verify=["scenario.toml"],
)
case(
    "union_field_one_message",
    OK + "time_limit = [1]\n",
    ["Tests[0].time_limit: [1] is not a string or an integer"],
    verify=["scenario.toml"],
)
case(
    "swapped_tests_dir_and_scenario",
    OK,
    ["--tests-dir: is a file", "did you swap them?", "--test-scenario {case}/scenario.toml"],
    args=["run", "--tests-dir", "{case}/scenario.toml", "--test-scenario", "{case}/tests"],
)

# --- issue 15: an edited test refuses --resume; enqueue points and --warm-start dirs are checked
OLD_FP = {"agent": "grid_search", "agent_config": {}, "agent_metrics": ["default"], "agent_reward_function": "inverse",
          "cmd_args.algo": ["ring", "tree"], "cmd_args.duration_s": 0, "cmd_args.message_size": 4096,
          "env_params": {}, "extra_cmd_args": {}, "extra_env_vars": {}, "num_nodes": 1, "seed": None,
          "system.scheduler": "standalone", "test_template_name": "Synthetic", "time_limit_s": None}  # fmt: skip
EDITED_RUN_JSON = json.dumps({"scenario": "s", "entries": [{"id": "a"}], "fingerprints": {"a": OLD_FP}})
case(
    "resume_after_test_edit",
    SYN_OK,
    ["run.json", "--resume", "cmd_args.message_size: 4096 -> 1048576", "undo the edit", "--warm-start"],
    tests={"syn.toml": SYN},
    files={"resume/run.json": EDITED_RUN_JSON.encode(), "resume/a/0/trajectory.csv": TRAJ.encode()},
    args=RUN + ["--resume", "{resume}"],
)
for name, enqueue, msg in [
    ("enqueue_value_not_in_list", '{ algo = "mesh" }', ["Tests[0].agent_config.enqueue[0]", "'mesh'", "'ring'"]),
    ("enqueue_unknown_knob", '{ algo = "ring", algoo = 1 }', ["Tests[0].agent_config.enqueue[0]", "algoo"]),
]:
    case(
        name,
        'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "syn"\nagent_config = { enqueue = [' + enqueue + "] }\n",
        ["scenario.toml", *msg],
        tests={"syn.toml": SYN},
        verify=["scenario.toml"],
    )
case(
    "warm_start_not_a_results_dir",
    SYN_OK,
    ["--warm-start", "no run.json"],
    tests={"syn.toml": SYN},
    files={"earlier/notes.txt": b"mine"},
    args=RUN + ["--warm-start", "{case}/earlier"],
)
case(
    "warm_start_other_test",
    SYN_OK,
    ["--warm-start", "no trajectory.csv", "['a']"],
    tests={"syn.toml": SYN},
    files={"earlier/run.json": RUN_JSON.encode(), "earlier/b/0/trajectory.csv": TRAJ.encode()},
    args=RUN + ["--warm-start", "{case}/earlier"],
)

dse(
    "dse_confirm_negative",
    [IN_TEST, "toml: agent_config.confirm", "greater than or equal to 0", "given -1"],
    top="agent_config = { confirm = -1 }\n",
)
dse(
    "live_enqueue_bad_value",
    ["Tests[0].agent_config.enqueue[0]", "max_batch_size = 7 is not one of"],
    live("cloudai.gym.examples.ServingSim"),
    LIVE + "agent_config = { enqueue = [{ max_batch_size = 7, max_num_seqs = 32, kv_cache_fraction = 0.8 }] }\n",
    tmpl="Sleep",
    verify=(),
)

# --- issue 29 item 10: inputs that ended in an internal error after the results dir was written
case(
    "extra_cmd_args_unbalanced_quote",
    OK,
    ["sleep.toml", "extra_cmd_args", "cannot be split into words", "No closing quotation", '"--x \'oops"'],
    tests={"sleep.toml": SLEEP.replace("[cmd_args]", 'extra_cmd_args = "--x \'oops"\n[cmd_args]')},
    verify=["tests/sleep.toml"],
)
case(
    "range_span_overflows",
    SYN_OK,
    ["syn.toml", "cmd_args.x", "overflows a float", "narrow the range"],
    tests={
        "syn.toml": SYN.replace("duration_s = 0\n", "duration_s = 0\nx = { low = -1e308, high = 1e308 }\n").replace(
            "[cmd_args]", 'agent = "random_search"\nagent_steps = 2\n[cmd_args]'
        )
    },
    verify=["tests/syn.toml"],
)

# --- issue 29 item 11: quietly converted or contradictory, now refused
OPT = 'agent = "optuna"\nagent_metrics = ["bus_bw"]\n'
dse(
    "dse_strict_bool",
    [IN_TEST, "toml: agent_config.multivariate", '"yes"'],
    top=OPT + 'agent_config = { multivariate = "yes" }\n',
)
dse(
    "dse_strict_float",
    [IN_TEST, "toml: agent_config.penalty_reward", '"-5"'],
    top=OPT + 'agent_config = { penalty_reward = "-5" }\n',
)
dse(
    "dse_min_objective_maximised",
    [IN_TEST, "agent_reward_function", "'identity' rewards a higher latency_us", 'latency_us = "min"'],
    top='agent = "optuna"\nagent_objectives = { latency_us = "min" }\nagent_reward_function = "identity"\n',
)
dse(
    "dse_infinite_constraint",
    ["dse_infinite_constraint.toml: agent_constraints", "1e999", "finite"],
    top=OPT + 'agent_constraints = { latency_us = "<= 1e999" }\n',
    verify=["tests/dse_infinite_constraint.toml"],
)

# --- issue 29 item 6: container mounts, images and paths that would smuggle in or break a mount
for name, mount in [
    ("mount_with_comma", "/scratch:/scratch,/:/host"),
    ("mount_relative", "data:/data"),
    ("mount_empty", ""),
    ("mount_multiline", "/a:/a\n/b:/b"),
    ("mount_four_fields", "/a:/a:ro:extra"),
]:
    case(
        name,
        OK + f"extra_container_mounts = [{json.dumps(mount)}]\n",
        ["Tests[0].extra_container_mounts", "is not SRC[:DST[:FLAGS]]"],
        verify=["scenario.toml"],
    )
case(
    "image_with_newline",
    'name = "s"\n[[Tests]]\nid = "a"\ntest_name = "nccl"\n',
    ["nccl.toml", "cmd_args.docker_image_url", "newline"],
    tests={"nccl.toml": 'name = "nccl"\ntest_template_name = "NcclTest"\n[cmd_args]\ndocker_image_url = "img\\nx"\n'},
    verify=["tests/nccl.toml"],
)
case(
    "slurm_install_path_with_comma",
    OK,
    ["system.toml", "install_path", "','"],
    files={"system.toml": (SLURM + 'install_path = "/opt/a,/:/host"\n' + PART).encode()},
    args=SYS,
    verify=["system.toml"],
)

# --- issue 28 item 6, issue 29 item 7: names that make directories, host lists
case(
    "id_300_chars",
    'name = "s"\n[[Tests]]\nid = "' + "i" * 300 + '"\ntest_name = "sleep"\n',
    ["scenario.toml", "Tests[0].id", "300 bytes long; at most 200"],
    verify=["scenario.toml"],
)
case(
    "scenario_name_300_chars",
    'name = "' + "n" * 300 + '"\n[[Tests]]\nid = "a"\ntest_name = "sleep"\n',
    ["scenario.toml", "name", "scenario name is 300 bytes long; at most 200"],
    verify=["scenario.toml"],
)
case(
    "nodes_unclosed_bracket_standalone",
    OK + 'nodes = ["node[1-"]\n',
    ["scenario.toml", "Tests[0].nodes", "'node[1-' is not a Slurm host list"],
    verify=["scenario.toml"],
)
case(
    "nodes_ten_million",
    OK + 'nodes = ["n[0-9999999]"]\n',
    ["scenario.toml", "Tests[0].nodes", "names 10000000 nodes; at most 100000"],
    verify=["scenario.toml"],
)
case(
    "nodes_with_semicolon",
    OK + 'nodes = ["n1;reboot"]\n',
    ["scenario.toml", "Tests[0].nodes", "a node name holds only letters, digits"],
    verify=["scenario.toml"],
)
case(
    "nodes_empty_name",
    OK + 'exclude_nodes = ["n1,,n2"]\n',
    ["scenario.toml", "Tests[0].exclude_nodes", "empty node name"],
    verify=["scenario.toml"],
)
case(
    "node_listed_and_excluded",
    OK + 'nodes = ["n[1-4]"]\nexclude_nodes = ["n3"]\n',
    ["scenario.toml", "Tests[0]", "n3 both in nodes and in exclude_nodes"],
    verify=["scenario.toml"],
)
case(
    "slurm_exclude_nodes_bad_hostlist",
    OK,
    ["system.toml", "exclude_nodes", "runs backwards"],
    files={"system.toml": (SLURM + 'exclude_nodes = ["n[9-1]"]\n' + PART).encode()},
    args=SYS,
    verify=["system.toml"],
)

for old in ROOT.glob("[0-9]*_*"):  # the generated cases; hand-written ones (``hand_*``) stay
    shutil.rmtree(old)
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
    if c.get("unreadable"):
        spec["unreadable"] = c["unreadable"]
    if c["verify"]:
        spec["in_verify"] = c["verify"]
    (d / "case.json").write_text(json.dumps(spec, indent=1) + "\n")
print(len(CASES), "cases")
