"""What every workload must do, built-in or plugin (after Optuna's ``optuna/testing/pytest_samplers.py``).

``WorkloadContract`` needs three fixtures: ``workload`` (an instance), ``sample_args`` (one trial's
valid scalar ``cmd_args``) and ``sample_output`` (files a finished job of that workload leaves in
its job dir, ``{name: text}``; ``{}`` when it reports no metrics). A plugin gets the suite with

    class TestMyWorkload(WorkloadContract):
        @pytest.fixture
        def workload(self) -> Workload:
            return MyWorkload()

        @pytest.fixture
        def sample_args(self) -> dict[str, Any]:
            return {"size": 4096}

        @pytest.fixture
        def sample_output(self) -> dict[str, str]:
            return {"stdout.txt": "size 4096 time 1.5\\n"}

The contract: a registered name; ``argv`` is a non-empty list of strings, the same for the same
input, without touching the args; ``constraint`` and ``container_image`` answer None or a text;
``validate`` accepts the sample; a vectorised rule (``constraint_mask``) agrees with ``constraint`` around it;
reading metrics never raises anything but ``WorkloadError`` (no
output, garbage output) and, on the sample output, gives finite numbers under declared names
(``default`` among them); the workload's module imports nothing of ``cloudai.systems``.
"""

from __future__ import annotations

import copy
import inspect
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cloudai.errors import WorkloadError
from cloudai.space import entry_knobs, parse_space
from cloudai.workloads import WORKLOADS
from cloudai.workloads.base import JobContext, Workload

DATA = Path(__file__).resolve().parents[1] / "workloads" / "data"
FIO_JSON = DATA.parent / "fio_json"


class WorkloadContract:
    """The workload contract; subclasses provide ``workload``, ``sample_args`` and ``sample_output``."""

    def job(self, tmp_path: Path, files: dict[str, str]) -> Path:
        job_dir = tmp_path / "job"
        job_dir.mkdir()
        for name, text in files.items():
            (job_dir / name).parent.mkdir(parents=True, exist_ok=True)  # e.g. NeMoLauncher's run/log-*.out
            (job_dir / name).write_text(text)
        return job_dir

    def test_declares_a_name_and_its_args(self, workload: Workload) -> None:
        assert isinstance(workload.name, str) and workload.name
        assert workload.args_model is None or issubclass(workload.args_model, BaseModel)
        declared = getattr(workload, "metrics", None)
        if declared:  # () declares that the workload reports no metrics (Sleep)
            assert "default" in declared and all(isinstance(m, str) for m in declared)

    def test_argv_is_strings_deterministic_and_leaves_args_alone(
        self, workload: Workload, sample_args: dict[str, Any], tmp_path: Path
    ) -> None:
        before = copy.deepcopy(sample_args)
        context = JobContext(job_dir=tmp_path, num_nodes=2, extra_cmd_args="")
        argv = workload.argv(sample_args, context)
        assert argv and all(isinstance(word, str) for word in argv)
        assert workload.argv(sample_args, context) == argv
        assert sample_args == before

    def test_constraint_and_image_answer_none_or_text(self, workload: Workload, sample_args: dict[str, Any]) -> None:
        reason = workload.constraint(sample_args)
        assert reason is None or (isinstance(reason, str) and reason)
        image = workload.container_image(sample_args)
        assert image is None or (isinstance(image, str) and image)

    @pytest.fixture
    def sample_env(self) -> dict[str, str]:
        """The ``extra_env_vars`` the sample needs (JaxToolbox requires CloudAI's ``COMBINE_THRESHOLD``)."""
        return {}

    def test_a_vectorised_rule_agrees_with_the_scalar_one(
        self, workload: Workload, sample_args: dict[str, Any]
    ) -> None:
        """``constraint_mask`` (optional) says what ``constraint`` says on a grid around the sample: each integer
        knob at its value, 1, 2 and 4, on 1, 2 and 4 nodes of 8 GPUs."""
        from cloudai.workloads.validity import ValidPoints

        if type(workload).constraint_mask is Workload.constraint_mask:
            pytest.skip(f"{workload.name} has no vectorised rule")
        knobs: dict[str, Any] = entry_knobs(sample_args, {}, [1, 2, 4])
        ints = [k for k, v in knobs.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0][:6]
        knobs.update({k: sorted({knobs[k], 1, 2, 4}) for k in ints})
        rule = ValidPoints(parse_space(knobs), workload, 8)
        points = [rule.space.grid_point(i) for i in range(rule.space.grid_size)]
        assert list(rule.mask(0, rule.space.grid_size)) == [rule.violation(p) is None for p in points]

    def test_validate_accepts_the_sample(
        self, workload: Workload, sample_args: dict[str, Any], sample_env: dict[str, str]
    ) -> None:
        space = parse_space(entry_knobs(sample_args, sample_env, 1))
        assert workload.validate(space, file=None, prefix="Tests[0].cmd_args") == []

    def test_an_empty_job_dir_is_a_workload_error(self, workload: Workload, tmp_path: Path) -> None:
        with pytest.raises(WorkloadError):
            workload.read_metrics(self.job(tmp_path, {}))

    def test_garbage_output_is_a_workload_error(self, workload: Workload, tmp_path: Path) -> None:
        garbage = "\x00\x01 12 3 nan N/A\n# Size\n1 2 3 4 5 6 7 8 9 10 11 12 13\n{not json\n"
        with pytest.raises(WorkloadError):
            workload.read_metrics(self.job(tmp_path, {"stdout.txt": garbage, "metrics.json": garbage}))

    def test_sample_output_gives_finite_declared_metrics(
        self, workload: Workload, sample_output: dict[str, str], tmp_path: Path
    ) -> None:
        if not sample_output:
            pytest.skip(f"{workload.name} reports no metrics")
        metrics = workload.read_metrics(self.job(tmp_path, sample_output))
        assert "default" in metrics and all(math.isfinite(v) for v in metrics.values())
        declared = getattr(workload, "metrics", None)
        assert declared is None or set(metrics) <= set(declared)

    def test_knows_nothing_of_systems(self, workload: Workload) -> None:
        module = inspect.getmodule(type(workload))
        assert module is not None
        assert "cloudai.systems" not in inspect.getsource(module)


