"""Fenced snippets of the user-facing docs, for the doc test (``tests/docs/test_docs.py``).

Every fence whose language is one of ``LANGS`` (bash/sh/shell, python, toml) is a snippet; a
fence without a language (output, layouts, synopses) is not. A snippet that cannot run here
(e.g. it needs a GPU cluster) is opted out with an HTML comment on the line right before its
fence, which Markdown renders as nothing::

    <!-- docs: skip needs a Slurm cluster with GPUs -->
    ```bash
    ...

The reason is required: it is shown as the test's skip reason. A snippet that starts a server the reader
leaves running (in one terminal, while the next snippets run in another) says so the same way::

    <!-- docs: server -->
    ```bash
    uv run cloudai serve ... --port 8000
    ...

The snippets after it that talk to its address run while it is up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LANGS = {"bash": "bash", "sh": "bash", "shell": "bash", "python": "python", "toml": "toml"}
_FENCE = re.compile(r"^(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
_SKIP = re.compile(r"^<!--\s*docs:\s*skip\s+(?P<why>\S.*?)\s*-->\s*$")
_SERVER = re.compile(r"^<!--\s*docs:\s*server\s*-->\s*$")


@dataclass(frozen=True)
class Snippet:
    file: str  # relative to the repository
    line: int  # the fence's line, 1-based
    lang: str  # bash, python or toml
    text: str
    skip: str | None = None
    server: bool = False  # a long-running server (``<!-- docs: server -->``)

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}:{self.lang}"


def snippets(path: Path, root: Path) -> list[Snippet]:
    """The snippets of one Markdown file, in order (an unclosed fence runs to the end of the file)."""
    found: list[Snippet] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        fence, start = match["fence"], index
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(fence)), len(lines))
        lang = LANGS.get(match["lang"].lower())
        if lang is not None:
            before = lines[start - 1].strip() if start > 0 else ""
            skip = _SKIP.match(before)
            text = "\n".join(lines[start + 1 : end]) + "\n"
            found.append(Snippet(str(path.relative_to(root)), start + 1, lang, text, skip["why"] if skip else None,
                                 _SERVER.match(before) is not None))  # fmt: skip
        index = end + 1
    return found
