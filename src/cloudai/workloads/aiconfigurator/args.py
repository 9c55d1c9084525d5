"""CloudAI's Aiconfigurator ``cmd_args`` (``src/cloudai/workloads/aiconfig/`` there), and the request they become.

Field names are CloudAI's: ``model_name``, ``system``, ``backend``, ``version``, ``isl``, ``osl`` and exactly one
of ``[cmd_args.agg]`` (``batch_size``, ``ctx_tokens``, ``tp``, ``pp``, ``dp``, ``moe_tp``, ``moe_ep``) or
``[cmd_args.disagg]`` (``p_``/``d_`` ``tp``, ``pp``, ``dp``, ``bs``, ``workers`` and the two correction scales).
The quantization modes (``gemm_quant_mode``, ...) may sit in either table, as CloudAI's DSE file writes them, or
at the top. Differences, each deliberate:

* ``version`` left out means the release's own default database for that system and backend (CloudAI's
  ``"0.20.0"`` is a database of the 0.5 releases that 0.12 does not ship); the one used is recorded per trial.
* ``model_name`` is a HuggingFace id the release ships a config for; CloudAI's legacy names (``LLAMA3.1_70B``...)
  are mapped to those ids (``LEGACY_MODELS``).
* ``ctx_tokens`` may be left out (the package then uses ``isl``); ``moe_tp``/``moe_ep`` left out let the package
  infer them (CloudAI's 1 means the same for a dense model).
* ``prefill_correction_scale``/``decode_correction_scale`` other than 1.0 are refused: aiconfigurator 0.12's public
  API has no such scaling, and a silently ignored knob would make every value look the same.
* ``total_gpus`` (ours, ``cli default``'s ``--total-gpus``): the GPUs of the question. A replica (agg: one worker;
  disagg: its prefill and decode workers together) that needs more is a constraint step, never run; one that
  needs fewer is repeated as whole replicas, and the per-GPU throughput counts all ``total_gpus`` (idle included),
  as aiconfigurator counts it.
* ``p_moe_tp``/``p_moe_ep``/``d_moe_tp``/``d_moe_ep`` (disagg; CloudAI has no such fields): the MoE parallelism of
  the prefill and decode workers, aiconfigurator's own names in its sweep.
* ``mode`` (ours): ``"agg"`` or ``"disagg"``, or a list of both with both tables given: one search over both, as
  ``cli default`` compares them (``Aiconfigurator.branches``: the table of the mode not chosen does not apply to a
  trial; best.toml gives the winner's ``mode`` and table alone). Left out: the one table given says the mode.
* ``budget`` and ``gpu_price`` (ours): a fixed cost per hour and each system's price per GPU-hour, instead of
  ``total_gpus``, which validation sets to ``floor(budget / gpu_price[system])``: a search over ``system`` compares
  systems at equal cost (its ``tokens_per_s`` is what the budget buys).

The knobs ``cli default``'s sweep varies (``sdk/sweep.py``, ``sdk/task_v2.py`` of 0.12): agg ``tp``, ``pp``,
``dp`` (attention DP), ``moe_tp``, ``moe_ep``, ``batch_size``, ``ctx_tokens``; disagg each worker's ``tp``,
``pp``, ``dp``, ``moe_tp``, ``moe_ep``, ``bs`` and ``workers``. All are fields here; its ``cp`` (context
parallelism) is not: ``cli_estimate``, which a trial calls, takes none. It does not sweep the quantisation modes
(it reads them from the checkpoint); here they are knobs too (a list is a sweep), at the top or in a mode's table.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

QUANT_FIELDS = ("gemm_quant_mode", "moe_quant_mode", "kvcache_quant_mode", "fmha_quant_mode", "comm_quant_mode")

# CloudAI's (aiconfigurator 0.5's) model names -> the HuggingFace ids aiconfigurator 0.12 ships configs for.
LEGACY_MODELS = {
    "LLAMA3.1_8B": "meta-llama/Meta-Llama-3.1-8B",
    "LLAMA3.1_70B": "meta-llama/Meta-Llama-3.1-70B",
    "LLAMA3.1_405B": "meta-llama/Meta-Llama-3.1-405B",
    "MOE_Mixtral8x7B": "mistralai/Mixtral-8x7B-v0.1",
    "MOE_Mixtral8x22B": "mistralai/Mixtral-8x22B-v0.1",
    "DEEPSEEK_V3": "deepseek-ai/DeepSeek-V3",
    "DEEPSEEK_R1": "deepseek-ai/DeepSeek-R1",
    "QWEN3_0.6B": "Qwen/Qwen3-0.6B",
    "QWEN3_1.7B": "Qwen/Qwen3-1.7B",
    "QWEN3_8B": "Qwen/Qwen3-8B",
    "QWEN3_32B": "Qwen/Qwen3-32B",
    "QWEN3_30B_A3B": "Qwen/Qwen3-30B-A3B",
    "QWEN3_235B": "Qwen/Qwen3-235B-A22B",
    "QWEN3_480B": "Qwen/Qwen3-Coder-480B-A35B-Instruct",
    "Nemotron_super_v1.1": "nvidia/Llama-3_3-Nemotron-Super-49B-v1",
    "KIMI_K2": "moonshotai/Kimi-K2-Instruct",
}


class _Quant(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gemm_quant_mode: str | None = None
    moe_quant_mode: str | None = None
    kvcache_quant_mode: str | None = None
    fmha_quant_mode: str | None = None
    comm_quant_mode: str | None = None


class Agg(_Quant):
    """Aggregated (in-flight batching) serving: one kind of worker does prefill and decode."""

    batch_size: int = Field(ge=1)
    ctx_tokens: int | None = Field(default=None, ge=1)
    tp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    moe_tp: int | None = Field(default=None, ge=1)
    moe_ep: int | None = Field(default=None, ge=1)

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp


class Disagg(_Quant):
    """Disaggregated serving: ``p_workers`` prefill workers and ``d_workers`` decode workers."""

    p_tp: int = Field(default=1, ge=1)
    p_pp: int = Field(default=1, ge=1)
    p_dp: int = Field(default=1, ge=1)
    p_bs: int = Field(ge=1)
    p_workers: int = Field(ge=1)
    p_moe_tp: int | None = Field(default=None, ge=1)
    p_moe_ep: int | None = Field(default=None, ge=1)
    d_tp: int = Field(default=1, ge=1)
    d_pp: int = Field(default=1, ge=1)
    d_dp: int = Field(default=1, ge=1)
    d_bs: int = Field(ge=1)
    d_workers: int = Field(ge=1)
    d_moe_tp: int | None = Field(default=None, ge=1)
    d_moe_ep: int | None = Field(default=None, ge=1)
    prefill_correction_scale: float = 1.0
    decode_correction_scale: float = 1.0

    @field_validator("prefill_correction_scale", "decode_correction_scale")
    @classmethod
    def _unscaled(cls, value: float) -> float:
        if value != 1.0:
            raise ValueError(
                f"{value} is not supported by cloudai: aiconfigurator 0.12's public API has no correction scale "
                "(leave it 1.0)"
            )
        return value

    @property
    def gpus(self) -> int:
        return self.p_workers * self.p_tp * self.p_pp * self.p_dp + self.d_workers * self.d_tp * self.d_pp * self.d_dp


MODES = ("agg", "disagg")


class AiconfiguratorArgs(_Quant):
    model_name: str = Field(min_length=1)
    system: str = Field(min_length=1)
    backend: str = Field(default="trtllm", min_length=1)
    version: str | None = None
    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    mode: Literal["agg", "disagg"] | None = None
    agg: Agg | None = None
    disagg: Disagg | None = None
    total_gpus: int | None = Field(default=None, ge=1)
    budget: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    gpu_price: dict[str, float] | None = None

    @field_validator("gpu_price")
    @classmethod
    def _prices(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        bad = {k: v for k, v in (value or {}).items() if not (math.isfinite(v) and v > 0)}
        if bad:
            raise ValueError(f"a price per GPU-hour is a positive number, not {bad}")
        return value

    @model_validator(mode="after")
    def _one_mode(self) -> AiconfiguratorArgs:
        if self.mode is not None and getattr(self, self.mode) is None:
            raise ValueError(f"mode = {self.mode!r} needs a [cmd_args.{self.mode}] table")
        if self.mode is None and (self.agg is None) == (self.disagg is None):
            raise ValueError(
                'give exactly one of [cmd_args.agg] or [cmd_args.disagg], or both with mode = ["agg", "disagg"]'
            )
        if self.budget is not None:
            if self.total_gpus is not None:
                raise ValueError("give total_gpus or budget (with gpu_price), not both")
            if not self.gpu_price or self.system not in self.gpu_price:
                priced = ", ".join(sorted(self.gpu_price or {})) or "none"
                raise ValueError(f"budget needs gpu_price for system {self.system!r} (priced: {priced})")
            bought = math.floor(self.budget / self.gpu_price[self.system] + 1e-9)
            if bought == 0:
                raise ValueError(f"budget {self.budget:g} buys no {self.system} GPU at {self.gpu_price[self.system]:g}")
            self.total_gpus = bought  # every reader of the question's GPUs (argv, in-process trial, rule) sees it
        return self

    @property
    def model(self) -> str:
        """The HuggingFace id (a legacy CloudAI name mapped)."""
        return LEGACY_MODELS.get(self.model_name, self.model_name)

    @property
    def chosen(self) -> Agg | Disagg:
        """The mode's table: ``mode``'s, else the one given."""
        table = getattr(self, self.mode) if self.mode is not None else self.agg or self.disagg
        assert table is not None
        return table

    @property
    def gpus(self) -> int:
        return self.chosen.gpus


def moe_problem(args: AiconfiguratorArgs, moe: bool = False) -> str | None:
    """Why the MoE parallelism of a worker breaks the rule aiconfigurator's own sweep keeps
    (``enumerate_parallel_config``): ``moe_tp x moe_ep = tp x dp`` (the experts span the attention's GPUs), trtllm
    runs attention DP only at tp 1, vllm runs MoE TP or MoE EP, not both. Only where ``moe_tp``/``moe_ep`` are
    given and not both 1 (left out, or 1 and 1 as CloudAI writes them for a dense model, the package decides),
    unless ``moe``: the model is known to be MoE, and 1 and 1 must match the attention's width too."""
    table = args.chosen
    if isinstance(table, Agg):
        workers = [("", table.tp, table.dp, table.moe_tp, table.moe_ep)]
    else:
        workers = [("p_", table.p_tp, table.p_dp, table.p_moe_tp, table.p_moe_ep),
                   ("d_", table.d_tp, table.d_dp, table.d_moe_tp, table.d_moe_ep)]  # fmt: skip
    for role, tp, dp, moe_tp, moe_ep in workers:
        if moe_tp is None or moe_ep is None or (moe_tp == moe_ep == 1 and not moe):
            continue  # the package infers them (one given: the other)
        if moe_tp * moe_ep != tp * dp:
            return (f"{role}moe_tp x {role}moe_ep = {moe_tp * moe_ep} is not {role}tp x {role}dp = {tp * dp} "
                    "(aiconfigurator's rule: the experts span the attention's GPUs)")  # fmt: skip
        if args.backend == "trtllm" and dp > 1 and tp > 1:
            return f"trtllm runs attention DP only at tp 1 ({role}tp = {tp}, {role}dp = {dp})"
        if args.backend == "vllm" and moe_tp > 1 and moe_ep > 1:
            return f"vllm runs MoE TP or MoE EP, not both ({role}moe_tp = {moe_tp}, {role}moe_ep = {moe_ep})"
    return None


def request(args: AiconfiguratorArgs) -> dict[str, Any]:
    """The keyword arguments of ``aiconfigurator.cli.api.cli_estimate`` for these args (``backend_version`` None:
    the runner pins the release's default)."""
    out: dict[str, Any] = {
        "model_path": args.model,
        "system_name": args.system,
        "backend_name": args.backend,
        "backend_version": args.version,
        "isl": args.isl,
        "osl": args.osl,
    }
    mode = args.chosen
    for name in QUANT_FIELDS:
        value = getattr(mode, name) or getattr(args, name)
        if value is not None:
            out[name] = value
    return out | (_agg(mode) if isinstance(mode, Agg) else _disagg(mode))


def _agg(a: Agg) -> dict[str, Any]:
    out = {"mode": "agg", "batch_size": a.batch_size, "tp_size": a.tp, "pp_size": a.pp, "attention_dp_size": a.dp}
    optional = {"ctx_tokens": a.ctx_tokens, "moe_tp_size": a.moe_tp, "moe_ep_size": a.moe_ep}
    return out | {k: v for k, v in optional.items() if v is not None}


def _disagg(d: Disagg) -> dict[str, Any]:
    moe = {"prefill_moe_tp_size": d.p_moe_tp, "prefill_moe_ep_size": d.p_moe_ep, "decode_moe_tp_size": d.d_moe_tp,
           "decode_moe_ep_size": d.d_moe_ep}  # fmt: skip
    return {k: v for k, v in moe.items() if v is not None} | {
        "mode": "disagg",
        "prefill_tp_size": d.p_tp,
        "prefill_pp_size": d.p_pp,
        "prefill_attention_dp_size": d.p_dp,
        "prefill_batch_size": d.p_bs,
        "prefill_num_workers": d.p_workers,
        "decode_tp_size": d.d_tp,
        "decode_pp_size": d.d_pp,
        "decode_attention_dp_size": d.d_dp,
        "decode_batch_size": d.d_bs,
        "decode_num_workers": d.d_workers,
    }
