"""Field types and checks shared by the config models: the rules every loaded value obeys.

Each rule exists because a value that broke it once reached deep code and became a
traceback, a silent surprise or a shell injection (issue 17):

* ``StrictPositiveInt``/``Seed``: ``true`` is not a count, ``-1`` is not a seed (numpy and
  Optuna take seeds in ``0..2**32-1``);
* ``ENV_NAME``: an environment variable name is ``[A-Za-z_][A-Za-z0-9_]*``, so a name can
  never carry ``=``, ``;`` or a newline into a script;
* ``check_text``: no NUL anywhere (the OS cannot pass one to a process), and no newline or
  other control character in a value that names something (an id, a Slurm header field).

Messages echo the offending value (``repr``, shortened) so the user sees what was read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, Strict

MAX_SEED = 2**32 - 1
StrictPositiveInt = Annotated[int, Strict(), Field(ge=1)]


class _RunByShell:
    """The mark of ``ShellCode`` (found in a field's metadata by tests/reliability/test_shell_payloads.py)."""

    def __repr__(self) -> str:
        return "SHELL_CODE"


SHELL_CODE = _RunByShell()
# Text a shell runs as written, on purpose (BashCmd's ``cmd``): the user writes bash there. Every other string field
# reaches a script as data (quoted) or is refused at load; the payload harness leaves only these out.
ShellCode = Annotated[str, SHELL_CODE]


def _expandable(value: str) -> str:
    from cloudai.steps import var_safe

    if not var_safe(value):
        raise ValueError(
            f"{shown(value)} may hold only text and $NAME / ${{NAME}} references (the job's shell expands those): "
            "no $(...), backticks, quotes, backslashes or control characters"
        )
    return value


# Text a job script puts inside a word the shell expands (CloudAI's ``bench_host = "$SLURM_JOB_MASTER_NODE"``,
# a URL path): variable references work, nothing else of the shell's is allowed (checked at load, exit 2).
ExpandableText = Annotated[str, AfterValidator(_expandable)]


def _digits_to_int(value: Any) -> Any:
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else value


def _time_limit_text(value: str | int) -> str | int:
    from cloudai.config.timelimit import parse_time_limit

    parse_time_limit(value)  # ValueError names the accepted forms
    return value


# A Slurm-style duration kept as written (``"00:10:00"`` or whole minutes), checked when read.
TimeLimitText = Annotated[str | int, AfterValidator(_time_limit_text)]

# CloudAI's own scenarios write ``num_nodes = "2"``: a string of digits is a count too (``true`` is not).
NodeCount = Annotated[int, BeforeValidator(_digits_to_int), Strict(), Field(ge=1)]
Seed = Annotated[int, Strict(), Field(ge=0, le=MAX_SEED)]
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters: safe to echo in one line of a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_env_name(name: str) -> str:
    """``name`` when it is a valid environment variable name; else ``ValueError`` echoing it."""
    if not ENV_NAME.fullmatch(name):
        raise ValueError(f"environment variable name {shown(name)} is not allowed; use [A-Za-z_][A-Za-z0-9_]*")
    return name


def check_env(env: Mapping[str, Any]) -> Mapping[str, Any]:
    """Names checked with ``check_env_name``; values are data but may hold no NUL and be no range."""
    for name, value in env.items():
        check_env_name(name)
        if isinstance(value, Mapping):
            raise ValueError(
                f"extra_env_vars.{name} is a table {shown(dict(value))}; give a value or a list of values to sweep"
            )
        check_no_nul(value, f"extra_env_vars.{name}")
    return env


def check_no_nul(value: Any, where: str) -> None:
    """No NUL character in any string inside ``value`` (nested tables and lists included)."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{where} holds a NUL character ({shown(value)}); no process can receive it")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_no_nul(item, f"{where}.{key}")
    elif isinstance(value, list):
        for item in value:
            check_no_nul(item, where)


def has_control(text: str) -> bool:
    """A newline or another control character: it would end a script line or an #SBATCH header."""
    return _CONTROL.search(text) is not None


def check_one_line(value: str, what: str) -> str:
    """``value`` when it holds no newline or other control character (it names a dir or a header line)."""
    if _CONTROL.search(value):
        raise ValueError(f"{what} {shown(value)} holds a newline or control character, which is not allowed")
    return value


# A scenario name and an entry id each name a directory (``<name>_<date>_<time>``, ``<id>/<iteration>``); Linux
# allows 255 bytes per name, less the run dir's 24-byte date suffix and a hook's ``pre_test.`` prefix.
MAX_DIR_NAME = 200


def check_dir_name(value: str, what: str) -> str:
    """``value`` when it is one line and short enough to name a directory (``MAX_DIR_NAME`` bytes in UTF-8)."""
    check_one_line(value, what)
    size = len(value.encode())
    if size > MAX_DIR_NAME:
        raise ValueError(
            f"{what} is {size} bytes long; at most {MAX_DIR_NAME} (it names a results directory): shorten it"
        )
    return value


# A container mount as pyxis takes it: SRC[:DST[:FLAGS]], each path absolute (or starting with a $VAR / ${VAR}
# the batch shell expands, as CloudAI's ``$PWD/conf/...``), flags letters, = and - (``ro``, ``x-create=dir``).
_MOUNT_PATH = r"(/|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\})[^:,\s]*"
MOUNT = re.compile(rf"{_MOUNT_PATH}(:/[^:,\s]*(:[A-Za-z][A-Za-z0-9=+-]*)?)?")


def check_mounts(mounts: list[str]) -> list[str]:
    """``extra_container_mounts``: one mount per entry (a ``,`` would smuggle in another, e.g. ``/:/host``)."""
    for index, mount in enumerate(mounts):
        if not MOUNT.fullmatch(mount):
            raise ValueError(
                f"mount [{index}] {shown(mount)} is not SRC[:DST[:FLAGS]] with absolute paths (one mount per entry: "
                "no ',', whitespace or newline; SRC may start with $VAR)"
            )
    return mounts
