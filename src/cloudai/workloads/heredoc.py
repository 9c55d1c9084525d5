"""Files a job writes for itself (a wrapper script, a tool's config), and reading them back from a rendered script.

A workload knows nothing of systems, so a file its job needs is written by the job script itself: a quoted
heredoc in a batch-shell step (nothing in it is expanded), so ``dry-run``'s script holds the file verbatim.
``write_lines`` renders one; ``written_files`` reads every such file of a rendered script back (tests, and a
user reading a dry-run). A heredoc whose text must be expanded by the shell (cuFile's log level) is not this.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

_WRITE = re.compile(r"^cat > (.+) <<'([A-Z_]+)'$", re.M)


def write_lines(path: Path | str, text: str, end: str, executable: bool = False) -> list[str]:
    """Batch-shell lines that write ``text`` and a newline to ``path`` (then ``chmod +x`` it when ``executable``).

    ``end`` (upper case and underscores) closes the heredoc; it gets one more ``_`` while a line of ``text``
    equals it, so no text can end the heredoc early (a quoted argument may hold a newline)."""
    while end in text.splitlines():
        end += "_"
    quoted = shlex.quote(str(path))
    return [f"cat > {quoted} <<'{end}'", text, end, *([f"chmod +x {quoted}"] if executable else [])]


def written_files(script: str) -> dict[str, str]:
    """Every file ``script`` writes with ``write_lines``, by file name: its text (without the final newline)."""
    files: dict[str, str] = {}
    for found in _WRITE.finditer(script):
        end, body = found.group(2), script[found.end() + 1 :]
        stop = 0 if body.startswith(f"{end}\n") else body.find(f"\n{end}\n")
        files[Path(shlex.split(found.group(1))[0]).name] = body[:stop] if stop >= 0 else ""
    return files
