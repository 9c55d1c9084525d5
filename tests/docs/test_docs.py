"""Documentation examples run: every fenced bash/python/toml snippet of README.md and the guide (docs/*.md).

Snippets are found by ``tests.docs.snippets`` (new doc sections are tested without touching this
file). How each language is checked:

* ``toml``: parses; a whole test file also loads as one (``load_test``), a system as a system.
* ``bash`` and ``python``: run exactly as a reader runs them (``tests.docs.reader``: a fresh shell in the
  repository root, the block's text unchanged, the reader's environment) and must exit 0. A block that talks to
  ``127.0.0.1:8000``/``localhost:8000`` runs while the server block before it (``<!-- docs: server -->``) is up.

A snippet that cannot run here at all carries ``<!-- docs: skip REASON -->`` in the doc itself (the reason is
the skip's); nothing is left out or rewritten here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import toml
from tests.conftest import REPO
from tests.docs import reader
from tests.docs.snippets import Snippet, snippets

from cloudai.config.system import system_from_dict
from cloudai.config.test import load_test

DOCS = ("README.md", *(f"docs/{p.name}" for p in sorted((REPO / "docs").glob("*.md"))))
SNIPPETS = [s for doc in DOCS for s in snippets(REPO / doc, REPO)]
LOCAL = ("localhost:8000", "127.0.0.1:8000")
ADDRESS = "127.0.0.1:8000"  # what a server's banner names once it is up

pytestmark = pytest.mark.docs


def server_of(snippet: Snippet) -> Snippet | None:
    """The server block a client snippet talks to: the last one before it in its file."""
    if snippet.server or not any(address in snippet.text for address in LOCAL):
        return None
    before = [s for s in SNIPPETS if s.file == snippet.file and s.line < snippet.line and s.server]
    if not before:
        pytest.fail(f"{snippet.id} talks to {LOCAL} but no <!-- docs: server --> block comes before it")
    return before[-1]


class Servers:
    """Server blocks, each started once per module (xdist worker) in its own network namespace."""

    def __init__(self, stack: ExitStack) -> None:
        self._stack = stack
        self._up: dict[str, tuple[int, reader.Server]] = {}

    def netns(self, server: Snippet) -> int:
        """The namespace where ``server`` is up (started on first use)."""
        if server.id not in self._up:
            try:
                netns = self._stack.enter_context(reader.network_namespace())
            except RuntimeError as exc:
                pytest.skip(f"DOC SERVER SNIPPET SKIPPED: {exc} (port 8000 is only ours in a namespace of our own)")
            up = reader.Server(server.lang, server.text, netns, ADDRESS)
            self._stack.callback(self._stop, server, up)
            self._up[server.id] = (netns, up)
        return self._up[server.id][0]

    @staticmethod
    def _stop(snippet: Snippet, server: reader.Server) -> None:
        code = server.stop()
        assert code == 130, f"{snippet.id}: Ctrl-C should stop it with 130, got {code}:\n{''.join(server.output)}"


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    with ExitStack() as stack:
        yield Servers(stack)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.id for s in SNIPPETS])
def test_doc_snippet_runs(snippet: Snippet, tmp_path: Path, servers: Servers) -> None:
    if snippet.skip:
        pytest.skip(snippet.skip)
    if snippet.lang == "toml":
        data = toml.loads(snippet.text)
        if "test_template_name" in data and "Tests" not in data:
            (tmp_path / "t.toml").write_text(snippet.text)
            load_test(tmp_path / "t.toml")
        elif "scheduler" in data:
            system_from_dict(data, tmp_path / "system.toml")
        return
    if snippet.server:
        servers.netns(snippet)  # up is its test (Ctrl-C's exit code is checked as the module ends)
        return
    server = server_of(snippet)
    netns = servers.netns(server) if server else None
    done = reader.run(snippet.lang, snippet.text, netns)
    assert done.returncode == 0, f"{snippet.id} (exit {done.returncode})\n{done.stdout}\n{done.stderr}"


def test_the_extractor_finds_every_language_and_honours_the_opt_out(tmp_path: Path) -> None:
    doc = tmp_path / "DOC.md"
    doc.write_text(
        "text\n```bash\necho a \\\n  b\n```\n```\nnot a snippet\n```\n"
        "<!-- docs: skip needs a GPU cluster -->\n```python\nimport nothing\n```\n```toml\na = 1\n```\n"
        "<!-- docs: server -->\n```bash\nuv run cloudai serve --port 8000\n```\n"
    )
    found = snippets(doc, tmp_path)
    assert [(s.lang, s.line, s.skip, s.server) for s in found] == [
        ("bash", 2, None, False), ("python", 10, "needs a GPU cluster", False), ("toml", 13, None, False),
        ("bash", 17, None, True),
    ]  # fmt: skip


def test_a_reader_has_not_activated_the_venv() -> None:
    """How ``PATH=stand-in:$PATH cloudai run`` passed here and was ``command not found`` for readers: the doc test
    ran with the venv's ``bin`` on PATH. A reader's shell finds ``uv``, and ``cloudai`` only through it."""
    shell = {"PATH": f"{REPO / '.venv' / 'bin'}:/no/a:/no/b", "VIRTUAL_ENV": str(REPO / ".venv"),
             "UV": "/opt/uv/bin/uv", "UV_RUN_RECURSION_DEPTH": "1", "CLOUDAI_REPORT": "inline"}  # fmt: skip
    env = reader.reader_env(shell)
    assert env == {"PATH": "/no/a:/no/b:/opt/uv/bin"}
    done = reader.run("bash", "command -v cloudai || echo 'not on PATH'\n")
    assert done.stdout == "not on PATH\n", done.stdout
