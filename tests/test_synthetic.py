"""The ``Synthetic`` workload: its model's CLI as a real subprocess, the landscape's promises, the workload glue."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cloudai.space import parse_space
from cloudai.workloads import synthetic_model as model
from cloudai.workloads.base import JobContext, read_metrics_file
from cloudai.workloads.synthetic import Synthetic

RING = {"algo": "ring", "message_size": 1 << 28, "chunk_kb": 616, "num_channels": 19}


def run_model(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cloudai.workloads.synthetic_model", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def flags(params: dict[str, object]) -> list[str]:
    return [item for key, value in params.items() for item in (f"--{key.replace('_', '-')}", str(value))]


def test_cli_writes_valid_metrics(tmp_path: Path) -> None:
    done = run_model(tmp_path, *flags({**RING, "num_nodes": 4, "jitter": 0.2, "seed": 3}))
    assert done.returncode == 0, done.stderr
    metrics = read_metrics_file(tmp_path / "metrics.json")
    assert {"bus_bw", "latency_us", "default"} <= set(metrics)
    assert metrics["default"] == metrics["bus_bw"] > 0
    assert metrics["latency_us"] > 0
    assert "bus_bw" in done.stdout and len(done.stdout.strip().splitlines()) == 1


def test_cli_output_matches_evaluate(tmp_path: Path) -> None:
    params = {**RING, "background_load": 0.3, "jitter": 0.5, "seed": 11}
    assert run_model(tmp_path, *flags({**params, "num_nodes": 4})).returncode == 0
    assert json.loads((tmp_path / "metrics.json").read_text()) == pytest.approx(model.evaluate(params, 4))


@pytest.mark.parametrize(
    ("params", "nodes", "reason"),
    [
        ({"chunk_kb": 8192, "num_channels": 16}, 4, "buffer"),
        ({"algo": "collnet"}, 1, "collnet"),
        ({"algo": "nvls"}, 16, "nvls"),
        ({"algo": "nvls", "num_channels": 24, "chunk_kb": 64}, 1, "channels"),
    ],
)
def test_infeasible_exits_3_without_metrics(tmp_path: Path, params: dict[str, object], nodes: int, reason: str) -> None:
    assert reason in (model.infeasible(params, nodes) or "")
    done = run_model(tmp_path, *flags({**params, "num_nodes": nodes}))
    assert done.returncode == 3
    assert reason in done.stderr
    assert not (tmp_path / "metrics.json").exists()


@pytest.mark.parametrize("args", [["--bogus", "1"], ["--algo", "mesh"], ["--chunk-kb", "3"], ["--jitter", "x"]])
def test_bad_arguments_exit_nonzero_without_metrics(tmp_path: Path, args: list[str]) -> None:
    done = run_model(tmp_path, *args)
    assert done.returncode != 0
    assert not (tmp_path / "metrics.json").exists()


def test_fail_rate_one_fails(tmp_path: Path) -> None:
    done = run_model(tmp_path, "--fail-rate", "1")
    assert done.returncode == 1
    assert not (tmp_path / "metrics.json").exists()


def test_noise_is_deterministic_per_seed_and_zero_without_jitter() -> None:
    noisy = {**RING, "jitter": 0.5}
    assert model.evaluate({**noisy, "seed": 1}, 4) == model.evaluate({**noisy, "seed": 1}, 4)
    values = {model.evaluate({**noisy, "seed": seed}, 4)["bus_bw"] for seed in range(20)}
    assert len(values) == 20
    quiet = {model.evaluate({**RING, "jitter": 0.0, "seed": seed}, 4)["bus_bw"] for seed in range(20)}
    assert quiet == {model.expected(RING, 4)["bus_bw"]}


def test_noise_is_the_same_across_processes(tmp_path: Path) -> None:
    args = flags({**RING, "jitter": 0.7, "seed": 5})
    outputs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        assert run_model(tmp_path / name, *args).returncode == 0
        outputs.append((tmp_path / name / "metrics.json").read_text())
    assert outputs[0] == outputs[1]


def test_optimum_is_feasible_and_beats_every_grid_point() -> None:
    candidates = {"algo": list(model.ALGOS), "chunk_kb": [64, 256, 1024, 4096, 8192], "num_channels": [1, 4, 8, 16, 32]}
    fixed = {"message_size": 1 << 26, "background_load": 0.2}
    best, value = model.optimum(candidates, num_nodes=4, fixed=fixed)
    assert model.infeasible({**fixed, **best}, 4) is None
    assert value == model.expected({**fixed, **best}, 4)["bus_bw"]
    for combo in itertools.product(*candidates.values()):
        point = {**fixed, **dict(zip(candidates, combo, strict=True))}
        if model.infeasible(point, 4) is None:
            assert model.expected(point, 4)["bus_bw"] <= value


def test_recommended_space_has_2000_points_and_the_documented_optimum() -> None:
    candidates, fixed = model.recommended_space()
    assert len(list(itertools.product(*candidates.values()))) >= 2000
    best, value = model.optimum(candidates, fixed=fixed)
    assert best == {"algo": "ring", "chunk_kb": 616, "num_channels": 19}
    assert value == pytest.approx(56.04, abs=0.01)


def test_best_algo_depends_on_background_load() -> None:
    candidates, fixed = model.recommended_space()
    best = {load: model.optimum(candidates, fixed={**fixed, "background_load": load})[0]["algo"] for load in (0.0, 0.5)}
    assert best[0.0] == "ring"
    assert best[0.5] != best[0.0]
    config = {"message_size": 1 << 28, "chunk_kb": 1024, "num_channels": 8}

    def best_algo(load: float) -> str:
        bus_bw = {a: model.expected({**config, "algo": a, "background_load": load}, 4)["bus_bw"] for a in model.ALGOS}
        return max(bus_bw, key=bus_bw.__getitem__)

    assert best_algo(0.0) != best_algo(0.5)


def test_best_chunk_depends_on_message_size_and_algo() -> None:
    chunks = {"chunk_kb": [64, 128, 256, 512, 1024, 2048, 4096, 8192]}

    def best_chunk(algo: str, size: int) -> int:
        return model.optimum(chunks, 4, {"algo": algo, "message_size": size, "num_channels": 8})[0]["chunk_kb"]

    assert best_chunk("ring", 1 << 24) < best_chunk("ring", 1 << 30)
    assert best_chunk("ring", 1 << 28) != best_chunk("collnet", 1 << 28)


def test_argv_is_one_entry_per_value_and_no_shell(tmp_path: Path) -> None:
    args = {**RING, "duration_s": 0, "seed": 2}
    argv = Synthetic().argv(args, JobContext(job_dir=tmp_path, num_nodes=4))
    assert argv[:2] == [sys.executable, model.__file__]  # the stdlib-only model, run as a file
    assert "bash" not in argv and "-c" not in argv and "sh" not in argv
    assert argv[argv.index("--num-nodes") + 1] == "4"
    assert argv[argv.index("--chunk-kb") + 1] == "616"
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert read_metrics_file(tmp_path / "metrics.json")["bus_bw"] == pytest.approx(model.expected(RING, 4)["bus_bw"])


def test_a_trial_starts_without_the_heavy_stdlib_modules(tmp_path: Path) -> None:
    """Start-up is what a pruned trial still pays on top of its first progress line: the model's file (what a
    trial runs) imports neither dataclasses (inspect, ast), pathlib nor shutil (argparse's terminal width)."""
    argv = [sys.executable, "-X", "importtime", model.__file__, "--duration-s", "0"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "json" in imported  # the lines were parsed
    assert not imported & {"dataclasses", "inspect", "ast", "pathlib", "shutil"}, sorted(imported)
    assert (tmp_path / "metrics.json").exists()


def test_constraint_delegates_to_the_model() -> None:
    workload = Synthetic()
    assert workload.constraint({"algo": "ring"}) is None
    assert "collnet" in (workload.constraint({"algo": "collnet", "num_nodes": 1}) or "")
    assert workload.constraint({"algo": "collnet", "num_nodes": 4}) is None
    assert workload.constraint({"algo": "collnet"}) is None  # node count unknown: the trial itself exits 3 on 1 node
    assert "buffer" in (workload.constraint({"chunk_kb": 8192, "num_channels": 32, "duration_s": 1}) or "")


def test_validate_catches_a_bad_type_and_a_bad_candidate() -> None:
    space = parse_space({"algo": ["ring", "mesh"], "chunk_kb": "big", "num_channels": {"low": 1, "high": 64}})
    problems = Synthetic().validate(space, file=None, prefix="cmd_args")
    fields = {p.field for p in problems}
    assert {"cmd_args.algo", "cmd_args.chunk_kb", "cmd_args.num_channels"} <= fields


def test_validate_accepts_the_shipped_test_and_the_recommended_space() -> None:
    import tomllib

    conf = tomllib.loads((Path(__file__).resolve().parents[1] / "conf/common/test/synthetic.toml").read_text())
    assert conf["test_template_name"] == "Synthetic"
    assert Synthetic().validate(parse_space(conf["cmd_args"]), file=None, prefix="cmd_args") == []
    space = parse_space(
        {
            "algo": list(model.ALGOS),
            "chunk_kb": {"low": 64, "high": 8192, "log": True, "dtype": "int", "grid_points": 16},
            "num_channels": {"low": 1, "high": 32, "dtype": "int", "grid_points": 32},
            "message_size": 1 << 28,
            "num_nodes": 4,
        }
    )
    assert Synthetic().validate(space, file=None, prefix="cmd_args") == []
    candidates, _ = model.recommended_space()
    assert space.grid_size == 2048
    assert sorted({p["chunk_kb"] for p in space.iter_grid()}) == candidates["chunk_kb"]
