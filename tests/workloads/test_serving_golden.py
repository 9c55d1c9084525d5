"""The serving jobs ``cloudai dry-run`` writes for AIDynamo, TritonInference and DynamoMocker, against CloudAI.

1. CloudAI's reference scripts (``ref/ai-dynamo.sbatch``, ``ref/triton-inference.sbatch`` and the helper scripts
   CloudAI writes beside them): the tests of CloudAI's ``tests/test_acceptance.py``, written as TOML, give the
   same command in every step. CloudAI's AIDynamo job is one ``srun`` of its ``ai_dynamo.sh`` per node, which
   starts etcd, NATS, the workers and the frontend from its flags; cloudai renders each as a step of its own, so
   the expected commands are what ``ai_dynamo.sh`` builds from the reference's flags (``launch_etcd``:
   ``<etcd-cmd> --listen-client-urls http://0.0.0.0:<port> --advertise-client-urls ...``; ``launch_nats``:
   ``<nats-cmd> -p <port>``; workers: ``<cmd> --<arg> <value>... <extra-args>``; ingress: ``<ingress-cmd>
   --http-port <port>``). Two normalisations, on purpose:

   * commands are compared as words (after shell word splitting): the quoting differs, not the words;
   * CloudAI writes the job's directory as ``/cloudai_run_results`` (its container mount of the job dir); we
     write the job dir's own path (also mounted at itself), replaced by ``/cloudai_run_results`` here.

2. CloudAI's conf files (``cloudai_conf_dynamo/``, verbatim) on CloudAI's ``example_slurm_cluster.toml`` and on
   the mocker's standalone system: whole scripts pinned as golden files (``CLOUDAI_UPDATE_GOLDEN=1`` rewrites
   them), and the files cloudai does not run refused as such.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from click.testing import CliRunner
from tests.workloads.test_golden import check_golden, ref_system

from cloudai.cli import cli
from cloudai.workloads.ai_dynamo.workload import extract_aiperf_script
from cloudai.workloads.triton_inference.wrapper import extract_wrapper

HERE = Path(__file__).resolve().parent
REF, GOLDEN, CONF = HERE / "ref", HERE / "golden", HERE / "cloudai_conf_dynamo"
SLURM_EXAMPLE = HERE / "cloudai_conf" / "system" / "example_slurm_cluster.toml"
RESULTS = "/cloudai_run_results"

TRITON_TEST = """name = "triton-inference"
description = "triton-inference"
test_template_name = "TritonInference"
[cmd_args]
server_docker_image_url = "nvcr.io/nim/deepseek-ai/deepseek-r1:1.7.2"
client_docker_image_url = "nvcr.io/nvidia/tritonserver:25.01-py3-sdk"
served_model_name = "model"
tokenizer = "tok"
[extra_env_vars]
NIM_MODEL_NAME = "/nim/model"
NIM_CACHE_PATH = "/nim/cache"
"""
DYNAMO_TEST = """name = "ai-dynamo"
description = "AI Dynamo test"
test_template_name = "AIDynamo"
dse_excluded_args = ["cmd_args.aiperf_phases"]
[cmd_args]
docker_image_url = "nvcr.io/nvidia/ai-dynamo:24.09"
workloads = "aiperf.sh"
[cmd_args.dynamo]
model = "model"
backend = "vllm"
endpoint = "v1/chat/completions"
workspace_path = "/workspace"
dcgm_exporter = { enabled = true, port = 9501 }
[cmd_args.dynamo.prefill_worker]
cmd = "python3 -m dynamo.vllm --is-prefill-worker"
worker_initialized_regex = "VllmWorker.*has.been.initialized"
num-nodes = 1
[cmd_args.dynamo.decode_worker]
cmd = "python3 -m dynamo.vllm"
worker_initialized_regex = "VllmWorker.*has.been.initialized"
num-nodes = 1
[cmd_args.genai_perf]
streaming = true
extra-inputs = '{"temperature": 0.7, "max_tokens": 128}'
output-tokens-mean = 128
random-seed = 42
request-count = 100
synthetic-input-tokens-mean = 550
warmup-request-count = 10
[cmd_args.aiperf]
extra-args = "--server-metrics-formats json csv"
[cmd_args.aiperf.args]
concurrency = 2
request-count = 50
synthetic-input-tokens-mean = 300
output-tokens-mean = 500
server-metrics = "auto"
[[cmd_args.aiperf_phases]]
name = "round_1"
args = { concurrency = 1 }
[[cmd_args.aiperf_phases]]
name = "round_2"
args = { request-count = 10 }
"""


def dry_run(tmp_path: Path, system: Path, tests_dir: Path, scenario: Path) -> list[Path]:
    out = tmp_path / "results"
    args = ["dry-run", "--system-config", str(system), "--tests-dir", str(tests_dir), "--test-scenario", str(scenario)]
    result = CliRunner().invoke(cli, [*args, "--output-dir", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return sorted(out.glob("*/*/*/*.sh"))


def ref_dry_run(tmp_path: Path, test_text: str, num_nodes: int) -> Path:
    """One test on a system like CloudAI's reference one (partition main, 8 GPUs per node, pmix)."""
    system, _ = ref_system(tmp_path)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "t.toml").write_text(test_text)
    name = re.search(r'^name = "(.*)"', test_text, re.M).group(1)  # type: ignore[union-attr]
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(f'name = "s"\n[[Tests]]\nid = "Tests.1"\ntest_name = "{name}"\nnum_nodes = {num_nodes}\n')
    [script] = dry_run(tmp_path, system, tests, scenario)
    return script


