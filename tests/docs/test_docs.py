"""Documentation examples run: every fenced bash/python/toml snippet of README.md and USER_GUIDE.md.

Snippets are found by ``tests.docs.snippets`` (new doc sections are tested without touching this
file). How each language is checked:

* ``toml``: parses; a whole test file also loads as one (``load_test``), a system as a system.
* ``python``: runs in a fresh interpreter, in a scratch directory where ``conf/`` is the repo's.
* ``bash``: each ``cloudai``/``uv run cloudai`` command runs (as ``python -m cloudai``) in that
  scratch directory and must exit 0; ``curl`` runs as written.

A snippet that talks to ``localhost:8000``/``127.0.0.1:8000`` gets a real ``cloudai serve`` of the
README's served test (``dse_synthetic``) on a free port, with ``$CLOUDAI_SERVE_TOKEN`` set when the
snippet uses it. Commands that would run long are in ``SKIPPED_COMMANDS`` (with the test that covers
them) or get a small textual override in ``OVERRIDES``; a snippet that cannot run here at all
carries ``<!-- docs: skip REASON -->`` in the doc itself.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import toml
from tests.conftest import REPO
from tests.docs.snippets import Snippet, commands, snippets
from tests.serve.serving import ServeProcess

from cloudai.config.system import system_from_dict
from cloudai.config.test import load_test

DOCS = ("README.md", "USER_GUIDE.md")
SNIPPETS = [s for doc in DOCS for s in snippets(REPO / doc, REPO)]

# Commands not run here, each with why and what covers it instead.
SKIPPED_COMMANDS = {
    "uv run pytest": "the test suite itself (.ci/run runs it)",
    "uv run cloudai run --tests-dir conf/common/test --test-scenario conf/common/test_scenario/dse_synthetic.toml":
        "40 real trials; tests/dse/test_dse_conf.py runs the shipped DSE scenarios",
}  # fmt: skip
# Small textual overrides that keep a long example short; the rest of the snippet runs as written.
OVERRIDES = {
    "for t in range(2 * n):": "for t in range(3):",  # the epsilon-greedy loop: 3 real trials, not 192
}
SERVED = (
    "--tests-dir",
    REPO / "conf/common/test",
    "--test-scenario",
    REPO / "conf/common/test_scenario/dse_synthetic.toml",
)
# openenv-core imports its optional web UI (gradio, ~10 s of CPU) unless that raises ModuleNotFoundError; a
# client snippet never uses it (the snippet runs as written after this one line).
NO_WEB_UI = 'import sys; sys.modules.setdefault("gradio", None)\n'
LOCAL = ("localhost:8000", "127.0.0.1:8000")
TOKEN = "docs-test-token"

pytestmark = pytest.mark.docs


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A working directory whose ``conf/`` is the repository's; results land here, not in the repo."""
    (tmp_path / "conf").symlink_to(REPO / "conf")
    return tmp_path


@contextmanager
def server_for(snippet: Snippet, scratch: Path) -> Iterator[dict[str, str]]:
    """``{"host:port", env}`` replacements when the snippet talks to a local server; ``{}`` otherwise."""
    if not any(address in snippet.text for address in LOCAL):
        yield {}
        return
    env = {"CLOUDAI_SERVE_TOKEN": TOKEN} if "CLOUDAI_SERVE_TOKEN" in snippet.text else {}
    with ServeProcess(*SERVED, "--output-dir", scratch / "served", env=env) as server:
        yield {"address": server.url.removeprefix("http://"), **env}
        server.stop(15)


def _text(snippet: Snippet, served: dict[str, str]) -> str:
    text = snippet.text
    for old, new in OVERRIDES.items():
        text = text.replace(old, new)
    for address in LOCAL if served else ():
        text = text.replace(address, served["address"])
    return text


def _env(served: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("UV", "UV_RUN_RECURSION_DEPTH")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))  # "from a checkout"
    return {**env, **{k: v for k, v in served.items() if k != "address"}}


def _run_bash(text: str, cwd: Path, env: dict[str, str]) -> list[str]:
    ran = []
    for command in commands(text):
        if command in SKIPPED_COMMANDS:
            continue
        words = shlex.split(command)
        if words[:2] == ["uv", "run"]:
            words = words[2:]
        if words[0] == "cloudai":
            argv = [sys.executable, "-m", "cloudai", *words[1:]]
        elif words[0] == "curl":
            argv = ["bash", "-c", command]  # as written, with the shell's variable expansion
        else:
            pytest.fail(f"no rule to run {command!r}: add one to tests/docs/test_docs.py or opt the snippet out")
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        if words[0] == "curl":
            assert '"observation"' in done.stdout, f"{command}\n{done.stdout}"
        ran.append(command)
    return ran


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s.id for s in SNIPPETS])
def test_doc_snippet_runs(snippet: Snippet, scratch: Path) -> None:
    if snippet.skip:
        pytest.skip(snippet.skip)
    if snippet.lang == "toml":
        data = toml.loads(snippet.text)
        if "test_template_name" in data and "Tests" not in data:
            (scratch / "t.toml").write_text(snippet.text)
            load_test(scratch / "t.toml")
        elif "scheduler" in data:
            system_from_dict(data, scratch / "system.toml")
        return
    with server_for(snippet, scratch) as served:
        text, env = _text(snippet, served), _env(served)
        if snippet.lang == "python":
            text = NO_WEB_UI + text if "openenv" in text else text
            done = subprocess.run([sys.executable, "-c", text], cwd=scratch, env=env, capture_output=True, text=True,
                                  timeout=180)  # fmt: skip
            assert done.returncode == 0, f"{snippet.id}\n{done.stdout}\n{done.stderr}"
        else:
            ran = _run_bash(text, scratch, env)
            if not ran:
                pytest.skip(f"every command is in SKIPPED_COMMANDS: {commands(text)}")


def test_the_extractor_finds_every_language_and_honours_the_opt_out(tmp_path: Path) -> None:
    doc = tmp_path / "DOC.md"
    doc.write_text(
        "text\n```bash\necho a \\\n  b\n```\n```\nnot a snippet\n```\n"
        "<!-- docs: skip needs a GPU cluster -->\n```python\nimport nothing\n```\n```toml\na = 1\n```\n"
    )
    found = snippets(doc, tmp_path)
    assert [(s.lang, s.line, s.skip) for s in found] == [("bash", 2, None), ("python", 10, "needs a GPU cluster"),
                                                         ("toml", 13, None)]  # fmt: skip
    assert commands(found[0].text) == ["echo a b"]
