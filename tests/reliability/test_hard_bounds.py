"""Issue 35, items 2, 4 and 8: names that become paths stay in the job dir, every number a job gets is bounded,
and the rest of last round's corpus. Each row loads a real CloudAI test file with one hostile value set by a
scenario entry (``[Tests.cmd_args]``), in this process (``load_plan``: the CLI's path to exit 2 is covered by the
bad-input corpus), and expects one problem naming the field and what is allowed."""

from __future__ import annotations

from pathlib import Path

from tests.cli_fork import run_cli
from tests.conftest import REPO

from cloudai.errors import ConfigError
from cloudai.plan.load import load_plan

TREE = REPO / "tests" / "cloudai_tree" / "conf"
SERVING = REPO / "tests" / "workloads" / "cloudai_conf_serving"
DYNAMO = REPO / "tests" / "workloads" / "cloudai_conf_dynamo" / "ai_dynamo" / "test" / "vllm.toml"
FILES = {
    "vllm": SERVING / "vllm" / "test" / "vllm.toml",
    "sglang": SERVING / "sglang" / "test" / "sglang.toml",
    "dynamo": DYNAMO,
    "nemo_run": TREE / "common" / "test" / "nemo_run_llama3_8b.toml",
    "nemo_launcher": TREE / "release" / "nemo_acceptance" / "test" / "gpt3_126m_mock.toml",
    "bridge": TREE
    / "experimental"
    / "megatron_bridge"
    / "test"
    / "gb200"
    / "megatron_bridge_nemotron_nano_pytorch_profiler.toml",
    "deepep": TREE / "experimental" / "test" / "deepep_test_low_latency.toml",
    "nccl": TREE / "common" / "test" / "nccl_test.toml",
    "sleep": TREE / "common" / "test" / "sleep.toml",
    "osu": REPO / "tests" / "workloads" / "cloudai_conf" / "test" / "osu_test.toml",
    "moe": TREE / "experimental" / "test" / "moe_benchmark_HT.toml",
    "ddlb": TREE / "experimental" / "test" / "ddlb_test.toml",
}
TEXTS = {
    "triton": 'name = "triton"\ntest_template_name = "TritonInference"\n[cmd_args]\nserver_docker_image_url = "s"\n'
    'client_docker_image_url = "c"\nserved_model_name = "m"\ntokenizer = "t"\n',
    "nixl_ep": 'name = "ep"\ntest_template_name = "NixlEP"\n[cmd_args]\ndocker_image_url = "i"\n'
    'plan = "[[0, 1], [0, 1, 2, 3]]"\nnum_processes_per_node = 4\n',
    "chakra": 'name = "chakra"\ntest_template_name = "ChakraReplay"\n[cmd_args]\ndocker_image_url = "i"\n',
}


def load_problems(tmp_path: Path, test: str, cmd_args: str, entry: str = "", test_extra: str = "") -> list[str]:
    """``cmd_args`` (TOML lines) set on a scenario entry of the CloudAI test file ``FILES[test]``; every problem
    as ``field: message``, [] when it loads."""
    text = TEXTS[test] if test in TEXTS else FILES[test].read_text()
    tests = tmp_path / "tests"
    tests.mkdir(parents=True, exist_ok=True)
    (tests / "t.toml").write_text(text + test_extra)
    name = next(line.split('"')[1] for line in text.splitlines() if line.startswith("name"))
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(
        f'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "{name}"\n{entry}\n[Tests.cmd_args]\n{cmd_args}\n'
    )
    try:
        load_plan(None, tests, scenario)
    except ConfigError as exc:
        return [f"{p.field}: {p.message}" for p in exc.problems]
    return []


