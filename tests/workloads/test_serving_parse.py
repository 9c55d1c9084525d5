"""Serving metrics from the clients' real export formats (aiperf, genai-perf), and the serving workloads' rules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cloudai.config.scenario import load_scenario
from cloudai.config.system import system_from_dict
from cloudai.config.test import load_tests
from cloudai.errors import ConfigError, WorkloadError
from cloudai.space import parse_space
from cloudai.workloads.ai_dynamo import AIDynamo, AIDynamoArgs, aiperf_script
from cloudai.workloads.base import Resources
from cloudai.workloads.dynamo_mocker import DynamoMocker
from cloudai.workloads.profile_export import parse, read_profile
from cloudai.workloads.triton_inference import TritonInference

DATA = Path(__file__).resolve().parent / "data"


def test_aiperf_export_gives_throughput_and_latency_percentiles() -> None:
    metrics = read_profile(DATA / "aiperf_profile_export.csv", "aiperf")
    assert metrics["default"] == metrics["output_token_throughput"] == 461.18
    assert (metrics["ttft_ms"], metrics["ttft_p50_ms"], metrics["ttft_p99_ms"]) == (184.36, 161.03, 598.77)
    assert (metrics["itl_ms"], metrics["itl_p90_ms"], metrics["request_latency_p99_ms"]) == (8.27, 8.83, 5098.44)
    assert (metrics["request_throughput"], metrics["request_count"]) == (0.92, 50.0)
    assert "GPU Power Usage (W)" not in parse((DATA / "aiperf_profile_export.csv").read_text())  # telemetry skipped


def test_genai_perf_export_names_are_read_too() -> None:
    metrics = read_profile(DATA / "genai_perf_profile_export.csv", "genai-perf")
    assert (metrics["default"], metrics["ttft_ms"], metrics["itl_p99_ms"]) == (127.59, 36.59, 8.15)
    assert (metrics["request_throughput"], metrics["request_count"]) == (1.0, 20.0)


def test_a_truncated_export_is_no_result() -> None:
    with pytest.raises(WorkloadError, match="no output token throughput: the benchmark client stopped early"):
        read_profile(DATA / "aiperf_truncated.csv", "aiperf")


def test_failed_requests_fail_the_trial_with_the_count() -> None:
    with pytest.raises(WorkloadError, match=r"7 of 50 requests failed \(Error Request Count\)"):
        read_profile(DATA / "aiperf_failed_requests.csv", "aiperf")


def test_a_missing_export_names_the_client(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match=r"no aiperf_report\.csv was written: aiperf did not finish"):
        AIDynamo().read_metrics(tmp_path)


def test_each_workload_reads_its_clients_file(tmp_path: Path) -> None:
    nested = tmp_path / "triton" / "model-openai-chat-concurrency1"
    nested.mkdir(parents=True)
    shutil.copy(DATA / "genai_perf_profile_export.csv", nested / "profile_export_genai_perf.csv")
    assert TritonInference().read_metrics(tmp_path / "triton")["default"] == 127.59
    genai = tmp_path / "dynamo" / "genai_perf_artifacts" / "x"
    genai.mkdir(parents=True)
    shutil.copy(DATA / "genai_perf_profile_export.csv", genai / "profile_genai_perf.csv")
    assert AIDynamo().read_metrics(tmp_path / "dynamo")["ttft_ms"] == 36.59  # no aiperf report: genai-perf's
    shutil.copy(DATA / "aiperf_profile_export.csv", tmp_path / "dynamo" / "aiperf_report.csv")
    assert AIDynamo().read_metrics(tmp_path / "dynamo")["ttft_ms"] == 184.36
    (tmp_path / "mocker").mkdir()
    shutil.copy(DATA / "aiperf_failed_requests.csv", tmp_path / "mocker" / "benchmark_report.csv")
    with pytest.raises(WorkloadError, match=r"benchmark_report\.csv: 7 of 50 requests failed"):
        DynamoMocker().read_metrics(tmp_path / "mocker")


def dynamo(prefill_tp: int, decode_tp: int, prefill_nodes: int = 1, decode_nodes: int = 1) -> dict:
    def worker(tp: int, nodes: int) -> dict:
        return {"cmd": "python3 -m dynamo.vllm", "worker-initialized-regex": "x", "num-nodes": nodes,
                "args": {"tensor-parallel-size": tp}}  # fmt: skip

    return {"docker_image_url": "img", "dynamo": {"prefill_worker": worker(prefill_tp, prefill_nodes),
                                                  "decode_worker": worker(decode_tp, decode_nodes)}}  # fmt: skip


@pytest.mark.parametrize(
    ("args", "nodes", "reason"),
    [
        (dynamo(4, 4), 2, None),
        (dynamo(8, 4), 2, "prefill tensor-parallel-size exceeds decode's (CloudAI's prefill_tp_le_decode_tp)"),
        (dynamo(4, 16), 2, "a worker's tp*pp exceeds the node's 8 GPUs"),
        (dynamo(4, 8), 1, "prefill and decode share nodes but need 4 + 8 GPUs of 8"),
        (dynamo(2, 2, 2, 2), 1, "needs 2 nodes for its workers, the job has 1"),
    ],
)
def test_dynamo_constraints_are_cloudais(args: dict, nodes: int, reason: str | None) -> None:
    assert AIDynamo().constraint(args, Resources(nodes, 8)) == reason
    assert AIDynamo().num_nodes(args) == sum(w["num-nodes"] for w in args["dynamo"].values())


def test_one_aiperf_phase_reports_straight_to_aiperf_report() -> None:
    model = AIDynamoArgs.model_validate(
        {"docker_image_url": "i", "dynamo": {}, "aiperf": {"args": {"streaming": False}}}
    )
    text = aiperf_script.render(model, "/r")
    assert 'aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat --url "$FRONTEND_URL" --artifact-dir' in text
    assert "cp /r/aiperf_artifacts/profile_export_aiperf.csv /r/aiperf_report.csv" in text
    assert "--no-server-metrics" in text and "between-phase" not in text and " > /r/aiperf_" not in text


def test_a_list_named_in_dse_excluded_args_is_one_value(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "d.toml").write_text(
        'name = "d"\ntest_template_name = "AIDynamo"\ndse_excluded_args = ["cmd_args.storage_cache_dir"]\n'
        '[cmd_args]\ndocker_image_url = "i"\nstorage_cache_dir = ["/a", "/b"]\n[cmd_args.dynamo]\n'
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "a"\ntest_name = "d"\n')
    [entry] = load_scenario(tmp_path / "s.toml", load_tests(tmp_path / "t")).entries
    space = parse_space(entry.knobs, whole=entry.whole)
    assert not space.dims and space.fixed["storage_cache_dir"] == ["/a", "/b"]


@pytest.mark.parametrize("scheduler", ["kubernetes", "runai", "lsf"])
def test_a_cloudai_scheduler_we_do_not_run_is_named_as_such(scheduler: str) -> None:
    with pytest.raises(ConfigError) as err:
        system_from_dict({"name": "x", "scheduler": scheduler}, Path("cluster.toml"))
    text = str(err.value)
    assert f"cluster.toml: scheduler: scheduler '{scheduler}' is not supported by cloudai" in text
    assert "cloudai runs on: slurm, standalone" in text and "did you mean" not in text


def test_a_dynamo_job_without_num_nodes_is_checked_on_the_nodes_it_will_get() -> None:
    from cloudai.workloads.base import constraint_of

    values = {**{f"dynamo.{role}_worker.{k}": v for role in ("prefill", "decode") for k, v in
                 (("cmd", "c"), ("worker-initialized-regex", "r"), ("args.tensor-parallel-size", 8))},
              "docker_image_url": "i", "num_nodes": 1}  # fmt: skip
    assert constraint_of(AIDynamo(), values, 8) == "prefill and decode share nodes but need 8 + 8 GPUs of 8"
    assert constraint_of(AIDynamo(), values, 8, nodes_set=False) is None  # CloudAI's rule: 1 + 1 nodes


def test_dynamo_genai_perf_client_is_what_cloudais_genai_perf_sh_runs(tmp_path: Path) -> None:
    from cloudai.steps import Run
    from cloudai.workloads.base import JobContext

    genai = {"extra-args": "--streaming -- -v", "args": {"concurrency": 2, "request-count": 50}}
    args = {"docker_image_url": "i", "dynamo": {"model": "m"}, "genai_perf": genai}
    steps = AIDynamo().steps(args, JobContext(tmp_path, num_nodes=2))
    [client] = [step for step in steps if isinstance(step, Run) and step.name == "genai_perf"]
    assert list(client.argv) == [
        "genai-perf", "profile", "--model", "m", "--url", "http://${CLOUDAI_HEAD_NODE}:8000", "--endpoint",
        "v1/chat/completions", "--concurrency", "2", "--request-count", "50", "--artifact-dir",
        f"{tmp_path.absolute()}/genai_perf_artifacts", "--profile-export-file", "profile.json",
        "--streaming", "--", "-v",
    ]  # fmt: skip
    assert not any(isinstance(step, Run) and step.name == "aiperf" for step in steps)


def test_excluded_lists_are_written_back_as_one_value(tmp_path: Path) -> None:
    """best.toml of a search over a test with ``dse_excluded_args`` keeps those lists one value: the lists as TOML
    lists, and the paths named in ``dse_excluded_args`` (``cloudai.run.best``), so it loads as a plain test."""
    import toml

    from cloudai.envs.base import Feedback
    from cloudai.run.best import best_test

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "d.toml").write_text(
        'name = "d"\ntest_template_name = "NcclTest"\ndse_excluded_args = ["cmd_args.phases", "cmd_args.plan"]\n'
        "[cmd_args]\nphases = [{ name = 'a' }, { name = 'b' }]\nstepfactor = [2, 4]\n[cmd_args.plan]\nports = [1, 2]\n"
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "a"\ntest_name = "d"\n')
    [entry] = load_scenario(tmp_path / "s.toml", load_tests(tmp_path / "t")).entries
    space = parse_space(entry.knobs, whole=entry.whole)
    test = toml.loads(toml.dumps(best_test(entry, space, Feedback(1, 1, {"stepfactor": 4}, 1.0, [1.0], "ok"))))
    assert test["dse_excluded_args"] == ["cmd_args.phases", "cmd_args.plan"]
    assert test["cmd_args"]["phases"] == [{"name": "a"}, {"name": "b"}] and test["cmd_args"]["plan"]["ports"] == [1, 2]
    assert test["cmd_args"]["stepfactor"] == 4


def test_the_accuracy_run_adds_cloudais_accuracy_metric(tmp_path: Path) -> None:
    shutil.copy(DATA / "aiperf_profile_export.csv", tmp_path / "aiperf_report.csv")
    assert "accuracy" not in AIDynamo().read_metrics(tmp_path)
    results = tmp_path / "aiperf_accuracy_artifacts" / "mmlu"
    results.mkdir(parents=True)
    shutil.copy(DATA / "aiperf_accuracy_results.csv", results / "accuracy_results.csv")
    assert AIDynamo().read_metrics(tmp_path)["accuracy"] == 0.35
