"""The one place values become shell or ``#SBATCH`` text. Every renderer calls these; none quotes by hand.

* ``quote``/``join``: a value is one shell word, whatever it holds (``$(…)``, backticks, ``;``,
  quotes, newlines) — ``shlex.quote``, after refusing a NUL (no process can receive one);
* ``export_line(s)``: ``export NAME='value'``; the name must be an environment variable name,
  so a key like ``X;touch p;Y`` can never become code;
* ``directive``: one ``#SBATCH`` line; a newline or other control character in it would end the
  header early (Slurm then ignores ``--output``, ``--time``, ``--partition`` ...), so it is refused.

The config models refuse these values at load (exit 2, file and field named); the checks here
are the backstop for anything that reaches a script by another path (a CLI flag, a plugin).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

from cloudai.config.fields import ENV_NAME, shown
from cloudai.errors import ConfigError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BARE = re.compile(r"[\w@%+=:,./-][\w@%+=:,./#-]*", re.ASCII)  # shlex's safe characters, and # past the start


def quote(value: str) -> str:
    """``value`` as exactly one shell word (left bare when it needs no quotes: a ``#`` inside a word starts
    no comment, so CloudAI's ``nvcr.io#nvidia/pytorch`` images render as CloudAI renders them)."""
    if "\x00" in value:
        raise ConfigError(f"value {shown(value)} holds a NUL character, which no script can carry")
    return value if _BARE.fullmatch(value) else shlex.quote(value)


_LEADING_REF = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*\})")


def quote_expanding(literal: str, items: Iterable[str], sep: str = ",") -> str:
    """One shell word: ``literal`` then ``items`` joined by ``sep``, everything quoted except a ``$NAME`` /
    ``${NAME}`` that starts an item, which the shell expands (in double quotes: one word whatever it holds).
    CloudAI's ``extra_container_mounts = ["$PWD/conf/...:/dst"]`` thus gets the batch shell's ``$PWD``."""
    parts, text = [], literal
    for index, item in enumerate(items):
        text += sep if index else ""
        ref = _LEADING_REF.match(item)
        if ref:
            parts += [quote(text)] if text else []
            parts.append(f'"{ref.group()}"')
            text = item[ref.end() :]
        else:
            text += item
    return "".join([*parts, quote(text)] if text else parts)


def join(argv: Iterable[str]) -> str:
    """``argv`` as shell words, each quoted."""
    return " ".join(quote(word) for word in argv)


def export_line(name: str, value: str) -> str:
    """``export NAME='value'``; ``ConfigError`` when ``name`` is not an environment variable name."""
    if not ENV_NAME.fullmatch(name):
        raise ConfigError(
            f"environment variable name {shown(name)} is not allowed",
            hint="use letters, digits and _ ([A-Za-z_][A-Za-z0-9_]*)",
        )
    return f"export {name}={quote(value)}"


def export_lines(*envs: Mapping[str, str]) -> list[str]:
    """``export`` lines for each variable, later mappings overriding earlier ones."""
    merged: dict[str, str] = {}
    for env in envs:
        merged.update(env)
    return [export_line(name, value) for name, value in merged.items()]


def directive(text: str, prefix: str = "#SBATCH") -> str:
    """One header line ``#SBATCH <text>``; ``ConfigError`` when ``text`` would break the header."""
    if _CONTROL.search(text):
        raise ConfigError(
            f"{prefix} line {shown(text)} holds a newline or control character",
            hint="job names, paths, partitions and sbatch arguments must be one line",
        )
    return f"{prefix} {text}"
