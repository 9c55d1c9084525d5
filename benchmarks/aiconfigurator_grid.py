"""Evaluate a disaggregated-serving grid with aiconfigurator in one process (run by the env's Python).

Used by ``bench_aiconfigurator.py --section landscape``: argv = OUT_CSV [large]; writes one row per point:
p_tp,p_bs,p_workers,d_tp,d_bs,d_workers,ok,ttft_ms,tpot_ms,tokens_per_s_per_gpu,tokens_per_s_per_user,reason.
Imports only the standard library and aiconfigurator.
"""

import csv
import itertools
import sys

from aiconfigurator.cli.api import cli_estimate  # pyright: ignore[reportMissingImports]

GRID = {
    "p_tp": [1, 2, 4],
    "p_bs": [1, 2, 4],
    "p_workers": [1, 2, 4],
    "d_tp": [1, 2, 4, 8],
    "d_bs": [1, 4, 16, 32, 64, 128, 256],
    "d_workers": [1, 2],
}
LARGE = {  # 9 216 points: ~28 ms of CPU each (4.3 min), much longer on a loaded machine
    "p_tp": [1, 2, 4, 8],
    "p_bs": [1, 2, 4, 8],
    "p_workers": [1, 2, 3, 4],
    "d_tp": [1, 2, 4, 8],
    "d_bs": [1, 2, 4, 8, 16, 32, 64, 128, 256],
    "d_workers": [1, 2, 3, 4],
}
FIXED = {
    "model_path": "meta-llama/Meta-Llama-3.1-70B", "system_name": "h200_sxm", "backend_name": "trtllm",
    "backend_version": "1.3.0rc20", "isl": 4000, "osl": 500, "mode": "disagg",
    "gemm_quant_mode": "fp8_block", "kvcache_quant_mode": "fp8", "fmha_quant_mode": "fp8",
}  # fmt: skip


def main(out: str, grid: dict[str, list[int]]) -> None:
    names = list(grid)
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*names, "ok", "ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "reason"])
        for values in itertools.product(*grid.values()):
            p = dict(zip(names, values, strict=True))
            kwargs = {
                "prefill_tp_size": p["p_tp"], "prefill_batch_size": p["p_bs"], "prefill_num_workers": p["p_workers"],
                "decode_tp_size": p["d_tp"], "decode_batch_size": p["d_bs"], "decode_num_workers": p["d_workers"],
            }  # fmt: skip
            try:
                raw = cli_estimate(**FIXED, **kwargs).raw
                row = [1, raw["ttft"], raw["tpot"], raw["tokens/s/gpu"], raw["tokens/s/user"], ""]
            except (RuntimeError, ValueError, KeyError, AssertionError) as exc:
                row = [0, "", "", "", "", " ".join(str(exc).split())[:80]]
            writer.writerow([*values, *row])


if __name__ == "__main__":
    main(sys.argv[1], LARGE if sys.argv[2:] == ["large"] else GRID)
