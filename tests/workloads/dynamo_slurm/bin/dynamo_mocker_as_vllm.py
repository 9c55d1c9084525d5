"""Stand-in for ``python3 -m dynamo.vllm`` (this machine has no GPU): Dynamo's own mocker engine (``dynamo.mocker``,
installed with ai-dynamo) started with the worker's vLLM flags translated, so an AIDynamo job renders and runs as on
a GPU cluster with only the worker command swapped.

``--model M`` becomes ``--model-path M --model-name M`` (the mocker serves its tokenizer dir under that name); the
flags that place a real model on GPUs (tensor/pipeline parallelism, expert parallelism, the KV-transfer connector)
have no meaning for the mocker and are dropped; every other flag (``--is-prefill-worker``,
``--gpu-memory-utilization``, ``--data-parallel-size``, the worker's extra args) goes to the mocker as given.
"""

import os
import sys

DROPPED = {"--tensor-parallel-size": 1, "--pipeline-parallel-size": 1, "--kv-transfer-config": 1,
           "--no-enable-expert-parallel": 0, "--enable-expert-parallel": 0}  # fmt: skip


def translated(argv: list[str]) -> list[str]:
    out: list[str] = []
    words = iter(argv)
    for word in words:
        name = word.split("=", 1)[0]
        if name in DROPPED:
            if "=" not in word:
                for _ in range(DROPPED[name]):
                    next(words)
        elif name == "--model":
            model = word.split("=", 1)[1] if "=" in word else next(words)
            out += ["--model-path", model, "--model-name", model]
        else:
            out.append(word)
    return out


if __name__ == "__main__":
    argv = [sys.executable, "-m", "dynamo.mocker", *translated(sys.argv[1:])]
    print("cloudai stand-in:", " ".join(argv), flush=True)
    os.execv(sys.executable, argv)
