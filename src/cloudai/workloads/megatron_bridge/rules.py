"""MegatronBridge's validity rule, as CloudAI's ``constraint_check`` has it.

The GPUs are ``cmd_args.num_gpus`` (the launcher's ``-ng``: its job's size, whatever the batch job holds).
The shared parallelism part (``cloudai.workloads.parallelism``: tp*pp*cp divides the GPUs, dp > 0,
gb % (mb * dp [* ndo under FSDP]) == 0; vp against the layers is not checked: the launcher's model decides
them) comes first, then CloudAI's rules for FSDP, MoE, CPU offloading and CUDA graphs, each a one-line reason.
``mask`` is the same rule over columns of points (vectorised where it is arithmetic).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from cloudai.workloads import parallelism
from cloudai.workloads.megatron_bridge.args import MegatronBridgeArgs

_NONE = {"", "none", "null"}
_TE_SCOPES = {"attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba"}
_DEEPSEEK_PP_VP = {(1, 1), (4, 1), (8, 1), (4, 2), (16, 1), (8, 2), (4, 4)}


def items(value: str | list[str] | None) -> list[str]:
    """CloudAI's normalised list: a list or a comma-separated string, brackets and quotes stripped, lower case."""
    if value is None:
        return []
    raw = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    out: list[str] = []
    for text in raw:
        text = text.strip().strip("\"'")
        text = text[1:-1] if text.startswith("[") and text.endswith("]") else text
        out += [seg.strip().strip("\"'").lower() for seg in text.split(",") if seg.strip().strip("\"'")]
    return out


def violation(m: MegatronBridgeArgs) -> str | None:
    """Why this point cannot run, or None (CloudAI's 18 constraints, in its order)."""
    fsdp = bool(m.use_megatron_fsdp)
    ndo = m.num_distributed_optimizer_instances or 1
    point = parallelism.Parallelism(
        m.num_gpus, m.tp or 1, m.pp or 1, m.cp or 1, None,
        m.mb or None, m.gb or None, None, ndo if fsdp else 1,
    )  # fmt: skip
    if reason := parallelism.violation(point):
        return reason
    for rule in _RULES:
        if reason := rule(m):
            return reason
    return None


def _fsdp(m: MegatronBridgeArgs) -> str | None:
    fsdp, pp, cp = bool(m.use_megatron_fsdp), m.pp or 1, m.cp or 1
    if fsdp and _cuda_graphs(m):
        return "use_megatron_fsdp requires CUDA graphs off (cuda_graph_impl none or no cuda_graph_scope)"
    if fsdp and not (pp == 1 and cp == 1 and m.vp in (None, 1)):
        return f"use_megatron_fsdp requires pp == cp == vp == 1: pp={pp} cp={cp} vp={m.vp}"
    if (m.num_distributed_optimizer_instances or 0) > 1 and not fsdp:
        return f"num_distributed_optimizer_instances={m.num_distributed_optimizer_instances} needs use_megatron_fsdp"
    return None


def _moe(m: MegatronBridgeArgs) -> str | None:
    if m.et is None or m.ep is None:
        return None
    denom = m.et * m.ep * (m.pp or 1)
    if denom <= 0 or m.num_gpus % denom:
        return f"num_gpus % (et*ep*pp) != 0: {m.num_gpus} GPUs, et={m.et} ep={m.ep} pp={m.pp or 1}"
    return None


def _offload(m: MegatronBridgeArgs) -> str | None:
    layers = m.activation_offload_layers or 0
    if (m.pp or 1) > 1 and layers > 0:
        return f"pp={m.pp} cannot be combined with CPU offloading (activation_offload_layers={layers})"
    if _cuda_graphs(m) and layers > 0:
        return f"CUDA graphs are not supported with CPU offloading (activation_offload_layers={layers})"
    return None


def _graphs(m: MegatronBridgeArgs) -> str | None:
    impl, scopes = _impl(m), items(m.cuda_graph_scope)
    if impl not in _NONE and m.moe_a2a_overlap:
        return f"moe_a2a_overlap must be false when cuda_graph_impl={impl}"
    if impl not in _NONE | {"transformer_engine", "local"}:
        return f"cuda_graph_impl={impl} is not one of none, transformer_engine, local"
    if impl == "local" and scopes and scopes != ["full_iteration"]:
        return f"cuda_graph_impl=local allows only cuda_graph_scope full_iteration, not {','.join(scopes)}"
    if impl == "transformer_engine" and (bad := [s for s in scopes if s not in _TE_SCOPES]):
        return f"cuda_graph_scope {','.join(bad)} not allowed with cuda_graph_impl=transformer_engine"
    if "moe" in scopes and "moe_router" in scopes:
        return "cuda_graph_scope must not hold both moe and moe_router"
    if "moe_preprocess" in scopes and "moe_router" not in scopes:
        return "cuda_graph_scope moe_preprocess requires moe_router"
    return None