def srun_steps(script: str) -> dict[str, list[str]]:
    """Each ``srun`` step's command (the words after srun and its flags), by step name (``--job-name``)."""
    steps: dict[str, list[str]] = {}
    for line in script.replace("\\\n", " ").splitlines():
        line = re.sub(r"--nodelist=\$\([^)]*\)", "", line)
        found = re.match(r"(?:[A-Z_]+=\S*\s+)*srun\s(.*?)(?:\s&|\s\|\| exit \$\?)?$", line)
        if not found:
            continue
        words = shlex.split(found.group(1))
        name = next((w.split("=", 1)[1].removeprefix("cloudai-") for w in words if w.startswith("--job-name=")), "")
        start = next(i for i, word in enumerate(words) if not word.startswith("-"))
        steps[name or f"step{len(steps)}"] = words[start:]
    return steps


def normalised(words: list[str], job_dir: Path) -> list[str]:
    return [word.replace(str(job_dir), RESULTS) for word in words]


def test_triton_steps_match_cloudais_reference(tmp_path: Path) -> None:
    script = ref_dry_run(tmp_path, TRITON_TEST, num_nodes=3)
    text, ref = script.read_text(), (REF / "triton-inference.sbatch").read_text()
    ours, theirs = srun_steps(text), list(srun_steps(ref).values())
    assert ours["server"] == theirs[-2] == ["/opt/nim/start_server_wrapper.sh"]
    assert normalised(ours["client"], script.parent) == theirs[-1]
    assert text.index("cloudai-server") < text.index("/v1/health/ready") < text.index("cloudai-client")
    for export in ("NIM_NUM_COMPUTE_NODES=2", "NIM_MODEL_TOKENIZER='deepseek-ai/DeepSeek-R1'"):
        assert f"export {export}\n" in text and f"export {export}\n" in ref
    mounts = re.search(r"--container-mounts=(\S+) .*cloudai-server", text).group(1)  # type: ignore[union-attr]
    assert mounts.endswith(f",/nim/model:/nim/model:ro,/nim/cache:/nim/cache:rw,{script.parent}/"
                           "start_server_wrapper.sh:/opt/nim/start_server_wrapper.sh:ro")  # fmt: skip
    wrapper = (REF / "triton-inference-start_server_wrapper.sh").read_text().strip()
    wrapper = wrapper.replace("NIM_MODEL_NAME='__OUTPUT_DIR__/output'", "NIM_MODEL_NAME='/nim/model'")
    assert extract_wrapper(text) == wrapper.replace(
        "NIM_CACHE_PATH='__OUTPUT_DIR__/output'", "NIM_CACHE_PATH='/nim/cache'"
    )