SAMPLES: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "Sleep": ({"seconds": 0}, {}),
    "BashCmd": ({"cmd": "true"}, {}),
    "Synthetic": ({"algo": "tree"}, {"metrics.json": '{"default": 1.5, "bus_bw": 80.0}'}),
    "NcclTest": ({"minbytes": "128", "stepfactor": 2}, {"stdout.txt": (DATA / "nccl_all_reduce.txt").read_text()}),
    "UCCTest": ({"docker_image_url": "img"}, {"stdout.txt": (DATA / "ucc_alltoall.txt").read_text()}),
    "Fio": ({"args": {"rw": "randread", "bs": "4k"}}, {"stdout.txt": (FIO_JSON / "three_jobs_read.json").read_text()}),
    "Aiconfigurator": (
        {"model_name": "LLAMA3.1_70B", "system": "h200_sxm", "isl": 4000, "osl": 500, "agg": {"batch_size": 8}},
        {name: (DATA / "aiconfigurator" / "agg" / name).read_text() for name in ("stdout.txt", "metrics.json")},
    ),
    "OSUBench": (
        {"docker_image_url": "img", "benchmarks_dir": "/osu", "benchmark": "osu_bw"},
        {"stdout.txt": (DATA / "osu_bw.txt").read_text()},
    ),
    "MegatronRun": (
        {"docker_image_url": "img", "run_script": "/w/run.py", "micro_batch_size": 2},
        {"stdout.txt": (DATA / "megatron_good.txt").read_text()},
    ),
    "JaxToolboxGPT": (
        {"docker_image_url": "img", "fdl_config": "paxml.tasks.lm.params.nvidia.GPT126M", "fdl": {"max_steps": 20}},
        {"error-1-node-0.txt": (DATA / "jax_gpt_error-0.txt").read_text()},
    ),
    "JaxToolboxGrok": ({"docker_image_url": "img"}, {"stderr.txt": (DATA / "jax_gpt_error-0.txt").read_text()}),
    "MegatronBridge": (
        {"model_family_name": "qwen", "model_recipe_name": "qwen3_30b_a3b", "hf_token": "t", "tp": 2},
        {"cloudai_megatron_bridge_launcher.log": (DATA / "megatron_bridge_launcher.log").read_text()},
    ),
    "NeMoLauncher": ({}, {"run/log-x_1.out": (DATA / "nemo_launcher_log.out").read_text()}),
    "NeMoRun": (
        {
            "docker_image_url": "img",
            "task": "pretrain",
            "recipe_name": "r",
            "trainer": {"strategy": {"context_parallel_size": 1}},
        },
        {
            "stdout.txt": (DATA / "nemo_run_stdout.txt").read_text(),
            "stderr.txt": (DATA / "nemo_run_stderr.txt").read_text(),
        },
    ),
    "SlurmContainer": ({"docker_image_url": "img", "cmd": "hostname"}, {}),
    "DDLBTest": (
        {"docker_image_url": "img", "primitive": "tp_columnwise", "dtype": "float16"},
        {"stdout.txt": (DATA / "ddlb_tp_columnwise.txt").read_text()},
    ),
    "NIXLBench": (
        {"docker_image_url": "img", "path_to_benchmark": "./nixlbench", "backend": "UCX"},
        {"stdout.txt": (DATA / "nixlbench_ucx.txt").read_text()},
    ),
    "NIXLKVBench": (
        {"docker_image_url": "img", "backend": "UCX", "total_buffer_size": "1gb"},
        {"stdout.txt": (DATA / "nixl_kvbench_profile.txt").read_text()},
    ),
    "NixlPerftest": (
        {
            "docker_image_url": "img",
            "subtest": "sequential-ct-perftest",
            "num_user_requests": 2,
            "batch_size": 1,
            "num_prefill_nodes": 1,
            "num_decode_nodes": 1,
            "model": "m",
        },
        {},
    ),
    "MoEBenchmark": (
        {"docker_image_url": "img", "deepep_versions": ("legacy", "nccl_ep")},
        {"benchmark_16_ranks_20261127_standard/results.json": (DATA / "moe_benchmark_results.json").read_text()},
    ),
    "ChakraReplay": (
        {"docker_image_url": "img", "trace_path": "/traces", "comm_type": "pytorch-dist"},
        {"stdout.txt": (DATA / "chakra_replay.txt").read_text()},
    ),
    "NixlEP": (
        {"docker_image_url": "img", "plan": "[[0, 1], [0, 1, 2, 3]]", "num_processes_per_node": 4, "kineto": True},
        {"nixl-ep-node-0.log": (DATA / "nixl_ep_node_0.log").read_text()},
    ),
    "DeepEP": ({"docker_image_url": "img", "subtest_name": "test_ep", "deterministic": True}, {}),
    "TritonInference": (
        {
            "server_docker_image_url": "nim",
            "client_docker_image_url": "sdk",
            "served_model_name": "m",
            "tokenizer": "t",
        },
        {"profile_export_genai_perf.csv": (DATA / "genai_perf_profile_export.csv").read_text()},
    ),
    "AIDynamo": (
        {
            "docker_image_url": "img",
            "workloads": "aiperf.sh",
            "dynamo": {"model": "m"},
            "lmcache": {"chunk_size": 256, "extra_config": {"nixl_path": "{storage_cache_dir}"}},
            "hicache": {"plugin": {"posix": {"active": True}}},
        },
        {"aiperf_report.csv": (DATA / "aiperf_profile_export.csv").read_text()},
    ),
    "DynamoMocker": (
        {"benchmark_tool": "aiperf", "aiperf": {"request_count": 50}},
        {"benchmark_report.csv": (DATA / "aiperf_profile_export.csv").read_text()},
    ),
    "vllm": (
        {"docker_image_url": "img", "decode": {"tensor_parallel_size": 4}, "bench_cmd_args": {"max_concurrency": 8}},
        {"vllm-bench.json": (DATA / "serving" / "vllm_bench.json").read_text()},
    ),
    "sglang": (
        {"docker_image_url": "img", "prefill": {"gpu_ids": "0,1"}, "decode": {"gpu_ids": "2,3"}},
        {"sglang-bench.jsonl": (DATA / "serving" / "sglang_bench.jsonl").read_text()},
    ),
}