def _recompute(m: MegatronBridgeArgs) -> str | None:
    scopes, modules = set(items(m.cuda_graph_scope)), set(items(m.recompute_modules))
    clashes = [("attn", {"core_attn", "mla_up_proj"}), ("mlp", {"mlp"}), ("moe", {"moe_act", "moe", "shared_experts"}),
               ("moe_router", {"moe", "shared_experts"})]  # fmt: skip
    for scope, bad in clashes:
        if scope in scopes and bad & modules:
            return f"{scope} CUDA graph is not supported with recompute_modules {','.join(sorted(bad & modules))}"
    if "layernorm" in modules and {"attn", "mlp"} <= scopes and scopes & {"moe", "moe_router"}:
        return "CUDA graphs over attn+mlp+moe are not supported with layernorm recompute"
    return None


def _deepseek(m: MegatronBridgeArgs) -> str | None:
    recipe = m.model_recipe_name.lower()
    pair = (m.pp or 1, m.vp or 1)
    if ("deepseek_v3" in recipe or "deepseekv3" in recipe) and pair not in _DEEPSEEK_PP_VP:
        return f"(pp, vp) = {pair} is not a DeepSeek-v3 pipeline layout: one of {sorted(_DEEPSEEK_PP_VP)}"
    return None


def _impl(m: MegatronBridgeArgs) -> str:
    return (m.cuda_graph_impl or "").strip().lower()


def _cuda_graphs(m: MegatronBridgeArgs) -> bool:
    return _impl(m) not in _NONE and bool(items(m.cuda_graph_scope))


_RULES: tuple[Callable[[MegatronBridgeArgs], str | None], ...] = (_fsdp, _moe, _offload, _graphs, _recompute, _deepseek)


def mask(columns: Mapping[str, npt.ArrayLike], fixed: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
    """``violation(...) is None`` over columns of points (flat knob names; ``fixed``: the other cmd_args).

    The parallelism part is vectorised; the other rules are checked once per distinct combination of the
    swept knobs they read (few in practice), so a grid of 10^6 points costs one pass over its rows."""
    names = list(columns)
    rows = len(np.asarray(columns[names[0]])) if names else 1
    base = MegatronBridgeArgs.model_validate(fixed)

    def col(name: str, default: int) -> npt.NDArray[np.int64]:
        value = parallelism.column(columns, name, int(getattr(base, name) or default))
        return np.broadcast_to(np.asarray(value, dtype=np.int64), (rows,))

    tp, pp, cp = (np.where(col(n, 1) > 0, col(n, 1), 1) for n in ("tp", "pp", "cp"))
    mb, gb = col("mb", 0), col("gb", 0)
    fsdp, ndo = col("use_megatron_fsdp", 0), col("num_distributed_optimizer_instances", 1)
    unset = (mb == 0) | (gb == 0)  # CloudAI checks gb % (mb*dp) only when both are set
    ok = parallelism.valid_mask(
        col("num_gpus", 8), tp, pp, cp, mbs=np.where(unset, 1, mb), gbs=np.where(unset, 0, gb),
        extra=np.where((fsdp != 0) & (ndo > 0), ndo, 1),
    )  # fmt: skip
    others = [n for n in names if n not in ("tp", "mb", "gb")]
    if not others:
        return ok & _other_rules_hold(base, ())
    values = zip(*(np.asarray(columns[n], dtype=object).tolist() for n in others), strict=True)
    cache: dict[tuple[Any, ...], bool] = {}
    for row, key in enumerate(values):
        if ok[row]:
            if key not in cache:
                cache[key] = _other_rules_hold(base, tuple(zip(others, key, strict=True)))
            ok[row] = cache[key]
    return ok


def _other_rules_hold(base: MegatronBridgeArgs, knobs: tuple[tuple[str, Any], ...]) -> bool:
    m = base.model_copy(update=dict(knobs)) if knobs else base
    return all(rule(m) is None for rule in _RULES)