# (test file, hostile cmd_args, the field a problem must name, what the message must say)
BOUNDS = [
    ("vllm", "decode.tensor_parallel_size = 0", "decode.tensor_parallel_size", "1..1048576"),
    ("vllm", "decode.tensor_parallel_size = -4", "decode.tensor_parallel_size", "1..1048576"),
    ("vllm", "decode.tensor_parallel_size = 1_000_000_000_000", "decode.tensor_parallel_size", "1..1048576"),
    ("vllm", "bench_cmd_args.num_prompts = -1", "bench_cmd_args.num_prompts", "1..2147483647"),
    ("sglang", "decode.tp = inf", "decode.tp", "finite"),
    ("dynamo", "dynamo.decode_worker.args.tensor-parallel-size = 0", "tensor-parallel-size", "1..1048576"),
    ("dynamo", "dynamo.decode_worker.args.gpu-memory-utilization = -inf", "gpu-memory-utilization", "finite"),
    ("dynamo", "dynamo.decode_worker.args.gpu-memory-utilization = 1.5", "gpu-memory-utilization", "(0, 1]"),
    ("dynamo", "lmcache.chunk_size = 1_000_000_000_000", "lmcache.chunk_size", "1..2147483647"),
    ("dynamo", "lmcache.max_local_cpu_size = nan", "lmcache.max_local_cpu_size", "finite"),
    ("nemo_run", "trainer.strategy.tensor_model_parallel_size = 0", "tensor_model_parallel_size", "1..1048576"),
    ("nemo_run", "trainer.num_nodes = -2", "trainer.num_nodes", "0..1048576"),
    ("nemo_run", "data.global_batch_size = 1_000_000_000_000", "data.global_batch_size", "1..2147483647"),
    ("nemo_launcher", 'training.model.tensor_model_parallel_size = "0"', "tensor_model_parallel_size", "1..1048576"),
    ("bridge", "num_gpus = 0", "cmd_args.num_gpus", "1..1048576"),
    ("bridge", "num_gpus = -16", "cmd_args.num_gpus", "1..1048576"),
    ("deepep", "num_processes = 0", "cmd_args.num_processes", "1..1048576"),
    ("deepep", "num_experts = -256", "cmd_args.num_experts", "1..2147483647"),
    ("nccl", "iters = -1", "cmd_args.iters", "0..2147483647"),
    ("nccl", "warmup_iters = [5, -3]", "cmd_args.warmup_iters", "0..2147483647"),  # a list: element-wise
    ("nccl", "iters = { low = -10, high = 10, dtype = 'int' }", "cmd_args.iters", "0..2147483647"),  # range ends
    ("nccl", "iters = { low = 0.5, high = 10.5, dtype = 'int' }", "cmd_args.iters", "whole numbers"),
    ("ddlb", "m = 0", "cmd_args.m", "1..2147483647"),  # a declared field whose name says nothing: PositiveCount
    ("deepep", "hidden = -7168\nseed = -1", "cmd_args.hidden", "1..2147483647"),
    ("sleep", "seconds = 1e15", "cmd_args.seconds", "[0, 31622400]"),
]


def test_every_number_a_job_gets_is_bounded(tmp_path: Path) -> None:
    missed = []
    for index, (test, hostile, field, says) in enumerate(BOUNDS):
        problems = load_problems(tmp_path / str(index), test, hostile, 'agent = "random_search"\nagent_steps = 2')
        if not any(field in p.split(": ")[0] and says in p for p in problems):
            missed.append((test, hostile, problems))
    assert not missed, "\n".join(map(str, missed))


def test_cloudai_own_values_still_load(tmp_path: Path) -> None:
    """The bounds refuse no value CloudAI's own files use (every file of the tree loads in its own suite; these
    are the edges: a 0 that is meant, a fraction, a port list)."""
    fine = [
        ("deepep", "num_sms = 0\nnum_qps = 0"),
        ("dynamo", "dynamo.decode_worker.args.gpu-memory-utilization = 1.0\nlmcache.chunk_size = 256"),
        ("nemo_run", "trainer.num_nodes = 1"),
        ("dynamo", 'storage_cache_dir = ""'),
        ("nccl", "iters = [0, 100]"),
    ]
    for index, (test, values) in enumerate(fine):
        assert load_problems(tmp_path / str(index), test, values) == [], (test, values)


