"""Evaluate a disaggregated-serving grid with aiconfigurator in one process (run by the env's Python).

Used by ``bench_aiconfigurator.py --section landscape``: argv = OUT_CSV [small|large|full] [SHARD COUNT]; writes
one row per point (the knobs, then ok,ttft_ms,tpot_ms,tokens_per_s_per_gpu,tokens_per_s_per_user,reason); with
SHARD/COUNT only every COUNT-th point from SHARD on, so that several processes share the work.
Imports only the standard library and aiconfigurator.
"""

import csv
import itertools
import sys
from pathlib import Path

from aiconfigurator.cli.api import cli_estimate  # pyright: ignore[reportMissingImports]
from aiconfigurator.sdk import inference_session, models  # pyright: ignore[reportMissingImports]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src" / "cloudai" / "workloads" / "aiconfigurator"))
from runner import _reuse_database_views

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
FULL = {  # the landscape, 82 944 points: ~40 min of CPU
    "p_tp": [1, 2, 4, 8],
    "p_pp": [1, 2, 4],
    "p_bs": [1, 2, 4, 8],
    "p_workers": [1, 2, 3, 4],
    "d_tp": [1, 2, 4, 8],
    "d_pp": [1, 2, 4],
    "d_bs": [1, 2, 4, 8, 16, 32, 64, 128, 256],
    "d_workers": [1, 2, 3, 4],
}
GRIDS = {"small": GRID, "large": LARGE, "full": FULL}
ARGS = {
    "p_tp": "prefill_tp_size", "p_pp": "prefill_pp_size", "p_bs": "prefill_batch_size",
    "p_workers": "prefill_num_workers", "d_tp": "decode_tp_size", "d_pp": "decode_pp_size",
    "d_bs": "decode_batch_size", "d_workers": "decode_num_workers",
}  # fmt: skip
FIXED = {
    "model_path": "meta-llama/Meta-Llama-3.1-70B", "system_name": "h200_sxm", "backend_name": "trtllm",
    "backend_version": "1.3.0rc20", "isl": 4000, "osl": 500, "mode": "disagg",
    "gemm_quant_mode": "fp8_block", "kvcache_quant_mode": "fp8", "fmha_quant_mode": "fp8",
}  # fmt: skip


def memoize_workers() -> None:
    """A disagg estimate is two database lookups (reused as the trial runner reuses them), two static runs (the
    prefill worker, the decode worker) and their combination; a grid repeats each worker's run for every partner
    and worker count (82 944 points, 48 prefill and 108 decode workers). Each static run is computed once per
    arguments, the combination per point as the package does it: the same numbers (checked against 5 751
    unmemoized rows), ~5x faster than without either."""
    _reuse_database_views()
    get_model, run_static = models.get_model, inference_session.InferenceSession.run_static
    cache: dict[str, object] = {}

    def tagged_model(model_path, model_config, *args, **kwargs):
        model = get_model(model_path, model_config, *args, **kwargs)
        model.cloudai_key = repr((model_path, model_config, args, kwargs))
        return model

    def cached_run(self, runtime_config, mode, *args, **kwargs):
        key = getattr(self._model, "cloudai_key", None)
        if key is None:
            return run_static(self, runtime_config, mode, *args, **kwargs)
        key = repr((key, runtime_config, mode, args, sorted(kwargs.items())))
        if key not in cache:
            cache[key] = run_static(self, runtime_config, mode, *args, **kwargs)
        return cache[key]

    models.get_model = tagged_model
    inference_session.InferenceSession.run_static = cached_run


def main(out: str, grid: dict[str, list[int]], shard: int, count: int) -> None:
    names = list(grid)
    with open(out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*names, "ok", "ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "reason"])
        for values in itertools.islice(itertools.product(*grid.values()), shard, None, count):
            kwargs = {ARGS[name]: value for name, value in zip(names, values, strict=True)}
            try:
                raw = cli_estimate(**FIXED, **kwargs).raw
                row = [1, raw["ttft"], raw["tpot"], raw["tokens/s/gpu"], raw["tokens/s/user"], ""]
            except (RuntimeError, ValueError, KeyError, AssertionError) as exc:
                row = [0, "", "", "", "", " ".join(str(exc).split())[:80]]
            writer.writerow([*values, *row])


if __name__ == "__main__":
    size, shard, count = (sys.argv[2:] + ["small", "0", "1"][len(sys.argv[2:]) :])[:3]
    memoize_workers()
    main(sys.argv[1], GRIDS[size], int(shard), int(count))