class TestBuiltinWorkloads(WorkloadContract):
    @pytest.fixture(params=sorted(SAMPLES))
    def name(self, request: pytest.FixtureRequest) -> str:
        return request.param

    @pytest.fixture
    def workload(self, name: str) -> Workload:
        return WORKLOADS.get(name)()

    @pytest.fixture
    def sample_args(self, name: str) -> dict[str, Any]:
        return copy.deepcopy(SAMPLES[name][0])

    @pytest.fixture
    def sample_output(self, name: str) -> dict[str, str]:
        return SAMPLES[name][1]

    @pytest.fixture
    def sample_env(self, name: str) -> dict[str, str]:
        return {"COMBINE_THRESHOLD": "1073741824"} if name.startswith("JaxToolbox") else {}


def test_every_builtin_is_under_contract() -> None:
    assert set(WORKLOADS.names()) >= set(SAMPLES)
    assert {n for n in WORKLOADS.names() if not n.startswith("_")} <= set(SAMPLES) | plugin_names()


def plugin_names() -> set[str]:
    """Workloads installed as plugins (``cloudai.workloads`` entry points): each tests itself."""
    from importlib.metadata import entry_points

    return {ep.name for ep in entry_points(group="cloudai.workloads")}


def user_guide_code() -> str:
    """The plugin code of docs/test-toml.md's "Writing a workload plugin" section."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "test-toml.md").read_text()
    section = guide.split("## Writing a workload plugin", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def user_guide_example() -> type[Workload]:
    """The guide's plugin, executed as written."""
    namespace: dict[str, Any] = {}
    exec(compile(user_guide_code(), "docs/test-toml.md", "exec"), namespace)
    return namespace["MyBench"]


class TestUserGuidePlugin(WorkloadContract):
    @pytest.fixture
    def workload(self) -> Workload:
        return user_guide_example()()

    @pytest.fixture
    def sample_args(self) -> dict[str, Any]:
        return {"size": 64}

    @pytest.fixture
    def sample_output(self) -> dict[str, str]:
        return {"stdout.txt": "time 1.5\n"}

    def test_knows_nothing_of_systems(self, workload: Workload) -> None:
        assert "cloudai.systems" not in user_guide_code()  # defined by exec: no module source to read
