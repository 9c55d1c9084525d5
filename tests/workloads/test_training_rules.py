"""The training validity rule (``cloudai.workloads.parallelism``) through each workload's ``constraint`` and its
vectorised twin ``constraint_mask``: they agree on every point of a grid, and the reasons name the broken rule."""

from __future__ import annotations

import itertools

import numpy as np

from cloudai.workloads.base import Resources
from cloudai.workloads.nemo_run import NeMoRun

BASE = {"docker_image_url": "img", "task": "pretrain", "recipe_name": "r", "num_layers": 32}
S = "trainer.strategy."
GRID = {
    f"{S}tensor_model_parallel_size": [1, 2, 4, 8],
    f"{S}pipeline_model_parallel_size": [1, 2, 4],
    f"{S}context_parallel_size": [1, 2],
    f"{S}virtual_pipeline_model_parallel_size": [None, 1, 3, 4],
    "data.micro_batch_size": [1, 2, 4],
    "data.global_batch_size": [8, 12],
    "num_nodes": [1, 2],
}


def nemo_args(point: dict) -> dict:
    strategy = {k.removeprefix(S): v for k, v in point.items() if k.startswith(S)}
    data = {k.removeprefix("data."): v for k, v in point.items() if k.startswith("data.")}
    return {**BASE, "trainer": {"strategy": strategy}, "data": data}


def test_nemo_run_reasons_name_the_rule_and_its_values() -> None:
    run, two_nodes = NeMoRun(), Resources(2, 8)
    point = {f"{S}tensor_model_parallel_size": 8, f"{S}context_parallel_size": 4, "data.global_batch_size": 8}
    assert run.constraint(nemo_args(point), Resources(1, 8)) == (
        "num_gpus % (tp*pp*cp) != 0: 8 GPUs, tp=8 pp=1 cp=4 (tp*pp*cp=32)"
    )
    point = {f"{S}tensor_model_parallel_size": 2, f"{S}context_parallel_size": 1, "data.global_batch_size": 12}
    assert run.constraint(nemo_args({**point, "data.micro_batch_size": 2}), two_nodes) == (
        "gbs % (mbs * dp) != 0: gbs=12 mbs=2 dp=8 (dp = 16 GPUs / 2)"
    )
    vp = {f"{S}pipeline_model_parallel_size": 4, f"{S}virtual_pipeline_model_parallel_size": 3}
    assert run.constraint(nemo_args(vp), two_nodes) == "(num_layers // pp) % vp != 0: num_layers=32 pp=4 vp=3"
    assert run.constraint(nemo_args({"data.global_batch_size": 64}), two_nodes) is None


def test_nemo_run_counts_8_gpus_per_node_where_the_system_does_not_say() -> None:
    """CloudAI's NeMoRun rule takes nnodes * 8 GPUs; a standalone system gives no gpus_per_node."""
    args = nemo_args({f"{S}tensor_model_parallel_size": 8, f"{S}context_parallel_size": 1})
    assert NeMoRun().constraint(args, Resources(1, None)) is None
    assert NeMoRun().constraint(args, Resources(1, 4)) is not None


def test_nemo_run_mask_agrees_with_the_rule_on_every_grid_point() -> None:
    run, resources = NeMoRun(), Resources(1, 8)
    points = [dict(zip(GRID, values, strict=True)) for values in itertools.product(*GRID.values())]
    columns = {name: np.array([p[name] for p in points], dtype=object) for name in GRID}
    columns["num_layers"] = np.int64(32)  # a fixed knob: a scalar
    mask = run.constraint_mask(columns, resources)
    expected = [run.constraint(nemo_args(p), Resources(p["num_nodes"], 8)) is None for p in points]
    assert mask.tolist() == expected
    assert 0 < mask.sum() < len(points)


MB = {"model_family_name": "qwen", "model_recipe_name": "qwen3_30b_a3b", "hf_token": "t", "num_gpus": 16}
MB_GRID = {
    "tp": [1, 2, 4, 8],
    "pp": [1, 2, 4],
    "cp": [1, 2],
    "mb": [1, 2, 4],
    "gb": [16, 64],
    "use_megatron_fsdp": [False, True],
    "activation_offload_layers": [0, 2],
}


def test_megatron_bridge_reasons_follow_cloudais_rules() -> None:
    from cloudai.workloads.megatron_bridge import MegatronBridge

    bridge = MegatronBridge()
    assert bridge.constraint({**MB, "tp": 4, "pp": 8}) == (
        "num_gpus % (tp*pp*cp) != 0: 16 GPUs, tp=4 pp=8 cp=1 (tp*pp*cp=32)"
    )  # num_gpus from cmd_args (CloudAI's): the nodes do not count
    fsdp = {**MB, "use_megatron_fsdp": True, "num_distributed_optimizer_instances": 2, "mb": 1, "gb": 16}
    assert bridge.constraint(fsdp) == "gbs % (mbs * dp * ndo(2)) != 0: gbs=16 mbs=1 dp=16 (dp = 16 GPUs / 1)"
    assert bridge.constraint({**MB, "use_megatron_fsdp": True, "pp": 2}) == (
        "use_megatron_fsdp requires pp == cp == vp == 1: pp=2 cp=1 vp=None"
    )
    graphs = {**MB, "cuda_graph_impl": "local", "cuda_graph_scope": "attn,mlp"}
    assert (
        bridge.constraint(graphs) == "cuda_graph_impl=local allows only cuda_graph_scope full_iteration, not attn,mlp"
    )
    assert bridge.constraint({**MB, "tp": 2, "ep": 8, "et": 1}) is None


def test_megatron_bridge_mask_agrees_with_the_rule_on_every_grid_point() -> None:
    from cloudai.workloads.megatron_bridge import MegatronBridge

    bridge = MegatronBridge()
    points = [dict(zip(MB_GRID, values, strict=True)) for values in itertools.product(*MB_GRID.values())]
    columns: dict = {name: np.array([p[name] for p in points], dtype=object) for name in MB_GRID}
    mask = bridge.constraint_mask({**columns, **MB, "cuda_graph_impl": "none"}, Resources(2, 8))
    assert mask.tolist() == [bridge.constraint({**MB, **p}) is None for p in points]
    assert 0 < mask.sum() < len(points)
