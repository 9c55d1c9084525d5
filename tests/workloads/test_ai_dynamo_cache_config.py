"""AIDynamo's ``cmd_args.lmcache`` / ``cmd_args.hicache`` as CloudAI handles them: CloudAI's scenarios
(``cloudai_conf_dynamo/``, verbatim) dry-run, the job writes ``lmcache-config.yaml`` (+ ``.original.yaml``) /
``hicache-config.toml`` with the tables' content, exports their paths, fills LMCache's placeholders and passes the
HiCache file to both workers. The job script is run for real (bash) where it writes and renders the files."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import toml
import yaml
from tests.workloads.test_golden import check_golden
from tests.workloads.test_serving_golden import CONF, GOLDEN, SLURM_EXAMPLE, dry_run, placeholders, srun_steps

from cloudai.steps import Run, Shell
from cloudai.workloads.ai_dynamo.args import AIDynamoArgs
from cloudai.workloads.ai_dynamo.workload import AIDynamo, environment
from cloudai.workloads.base import JobContext
from cloudai.workloads.heredoc import written_files

TESTS, SCENARIOS = CONF / "ai_dynamo" / "test", CONF / "ai_dynamo" / "test_scenario"


def cmd_args(scenario: str) -> dict[str, Any]:
    return tomllib.loads((SCENARIOS / scenario).read_text())["Tests"][0]["cmd_args"]


def test_cloudais_lmcache_scenario_writes_its_config(tmp_path: Path) -> None:
    [script] = dry_run(tmp_path, SLURM_EXAMPLE, TESTS, SCENARIOS / "vllm_lmcache.toml")  # the list is excluded
    text, job_dir, table = script.read_text(), script.parent, cmd_args("vllm_lmcache.toml")["lmcache"]
    files = {name: yaml.safe_load(content) for name, content in written_files(text).items() if name.endswith("yaml")}
    assert files == {"lmcache-config.yaml": table, "lmcache-config.original.yaml": table}
    assert list(files["lmcache-config.yaml"]) == list(table)  # TOML order, as CloudAI dumps it
    assert f"export LMCACHE_CONFIG_FILE={job_dir}/lmcache-config.yaml\n" in text
    assert "export ENABLE_LMCACHE=1\n" in text and ",/tmp:/tmp " in text  # storage_cache_dir mounted at itself
    steps = srun_steps(text)
    assert list(steps)[:2] == ["node_setup", "lmcache_cache_dir"]
    assert steps["lmcache_controller"][-2:] == ["--monitor-ports", '{"pull":8300,"reply":8400}']  # bash's split
    assert text.index("cloudai_render_lmcache || exit 1") < text.index("--job-name=cloudai-decode_0")
    check_golden(placeholders(script), GOLDEN / "ai_dynamo_vllm_lmcache.sbatch")


def test_cloudais_hicache_scenario_passes_its_config_to_both_workers(tmp_path: Path) -> None:
    [script] = dry_run(tmp_path, SLURM_EXAMPLE, TESTS, SCENARIOS / "sglang_hicache.toml")
    text, path = script.read_text(), script.parent / "hicache-config.toml"
    assert toml.loads(written_files(text)["hicache-config.toml"]) == cmd_args("sglang_hicache.toml")["hicache"]
    assert f"export HICACHE_CONFIG_FILE={path}\n" in text and "ENABLE_LMCACHE" not in text
    for worker in ("prefill_0", "decode_0"):
        words = srun_steps(text)[worker]
        flag = words.index("--hicache-storage-backend-extra-config")
        assert words[flag + 1] == f"@{path}" and words[flag + 2] == "--trust-remote-code"  # after args, before extra
        assert words.count("--hicache-storage-backend-extra-config") == 1


def test_the_hicache_file_replaces_a_worker_arg_of_the_same_name(tmp_path: Path) -> None:
    args = cmd_args("sglang_hicache.toml")
    args["dynamo"]["decode_worker"]["args"]["hicache-storage-backend-extra-config"] = '{"a": 1}'
    steps = AIDynamo().steps(args, JobContext(tmp_path, 2))
    [decode] = [s for s in steps if isinstance(s, Run) and s.name == "decode_0"]
    assert decode.argv.count("--hicache-storage-backend-extra-config") == 1 and '{"a": 1}' not in decode.argv


def run_environment(tmp_path: Path, model: AIDynamoArgs, head: str = "node-7") -> subprocess.CompletedProcess[str]:
    """The job's first step (its exports and files) run by bash in ``tmp_path``, as the batch shell runs it."""
    env = {"PATH": "/usr/bin:/bin", "CLOUDAI_HEAD_NODE": head, "USER": "alice"}
    script = f"set -Eeuo pipefail\n{environment(model, tmp_path)}\n"
    return subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)