def cloudai_script_flags() -> dict[str, str]:
    """The ``--flag value`` pairs CloudAI's reference passes to its ``ai_dynamo.sh``, in order."""
    text = (REF / "ai-dynamo.sbatch").read_text().replace("\\\n", " ")
    words = shlex.split(text.split("/cloudai_install/ai_dynamo.sh", 1)[1].split("\n")[0])
    return dict(zip(words[::2], words[1::2], strict=True))


def expected_dynamo_steps(flags: dict[str, str]) -> dict[str, list[str]]:
    """What ``ai_dynamo.sh`` starts from these flags (see the module docstring)."""

    def worker(role: str) -> list[str]:
        args = [w for k, v in flags.items() if k.startswith(f"--{role}-args-") for w in (f"--{k[len(role) + 8 :]}", v)]
        return [*shlex.split(flags[f"--{role}-cmd"]), *args, *shlex.split(flags.get(f"--{role}-extra-args", ""))]

    etcd = f"http://0.0.0.0:{flags['--dynamo-etcd-port']}"
    return {
        "node_setup": ["bash", "-c", flags["--dynamo-node-setup-cmd"]],
        "etcd": [
            *shlex.split(flags["--dynamo-etcd-cmd"]),
            "--listen-client-urls",
            etcd,
            "--advertise-client-urls",
            etcd,
        ],
        "nats": [*shlex.split(flags["--dynamo-nats-cmd"]), "-p", flags["--dynamo-nats-port"]],
        "decode_0": worker("decode"),
        "prefill_0": worker("prefill"),
        "frontend": [*shlex.split(flags["--dynamo-ingress-cmd"]), "--http-port", flags["--dynamo-port"]],
        "aiperf": ["bash", flags["--aiperf-script"]],
    }


def test_ai_dynamo_steps_match_what_cloudais_script_runs(tmp_path: Path) -> None:
    script = ref_dry_run(tmp_path, DYNAMO_TEST, num_nodes=2)
    text, ref = script.read_text(), (REF / "ai-dynamo.sbatch").read_text()
    ours = {name: normalised(words, script.parent) for name, words in srun_steps(text).items()}
    expected = expected_dynamo_steps(cloudai_script_flags())
    assert {name: ours[name] for name in expected} == expected
    assert (
        ours["dcgm_exporter"]
        == srun_steps(ref)["dcgm-exporter"]
        == ["bash", "-lc", "DCGM_EXPORTER_LISTEN=:9501 dcgm-exporter"]
    )
    order = [
        text.index(f"--job-name=cloudai-{name} ")
        for name in ("etcd", "nats", "decode_0", "prefill_0", "frontend", "aiperf")
    ]
    assert order == sorted(order)  # CloudAI's main(): etcd, nats; workers; ingress; workloads
    assert "--job-name=cloudai-prefill_0" in text and "CUDA_VISIBLE_DEVICES=" not in text.split("cloudai_bg_pids=()")[1]
    aiperf = extract_aiperf_script(text)
    assert (
        aiperf is not None
        and aiperf.replace(str(script.parent), RESULTS) == (REF / "ai-dynamo-aiperf.sh").read_text().strip()
    )


def test_ai_dynamo_mounts_cloudais_hf_home(tmp_path: Path) -> None:
    """CloudAI's ``<hf_home_path>:/cloudai_install/huggingface`` in every step in the Dynamo image, and ``HF_HOME``
    there (``ai_dynamo.sh --hf-home``): the workers reuse the weights instead of downloading them per job. The
    mounts are CloudAI's but for its ``storage_cache_dir`` (``/tmp:/tmp``), which cloudai mounts only for LMCache,
    the one user of it."""
    script = ref_dry_run(tmp_path, DYNAMO_TEST, num_nodes=2)
    install = str(tmp_path / "install")
    ref = (REF / "ai-dynamo.sbatch").read_text().replace("__INSTALL_DIR__", install)
    [theirs] = {
        m for m in re.findall(r"--container-image=nvcr.io/nvidia/ai-dynamo:24.09 --container-mounts=(\S+)", ref)
    }
    text = script.read_text().replace(str(script.parent), "__OUTPUT_DIR__/output")
    ours = set(re.findall(r"--container-image=nvcr.io/nvidia/ai-dynamo:24.09 --container-mounts=(\S+)", text))
    assert ours == {theirs.removesuffix(",/tmp:/tmp")}
    assert f",{install}/huggingface:/cloudai_install/huggingface" in theirs
    hf_home = cloudai_script_flags()["--hf-home"]
    assert f"\nexport HF_HOME={hf_home}\n" in text and f"\nmkdir -p {install}/huggingface\n" in text