# Item 2: a name the job joins to its dir (rm -rf, mkdir, cp) stays inside it; a path it mounts is one absolute path.
PATHS = [
    ("dynamo", 'aiperf.artifact-dir-name = "/tmp/victim"', "aiperf.artifact", "outside the job dir"),
    ("dynamo", 'aiperf.artifact-dir-name = "../../victim"', "aiperf.artifact", "outside the job dir"),
    ("dynamo", 'aiperf_phases = [{name = "p", artifact-dir-name = "../../x"}]', "aiperf_phases", "outside the job"),
    ("dynamo", 'aiperf_phases = [{name = ".."}]', "aiperf_phases", "outside the job dir"),
    ("dynamo", 'aiperf.report-name = "/etc/passwd"', "aiperf.report", "outside the job dir"),
    ("dynamo", 'aiperf_phases = [{name = "p", report-name = "/x.csv"}]', "aiperf_phases", "outside the job dir"),
    ("dynamo", 'aiperf_accuracy = {cli = "x", artifact-dir-name = "/"}', "aiperf_accuracy", "outside the job dir"),
    ("dynamo", 'storage_cache_dir = "/a,/:/host"', "storage_cache_dir", "one absolute path"),
    ("osu", 'benchmark = "../../../bin/rm"', "cmd_args.benchmark", "outside the job dir"),
    ("osu", 'benchmarks_dir = "/opt/../../bin"', "cmd_args.benchmarks_dir", "one absolute path"),
    ("nemo_launcher", 'training.run.name = ".."', "training.run.name", "outside the job dir"),
    ("nemo_launcher", 'training.model.tokenizer.model = "tok.model"', "training.model", "one absolute path"),
    ("moe", 'results_dir = "/workspace,/:/host"', "cmd_args.results_dir", "one absolute path"),
    ("chakra", 'trace_path = "traces"', "cmd_args.trace_path", "one absolute path"),
]


def test_every_name_that_becomes_a_path_stays_inside(tmp_path: Path) -> None:
    missed = []
    for index, (test, hostile, field, says) in enumerate(PATHS):
        problems = load_problems(tmp_path / str(index), test, hostile)
        if not any(field in p.split(": ")[0] and says in p for p in problems):
            missed.append((test, hostile, problems))
    assert not missed, "\n".join(map(str, missed))


# Item 4's two internal errors (exit 1) and item 8: each refused at load, naming the field.
REFUSED = [
    ("nixl_ep", "num_processes_per_node = 3", "", "", "Tests[0].cmd_args", "must equal the plan's 4 workers"),
    ("triton", "", "", '[extra_env_vars]\nNIM_CACHE_PATH = "/cache\\n/:/host"\n', "NIM_CACHE_PATH", "absolute"),
    (
        "triton",
        "port = -1\nconcurrency = 0\nsleep_seconds = 1_000_000_000_000_000",
        "",
        "",
        "sleep_seconds",
        "[0, 31622400]",
    ),
    ("sleep", "", "", "[extra_cmd_args]\nnested = { a = 1 }\n", "extra_cmd_args", "is a table"),
    ("nccl", '"x;touch /tmp/p" = 1', "", "", "cmd_args", "not a flag name"),
    ("sleep", "", "", '[extra_cmd_args]\n"--iters" = -5\n', "extra_cmd_args", "0..2147483647"),
    ("sleep", "seconds = 1", "", f'[extra_env_vars]\nBIG = "{"x" * 140_000}"\n', "extra_env_vars", "131072 bytes"),
    ("nccl", "iters = 10", "num_nodes = [1, 2]\nnodes = ['n1']", "", "Tests[0]", "sweeps the node count"),
    (
        "nccl",
        "iters = [10, 20]",
        'agent = "optuna"\nagent_steps = 2\nagent_config = { pruner = { type = "hyperband", min_resource = 8, '
        "max_resource = 2 } }",
        "",
        "agent_config",
        "max_resource (2) is below min_resource (8)",
    ),
]


def test_the_rest_of_the_corpus_is_refused(tmp_path: Path) -> None:
    missed = []
    for index, (test, hostile, entry, test_extra, field, says) in enumerate(REFUSED):
        problems = load_problems(tmp_path / str(index), test, hostile, entry, test_extra)
        if not any(field in p.split(": ")[0] and says in p for p in problems):
            missed.append((test, hostile[:80], test_extra[:80], problems))
    assert not missed, "\n".join(map(str, missed))


def test_run_refuses_an_env_value_linux_cannot_pass(tmp_path: Path) -> None:
    """Through ``cloudai run`` (it was exit 1 without a message: the job's exec failed with E2BIG)."""
    tests = tmp_path / "tests"
    tests.mkdir()
    big = "x" * 140_000
    (tests / "t.toml").write_text(
        f'name = "t"\ntest_template_name = "Sleep"\n[cmd_args]\nseconds = 0\n[extra_env_vars]\nBIG = "{big}"\n'
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    argv = ["run", "--tests-dir", "tests", "--test-scenario", "s.toml", "--output-dir", "out"]
    result = run_cli(argv, tmp_path)
    assert result.returncode == 2, result.stderr
    assert "extra_env_vars.BIG is 140005 bytes long" in result.stderr
    assert not (tmp_path / "out").exists()