def test_the_job_writes_the_files_and_fills_lmcache_placeholders(tmp_path: Path) -> None:
    args = cmd_args("vllm_lmcache.toml") | {"hicache": {"plugin": {"posix": {"use_uring": "false"}}}}
    args["lmcache"] = args["lmcache"] | {"results": "{results_dir}/x"}
    result = run_environment(tmp_path, AIDynamoArgs.model_validate(args))
    assert result.returncode == 0, result.stderr
    rendered = yaml.safe_load((tmp_path / "lmcache-config.yaml").read_text())
    assert rendered["controller_pull_url"] == "node-7:8300" and rendered["results"] == f"{tmp_path}/x"
    assert rendered["extra_config"]["nixl_path"] == "/tmp/alice/node-7/lmcache/cache"
    assert yaml.safe_load((tmp_path / "lmcache-config.original.yaml").read_text()) == args["lmcache"]
    assert toml.loads((tmp_path / "hicache-config.toml").read_text()) == args["hicache"]
    cufile = json.loads((tmp_path / "cufile.json").read_text())  # CloudAI's setup_cufile, with any LMCache config
    assert cufile["logging"] == {"dir": str(tmp_path), "level": "INFO"} and cufile["properties"]["allow_compat_mode"]


def test_an_unknown_or_unresolvable_placeholder_ends_the_job(tmp_path: Path) -> None:
    args = cmd_args("vllm_lmcache.toml")
    unknown = run_environment(tmp_path, AIDynamoArgs.model_validate(args | {"lmcache": {"a": "{nodes}", "b": 1}}))
    assert unknown.returncode == 1 and "unknown LMCache config placeholders: nodes" in unknown.stderr
    model = AIDynamoArgs.model_validate(args | {"lmcache": {"ip": "{frontend_ip}"}})
    ip = run_environment(tmp_path, model, head="no-such-node.invalid")
    assert ip.returncode == 1 and "cannot resolve no-such-node.invalid for {frontend_ip}" in ip.stderr
    assert run_environment(tmp_path, model, head="localhost").returncode == 0
    assert yaml.safe_load((tmp_path / "lmcache-config.yaml").read_text())["ip"] in ("127.0.0.1", "::1")


@pytest.mark.parametrize(("var", "expected"), [("HICACHE_CONFIG_FILE", "@/h.toml"), ("LMCACHE_CONFIG_FILE", None)])
def test_a_config_file_given_by_extra_env_vars_is_used(tmp_path: Path, var: str, expected: str | None) -> None:
    args = cmd_args("vllm_lmcache.toml")
    del args["lmcache"]
    [shell, *steps] = AIDynamo().steps(args, JobContext(tmp_path, 2, env={var: "/h.toml"}))
    workers = [s for s in steps if isinstance(s, Run) and (s.name or "").startswith(("decode", "prefill"))]
    flag = "--hicache-storage-backend-extra-config"
    assert [w.argv[w.argv.index(flag) + 1] for w in workers if flag in w.argv] == ([expected] * 2 if expected else [])
    assert isinstance(shell, Shell) and "lmcache-config.yaml" not in shell.text
    lmcache = var == "LMCACHE_CONFIG_FILE"
    assert ("export ENABLE_LMCACHE=1" in shell.text) == lmcache == ("export CUFILE_ENV_PATH_JSON=" in shell.text)


def test_a_list_inside_lmcache_is_swept_unless_excluded(tmp_path: Path) -> None:
    scenario = (SCENARIOS / "vllm_lmcache.toml").read_text().replace("chunk_size = 256", "chunk_size = [256, 512]")
    scenario = scenario.replace('name = "vllm-disagg-lmcache-controller"', 'name = "v"\nagent_steps = 2')
    (tmp_path / "s.toml").write_text(scenario)
    dry_run(tmp_path, SLURM_EXAMPLE, TESTS, tmp_path / "s.toml")
    scripts = sorted((tmp_path / "results").rglob("sbatch.sh"))  # one per trial
    configs = [yaml.safe_load(written_files(s.read_text())["lmcache-config.yaml"]) for s in scripts]
    assert sorted(c["chunk_size"] for c in configs) == [256, 512]
    assert all(c["lmcache_worker_ports"] == [8788, 8789, 8790, 8791] for c in configs)
