"""Write a tiny local model directory for Dynamo's mocker and aiperf, without the Hugging Face hub.

Run by ``cloudai install`` with the ``dynamo-mocker`` environment's interpreter (it imports ``tokenizers`` and
``transformers``, which cloudai itself does not have): ``python tiny_model.py DIR``. The mocker simulates the
engine, so the model needs no weights, only what the frontend and aiperf read: a tokenizer (a byte-level BPE of
2,000 tokens trained on the Python standard library's own text, ~140 kB) and a ``config.json`` of a tiny Llama
that names its ``architectures`` (without it the frontend never lists the model). Deterministic for one Python
and one ``tokenizers``: the same files every time.
"""

from __future__ import annotations

import sys
from pathlib import Path


def corpus() -> list[str]:
    """Local English-ish text: the docstrings of a fixed set of standard-library modules."""
    import argparse
    import collections
    import json
    import pathlib
    import subprocess
    import textwrap

    texts: list[str] = []
    for module in (argparse, collections, json, pathlib, subprocess, textwrap):
        texts += [str(getattr(module, name).__doc__) for name in sorted(dir(module)) if getattr(module, name).__doc__]
    return texts


def write(target: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # pyright: ignore[reportMissingImports]
    from transformers import LlamaConfig, PreTrainedTokenizerFast  # pyright: ignore[reportMissingImports]

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    special = ["<s>", "</s>"]
    trainer = trainers.BpeTrainer(
        vocab_size=2000, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(corpus(), trainer=trainer)
    chat = (
        "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</s>{% endfor %}"
        "{% if add_generation_prompt %}<s>assistant: {% endif %}"
    )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", chat_template=chat)
    target.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(target))
    config = LlamaConfig(
        vocab_size=bpe.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=8192,
        bos_token_id=bpe.token_to_id("<s>"), eos_token_id=bpe.token_to_id("</s>"),
    )  # fmt: skip
    config.architectures = ["LlamaForCausalLM"]
    config.save_pretrained(str(target))


if __name__ == "__main__":
    write(Path(sys.argv[1]))
