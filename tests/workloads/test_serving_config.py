"""``vllm``/``sglang`` as a user writes them: CloudAI's fields, sweeps over serving knobs, ``git_repos`` cloned and
mounted, CloudAI fields we do not run named as such, and CloudAI's node/GPU rules as constraints."""

from __future__ import annotations

import subprocess
from pathlib import Path

from click.testing import CliRunner
from tests.workloads.test_golden import SLURM_EXAMPLE, dry_run

from cloudai.cli import cli
from cloudai.config.test import load_tests
from cloudai.installables import GitRepo
from cloudai.plan.install import needs_of_tests
from cloudai.workloads.base import Resources
from cloudai.workloads.sglang import Sglang
from cloudai.workloads.vllm import Vllm

CONF = Path(__file__).resolve().parent / "cloudai_conf_serving"
VLLM = 'name = "v"\ntest_template_name = "vllm"\n[cmd_args]\ndocker_image_url = "img"\n'


def write_tests(tmp_path: Path, text: str) -> Path:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "t.toml").write_text(text)
    return tests


def test_serving_knobs_and_bench_args_sweep_like_any_knob(tmp_path: Path) -> None:
    test = VLLM + "[cmd_args.decode]\ntensor_parallel_size = [2, 4]\n[bench_cmd_args]\nmax_concurrency = [8, 64]\n"
    scenario = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "v"\n'
    dry_run(tmp_path, SLURM_EXAMPLE, write_tests(tmp_path, test), scenario)
    scripts = sorted((tmp_path / "results").rglob("sbatch.sh"))  # a sweep: one script per trial
    seen = {
        (line.split("--tensor-parallel-size ")[1].split()[0], line.split("--max-concurrency ")[1].split()[0])
        for script in scripts
        for line in [script.read_text()]
    }
    assert seen == {("2", "8"), ("2", "64"), ("4", "8"), ("4", "64")}


def test_a_scenario_entry_overrides_the_bench_table(tmp_path: Path) -> None:
    scenario = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "v"\n[Tests.cmd_args.bench_cmd_args]\nnum_prompts = 500\n'
    [script] = dry_run(
        tmp_path, SLURM_EXAMPLE, write_tests(tmp_path, VLLM + "[bench_cmd_args]\nnum_prompts = 9\n"), scenario
    )
    assert " --num-prompts 500 " in script.read_text()


def test_cloudai_fields_we_do_not_run_are_named_not_guessed(tmp_path: Path) -> None:
    tests = write_tests(tmp_path, VLLM.replace("[cmd_args]", 'custom_bash = "ulimit -n 65536"\n[cmd_args]'))
    result = CliRunner().invoke(cli, ["verify-configs", str(tests)])
    assert result.exit_code == 2
    assert "custom_bash: CloudAI field not supported by cloudai (yet)" in result.output
    assert "did you mean" not in result.output.lower()


def test_git_repos_are_cloned_by_install_and_mounted(tmp_path: Path) -> None:
    source = tmp_path / "vllm.git"
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True)
    (source / "README").write_text("eval scripts\n")
    git = ["git", "-C", str(source), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    [test] = load_tests(CONF / "vllm" / "test").values()
    assert [r.container_mount for r in test[0].git_repos] == ["/vllm_repo"]
    needs = needs_of_tests(type("S", (), {"install_path": tmp_path / "install"})(), CONF / "vllm" / "test")
    [repo] = [item for item in needs.by if isinstance(item, GitRepo)]
    assert (repo.name, needs.by[repo]) == ("vllm__main", ["vllm"])
    local = GitRepo("vllm__main", str(source), "main")
    assert local.install(tmp_path / "install") and not local.install(tmp_path / "install")
    assert (tmp_path / "install" / "vllm__main" / "README").read_text() == "eval scripts\n"


def test_constraints_are_cloudais_rules() -> None:
    vllm = Vllm()
    args = {"docker_image_url": "img", "decode": {"tensor_parallel_size": 16}}
    assert vllm.constraint(args, Resources(1, 8)) == "vLLM serve: tp*pp*dp = 16*1*1 exceeds its 8 GPUs"
    assert vllm.constraint(args, Resources(2, 8)) is None
    assert vllm.constraint(args, Resources(1, None)) is None  # GPUs unknown: not judged
    disagg = {"docker_image_url": "img", "prefill": {}, "decode": {}}
    reason = Sglang().constraint(disagg, Resources(3, 8))
    assert reason is not None and "needs prefill.num_nodes and decode.num_nodes" in reason
    split = {"docker_image_url": "img", "prefill": {"num_nodes": 1}, "decode": {"num_nodes": 2}}
    assert Sglang().constraint(split, Resources(3, 8)) is None


def test_an_empty_prefill_table_means_disaggregated(tmp_path: Path) -> None:
    scenario = 'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "v"\n'
    [script] = dry_run(tmp_path, SLURM_EXAMPLE, write_tests(tmp_path, VLLM + "[cmd_args.prefill]\n"), scenario)
    text = script.read_text()
    assert '"kv_role":"kv_producer"' in text and "toy_proxy_server.py" in text


def test_a_wrong_gpu_list_is_named_at_load(tmp_path: Path) -> None:
    tests = write_tests(tmp_path, VLLM + '[cmd_args.decode]\ngpu_ids = "0,one"\n')
    result = CliRunner().invoke(cli, ["verify-configs", str(tests)])
    assert result.exit_code == 2
    assert "cmd_args.decode.gpu_ids" in result.output and "comma-separated GPU numbers" in result.output


def test_a_git_url_or_commit_git_would_read_as_an_option_is_refused_at_load(tmp_path: Path) -> None:
    """Issue 35: ``url = "--upload-pack=touch x"`` reached ``git clone`` as an option (it runs the command)."""
    repos = '[[git_repos]]\nurl = "--upload-pack=touch pwned"\ncommit = "main"\n'
    repos += '[[git_repos]]\nurl = "https://example.com/r.git"\ncommit = "-b"\n'
    result = CliRunner().invoke(cli, ["verify-configs", str(write_tests(tmp_path, VLLM + repos))])
    assert result.exit_code == 2, result.output
    assert "git_repos[0].url" in result.output and "git_repos[1].commit" in result.output, result.output
    assert "starts with '-'" in result.output


def test_a_health_path_with_shell_code_is_refused_at_load(tmp_path: Path) -> None:
    """Issue 35: a bench_host or health path goes into a URL the job's shell expands; ``$(...)`` there was a
    ValueError while rendering (exit 1), now exit 2 naming the field."""
    test = VLLM + 'bench_host = "$(touch pwned)"\nhealthcheck = "/h`id`"\n'
    result = CliRunner().invoke(cli, ["verify-configs", str(write_tests(tmp_path, test))])
    assert result.exit_code == 2, result.output
    assert "cmd_args.bench_host" in result.output and "cmd_args.healthcheck" in result.output, result.output
    assert "$NAME" in result.output