def placeholders(script: Path) -> str:
    text = script.read_text().replace(str(script.parent), "__OUTPUT_DIR__/output")
    return text.replace(str(Path("install").absolute()), "__OUTPUT_DIR__/install")


def test_cloudais_vllm_slurm_scenario(tmp_path: Path) -> None:
    scripts = dry_run(
        tmp_path, SLURM_EXAMPLE, CONF / "ai_dynamo" / "test", CONF / "ai_dynamo" / "test_scenario" / "vllm_slurm.toml"
    )
    by_id = {script.parent.parent.name: script for script in scripts}
    nodes = {key: re.search(r"#SBATCH -N (\d+)", s.read_text()).group(1) for key, s in by_id.items()}  # type: ignore[union-attr]
    # CloudAI's allocation: prefill + decode nodes unless the entry sets num_nodes (then the roles share nodes)
    assert nodes == {"test.disagg.single-node": "2", "test.disagg.shared-node": "2", "test.disagg.multinode": "4"}
    shared = by_id["test.disagg.shared-node"].read_text()
    assert shared.count("DYN_SYSTEM_PORT=9090 CUDA_VISIBLE_DEVICES=0,1,2,3 srun") == 2  # a decode worker per node
    assert shared.count("DYN_SYSTEM_PORT=9091 CUDA_VISIBLE_DEVICES=4,5,6,7 VLLM_NIXL_SIDE_CHANNEL_PORT=5561") == 2
    steps = srun_steps(by_id["test.disagg.single-node"].read_text())
    assert steps["decode_0"] == ["python3", "-m", "dynamo.vllm", "--model", "Qwen/Qwen3-0.6B",
                                 "--gpu-memory-utilization", "0.8", "--pipeline-parallel-size", "1",
                                 "--tensor-parallel-size", "4", "--data-parallel-size", "1", "--kv-transfer-config",
                                 '{"kv_connector":"NixlConnector","kv_role":"kv_both"}',
                                 "--no-enable-expert-parallel"]  # fmt: skip
    check_golden(placeholders(by_id["test.disagg.multinode"]), GOLDEN / "ai_dynamo_vllm_multinode.sbatch")
    # DYNAMO_NODELIST = "$(scontrol show hostname $SLURM_JOB_NODELIST | tr -s '\\n' ',')" in CloudAI's test: the
    # job's nodes, comma separated (CloudAI's batch shell runs the command), not that text
    multinode = by_id["test.disagg.multinode"].read_text()
    [line] = [line for line in multinode.splitlines() if "DYNAMO_NODELIST" in line]
    nodes = subprocess.run(["bash", "-c", f'CLOUDAI_NODES=(n1 n2 n3 n4)\n{line}\necho "$DYNAMO_NODELIST"'],
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert nodes.stdout == "n1,n2,n3,n4\n"
    assert multinode.index("CLOUDAI_NODES=(") < multinode.index(line)


def test_cloudais_sglang_and_kvbm_scenarios(tmp_path: Path) -> None:
    tests, scenarios = CONF / "ai_dynamo" / "test", CONF / "ai_dynamo" / "test_scenario"
    [first, _] = dry_run(tmp_path / "a", SLURM_EXAMPLE, tests, scenarios / "sglang_slurm.toml")
    prefill = srun_steps(first.read_text())["prefill_0"]
    assert prefill[:7] == ["python3", "-m", "dynamo.sglang", "--model-path", "Qwen/Qwen3-0.6B", "--served-model-name",
                           "Qwen/Qwen3-0.6B"]  # fmt: skip
    assert prefill[-3:] == ["--trust-remote-code", "--skip-tokenizer-init", "--enable-metrics"]
    [kvbm] = dry_run(tmp_path / "b", SLURM_EXAMPLE, tests, scenarios / "vllm_kvbm_slurm.toml")
    text = kvbm.read_text()
    assert "export ENABLE_KVBM=1\n" in text and "DYN_SYSTEM_PORT=8081 srun" in text  # the test's own base port
    assert "--connector 'kvbm nixl'" in text
    check_golden(placeholders(first), GOLDEN / "ai_dynamo_sglang_single_node.sbatch")


def test_cloudais_mocker_scenario_on_its_standalone_system(tmp_path: Path) -> None:
    root = CONF / "dynamo_mocker"
    [script] = dry_run(tmp_path, root / "system" / "standalone_system.toml", root / "test",
                       root / "test_scenario" / "dynamo_mocker.toml")  # fmt: skip
    check_golden(placeholders(script), GOLDEN / "dynamo_mocker.sh")


def test_the_kubernetes_scenario_is_a_system_cloudai_does_not_run(tmp_path: Path) -> None:
    system = CONF / "system" / "kubernetes_cluster.toml"
    args = ["dry-run", "--system-config", str(system), "--tests-dir", str(CONF / "ai_dynamo" / "test"),
            "--test-scenario", str(CONF / "ai_dynamo" / "test_scenario" / "vllm_k8s.toml"),
            "--output-dir", str(tmp_path)]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert str(system) in result.output and "scheduler 'kubernetes' is not supported by cloudai" in result.output
    assert "cloudai runs on: slurm, standalone" in result.output and "did you mean" not in result.output


def test_cloudais_dynamo_files_verify() -> None:
    scenarios = CONF / "ai_dynamo" / "test_scenario"
    files = [CONF / "ai_dynamo" / "test", CONF / "dynamo_mocker", *(scenarios / f"{name}.toml" for name in
             ("vllm_slurm", "sglang_slurm", "vllm_kvbm_slurm", "vllm_k8s"))]  # fmt: skip
    result = CliRunner().invoke(
        cli, ["verify-configs", "--tests-dir", str(CONF / "ai_dynamo" / "test"), *map(str, files)]
    )
    assert result.exit_code == 0, result.output


def test_dynamo_fields_we_do_not_run_say_so(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "d.toml").write_text(
        'name = "d"\ntest_template_name = "AIDynamo"\n[cmd_args]\ndocker_image_url = "i"\nstartup_cmd = "x"\n'
        '[cmd_args.dynamo.prefill_worker]\ncmd = "c"\nworker-initialized-regex = "r"\nnodes = "n1"\n'
        "multiple-workers-per-node = true\n"
    )
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "a"\ntest_name = "d"\n')
    args = ["dry-run", "--tests-dir", str(tmp_path / "t"), "--test-scenario", str(tmp_path / "s.toml")]
    result = CliRunner().invoke(cli, [*args, "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 2 and not (tmp_path / "out").exists()
    for field in ("cmd_args.startup_cmd", "cmd_args.dynamo.prefill_worker.nodes"):
        assert f"{field}: CloudAI field not supported by cloudai (yet)" in result.output
    assert "multiple-workers-per-node: true is not supported by cloudai" in result.output
    assert "did you mean" not in result.output


def test_rendered_serving_scripts_are_valid_bash() -> None:
    for script in GOLDEN.glob("*dynamo*"):
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0, script


def test_serving_knobs_sweep_like_any_knob(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    vllm = (CONF / "ai_dynamo" / "test" / "vllm.toml").read_text()
    swept = vllm.replace("tensor-parallel-size = 8", "tensor-parallel-size = [2, 4]", 1)  # the prefill worker's
    objective = 'test_template_name = "AIDynamo"\nagent_objectives = { default = "max" }'
    (tests / "vllm.toml").write_text(swept.replace('test_template_name = "AIDynamo"', objective))
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[[Tests]]\nid = "a"\ntest_name = "vLLM"\n')
    args = ["dry-run", "--system-config", str(SLURM_EXAMPLE), "--tests-dir", str(tests), "--test-scenario",
            str(scenario), "--output-dir", str(tmp_path / "out")]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "dynamo.prefill_worker.args.tensor-parallel-size: 2 choices [2, 4]" in result.output
    scripts = sorted((tmp_path / "out").glob("*/a/0/*/sbatch.sh"))
    tps = [srun_steps(s.read_text())["prefill_0"] for s in scripts]
    assert [words[words.index("--tensor-parallel-size") + 1] for words in tps] == ["2", "4"]
