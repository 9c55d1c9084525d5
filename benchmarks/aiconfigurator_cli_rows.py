"""Record ``aiconfigurator cli default``'s own top rows for a few questions, as the truth cloudai's trials are held to.

``tests/workloads/aiconfigurator/test_cli_default_rows.py`` runs a cloudai trial of each recorded configuration
and asserts it reports the row's numbers: the per-GPU throughput counted over all ``--total-gpus`` (whole
replicas, idle GPUs included), TTFT and TPOT. Two questions have rows whose replica does not divide the GPUs.
Rerun after an aiconfigurator upgrade (``cloudai install`` first; ~20 s a question):

    uv run python benchmarks/aiconfigurator_cli_rows.py > tests/workloads/aiconfigurator/cli_default_rows.json
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOP = 3  # rows per mode and question
QUESTIONS = {
    "qwen3-32b-h100-trtllm-16": ["--model-path", "Qwen/Qwen3-32B", "--system", "h100_sxm", "--backend", "trtllm",
                                 "--total-gpus", "16", "--isl", "4000", "--osl", "500", "--ttft", "2000",
                                 "--tpot", "30"],
    "llama3.1-8b-h200-sglang-12": ["--model-path", "meta-llama/Meta-Llama-3.1-8B", "--system", "h200_sxm", "--backend",
                                   "sglang", "--total-gpus", "12", "--isl", "1024", "--osl", "256", "--ttft", "500",
                                   "--tpot", "10"],
    "qwen3-30b-a3b-h200-vllm-10": ["--model-path", "Qwen/Qwen3-30B-A3B", "--system", "h200_sxm", "--backend", "vllm",
                                   "--total-gpus", "10", "--isl", "2000", "--osl", "1000", "--ttft", "1000",
                                   "--tpot", "20"],
}  # fmt: skip
MAIN = "import sys; from aiconfigurator.main import main; sys.argv[0] = 'aiconfigurator'; main()"


def record(python: str, argv: list[str]) -> dict[str, list[dict[str, str]]]:
    with tempfile.TemporaryDirectory() as out:
        cmd = [python, "-c", MAIN, "cli", "default", "--save-dir", out, "--top-n", str(TOP), *argv]
        subprocess.run(cmd, check=True, capture_output=True)
        rows: dict[str, list[dict[str, str]]] = {}
        for mode in ("agg", "disagg"):
            (path,) = Path(out).glob(f"**/{mode}/best_config_topn.csv")
            with path.open() as f:
                rows[mode] = list(csv.DictReader(f))[:TOP]
        return rows


def main() -> None:
    from cloudai.workloads.aiconfigurator.catalog import ENV

    install = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / ".cache" / "install"
    python = str(ENV.python(install))
    version = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('aiconfigurator'))"],
                             check=True, capture_output=True, text=True).stdout.strip()  # fmt: skip
    questions = {name: {"argv": argv, **record(python, argv)} for name, argv in QUESTIONS.items()}
    print(json.dumps({"aiconfigurator": version, "questions": questions}, indent=1))


if __name__ == "__main__":
    main()
