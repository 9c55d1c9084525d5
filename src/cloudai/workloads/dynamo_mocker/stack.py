"""The pinned Dynamo serving stack ``cloudai install`` puts under a system's ``install_path``, and a tiny model.

``ENV`` (``<install_path>/dynamo-1.6.1``): ai-dynamo 1.6.1 (``dynamo.frontend``, ``dynamo.mocker``), aiperf
0.13.0 and genai-perf 0.0.16, ~1.2 GB, ~7 s from a warm uv cache. ai-dynamo's own requirement ``aisimulate`` is a
PyPI stub that downloads from another index at build time, and only Dynamo's planner and ``--ais-perf-model``
use it: its other requirements (as ai-dynamo 1.6.1 declares them) are installed, then ai-dynamo without its
dependencies. Its interpreter is ``ENV.python(install_path)``; the tools are beside it (``bin/aiperf``).

``TINY_MODEL`` (``<install_path>/dynamo-tiny-model``): a model directory without the Hugging Face hub (a 2,000
token byte-level BPE tokenizer and a tiny Llama ``config.json``; no weights: the mocker simulates the engine),
installed only for a test whose ``model_path`` names it (``model_path = "./install/dynamo-tiny-model"``).
"""

from __future__ import annotations

from pathlib import Path

from cloudai.installables import Generated, PythonEnv

DYNAMO = "1.6.1"
_DYNAMO_REQUIRES = (  # ai-dynamo 1.6.1's Requires-Dist, less aisimulate
    f"ai-dynamo-runtime=={DYNAMO}", "aiohttp>=3.14.3,<4.0", "certifi>=2026.10.19", "kubernetes>=32.0.1,<33.0.0",
    "msgspec>=0.19.0", "prometheus-client>=0.23.1,<1.0", "pyzmq>=26.0.0", "redis>=6.2.0,<9.0.0", "tqdm>=4.0.0",
    "transformers>=4.56.0", "typing-extensions>=4.10.0", "zstandard>=0.23.0,<1.0",
)  # fmt: skip
ENV = PythonEnv(
    f"dynamo-{DYNAMO}", (*_DYNAMO_REQUIRES, "aiperf==0.13.0", "genai-perf==0.0.16"), no_deps=(f"ai-dynamo=={DYNAMO}",)
)
TINY_MODEL = Generated("dynamo-tiny-model", ENV, Path(__file__).with_name("tiny_model.py"))


def wants_tiny_model(model_path: str) -> bool:
    """A ``model_path`` that names the tiny model's directory asks ``cloudai install`` to make it."""
    return Path(model_path).name == TINY_MODEL.name
