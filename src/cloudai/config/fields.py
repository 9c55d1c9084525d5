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

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
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


# Linux refuses an environment string (``NAME=value``) longer than MAX_ARG_STRLEN (32 pages): the job's exec fails
# with E2BIG ("Argument list too long") before it starts.
MAX_ENV_ENTRY = 128 * 1024


def check_env(env: Mapping[str, Any]) -> Mapping[str, Any]:
    """Names checked with ``check_env_name``; values are data but may hold no NUL, be no range, and fit in one
    environment string (``MAX_ENV_ENTRY``)."""
    for name, value in env.items():
        check_env_name(name)
        if isinstance(value, Mapping):
            raise ValueError(
                f"extra_env_vars.{name} is a table {shown(dict(value))}; give a value or a list of values to sweep"
            )
        check_no_nul(value, f"extra_env_vars.{name}")
        for item in value if isinstance(value, list) else [value]:
            size = len(f"{name}={item}".encode()) + 1
            if size > MAX_ENV_ENTRY:
                raise ValueError(
                    f"extra_env_vars.{name} is {size} bytes long; Linux passes at most {MAX_ENV_ENTRY} bytes per "
                    "environment variable (NAME=value): put the data in a file and pass its path"
                )
    return env


# A key under cmd_args or extra_cmd_args becomes a flag name (``--key``) or a Hydra override: letters, digits and
# ``_ . + -`` only (extra_cmd_args may also start with ``-``, ``+`` or ``~``, as NeMo's ``+a.b`` and ``~a.b``).
_ARG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_EXTRA_KEY = re.compile(r"[A-Za-z0-9_+~-][A-Za-z0-9_.+~-]*")


def check_arg_keys(table: Mapping[str, Any], where: str, *, extra: bool = False) -> None:
    """Every key under ``table`` (nested tables and lists of tables too) is a flag name: no space, quote, ``;``,
    ``$``, backtick, ``=`` or newline can become part of a command line through a key."""
    pattern = _EXTRA_KEY if extra else _ARG_KEY
    for key, value in table.items():
        if not pattern.fullmatch(key):
            raise ValueError(f"{where}: key {shown(key)} is not a flag name; use letters, digits and _ . + - only")
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, Mapping):
                check_arg_keys(item, f"{where}.{key}", extra=extra)


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


# Numbers a job gets (issue 35): every cmd_args value anywhere is finite, and a value whose name says what it is
# (a parallel size, a port, a fraction, a count, a duration) lies in that kind's range, whatever workload declares
# it, and whether it declares it at all (vLLM's and SGLang's serve flags pass through by name). ``number_problem``
# is the one rule; ``Workload.validate`` asks it of every candidate of every knob (lists element-wise, range ends),
# the typed aliases below say the same for declared fields.
MAX_GPUS = 1 << 20  # parallel sizes and GPU counts: the largest clusters hold ~10^5 GPUs
MAX_COUNT = 2**31 - 1  # any other count: the tools read it into a C int
MAX_SECONDS = 366 * 86400  # a wait or duration: a year at most


@dataclass(frozen=True)
class Bound:
    """A closed range ``low..high`` (``low_open``: ``(low, high]``) of integers or of finite numbers."""

    kind: str
    low: float
    high: float
    integer: bool = True
    low_open: bool = False

    @property
    def text(self) -> str:
        low, high = (int(v) if v == int(v) else v for v in (self.low, self.high))
        if self.integer:
            return f"an integer in {low}..{high}"
        return f"a number in {'(' if self.low_open else '['}{low}, {high}]"

    def problem(self, value: float) -> str | None:
        low_ok = value > self.low if self.low_open else value >= self.low
        if (self.integer and value != int(value)) or not low_ok or value > self.high:
            return f"{self.kind} must be {self.text} (got {shown(value)})"
        return None


PARALLEL = Bound("a parallel size", 1, MAX_GPUS)
GPUS = Bound("a GPU or process count", 1, MAX_GPUS)
NODES = Bound("a node count", 0, MAX_GPUS)
PORT = Bound("a port", 1, 65535)
FRACTION = Bound("a fraction", 0, 1, integer=False, low_open=True)
POSITIVE = Bound("a count", 1, MAX_COUNT)
COUNT = Bound("a count", 0, MAX_COUNT)
SECONDS = Bound("a duration in seconds", 0, MAX_SECONDS, integer=False)

# (pattern over the key's last dotted segment, lower case, ``-`` read as ``_``; bound), first match wins.
_RULES: tuple[tuple[re.Pattern[str], Bound], ...] = tuple(
    (re.compile(pattern), bound)
    for pattern, bound in (
        (r"(.*_)?(parallel_size|parallelism)|(.*_)?(tp|pp|cp|ep|dp|vp|etp)(_size)?|et", PARALLEL),
        (r"(.*_)?ports?", PORT),
        (r".*_(utilization|fraction)(_.*)?", FRACTION),
        (r"n?gpus|num_gpus|.*gpus_per_node|num_processes(_per_node)?|nproc_per_node|num_tasks_per_node", GPUS),
        (r"(.*_)?num_nodes", NODES),
        (r"num_(experts|prompts|workers|layers|tokens|topk)|(.*_)?batch_size|gb|mb|(.*_)?concurrency", POSITIVE),
        (r"chunk_?size|request_count|(.*_)?replicas|nthreads", POSITIVE),
        (
            r"(.*_)?(hidden|hidden_size|hidden_dims|model_dims|dims_per_head|vocab_size|max_position_embeddings)",
            POSITIVE,
        ),
        (r"(.*_)?(seq_length|seq_len|sequence_length)|(input_|output_)?tokens", POSITIVE),
        (r"(.*_)?seed", Bound("a seed", 0, MAX_SEED)),
        (r"num_.*|(.*_)?iters|(.*_)?iterations|(.*_)?warmups?(_iters)?|max_steps|.*_count", COUNT),
        (r"(.*_)?seconds|.*_secs|.*_timeout(_s)?|timeout", SECONDS),
    )
)


def bound_of(name: str) -> Bound | None:
    """The range a value named ``name`` (``a.b.tensor-parallel-size`` reads as ``tensor_parallel_size``) must lie
    in, or None when its name says nothing."""
    key = name.rsplit(".", 1)[-1].lstrip("-").replace("-", "_").lower()
    return next((bound for pattern, bound in _RULES if pattern.fullmatch(key)), None)


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value) if value.strip().lower().lstrip("+-") in ("inf", "infinity", "nan") else int(value)
        except ValueError:
            return None
    return None


def number_problem(name: str, value: Any) -> str | None:
    """Why ``value`` given for ``name`` is no number a job can take: NaN or infinite anywhere, or outside the
    range ``bound_of(name)`` says (under such a name a string of digits counts too: ``port = "-1"``); None when it
    is fine."""
    bound = bound_of(name)
    if isinstance(value, str) and bound is None:
        return None  # text under a name that says nothing is text ("nan" may be a mode's name)
    number = _as_number(value)
    if number is None:
        return None
    if not math.isfinite(number):
        return f"must be a finite number (got {shown(value)})"
    return bound.problem(number) if bound is not None else None


def number_problems(values: Any, path: str = "") -> list[tuple[str, str]]:
    """``(dotted path, message)`` for each value under ``values`` (nested tables and lists) ``number_problem``
    refuses."""
    if isinstance(values, Mapping):
        return [p for key, item in values.items() for p in number_problems(item, f"{path}.{key}" if path else key)]
    if isinstance(values, list | tuple):
        return [p for item in values for p in number_problems(item, path)]
    problem = number_problem(path, values)
    return [] if problem is None else [(path, problem)]


def _bounded(bound: Bound) -> AfterValidator:
    def check(value: Any) -> Any:
        problem = bound.problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    return AfterValidator(check)


# The same bounds as field types, for a declared field whose name says nothing (DDLB's ``m``) or that a workload
# reads before ``validate`` could (a model validated on its own). Not strict: CloudAI's files write "8" for 8.
ParallelSize = Annotated[int, _bounded(PARALLEL)]
Port = Annotated[int, _bounded(PORT)]
PositiveCount = Annotated[int, _bounded(POSITIVE)]
Count = Annotated[int, _bounded(COUNT)]
Seconds = Annotated[int, _bounded(SECONDS)]


# Names that become paths (issue 35): a name a workload joins to its job dir (an artifact dir it ``rm -rf``s and
# recreates, a report it copies to) stays inside that dir; a path a workload mounts is one absolute path.
def check_relative_name(value: str) -> str:
    """``value`` when it is a relative path with no ``..``, ``.`` or empty part, on one line: joined to the job dir
    it names something inside it (``/etc`` or ``../..`` would reach ``rm -rf`` outside)."""
    check_one_line(value, "name")
    if value.startswith("/") or any(part in ("", ".", "..") for part in value.split("/")):
        raise ValueError(
            "names a path outside the job dir; give a relative name inside it, without '..' or a leading '/' "
            "(e.g. 'aiperf_artifacts')"
        )
    return value


def check_absolute_path(value: str, what: str = "") -> str:
    """``value`` when it is one absolute path (a mount's source or destination, a dir in the container): no ``..``
    part, no ``:``, ``,``, whitespace or control character (each would change which mount pyxis makes).
    ``what`` names the value in the message where no field does (pydantic echoes the value itself)."""
    if not value.startswith("/") or ".." in value.split("/") or re.search(r"[:,\s\x00-\x1f\x7f]", value):
        named = f"{what} {shown(value)} " if what else ""
        raise ValueError(
            f"{named}is not one absolute path a container can mount (it must start with '/', and hold no '..' "
            "part, ':', ',', whitespace or newline)"
        )
    return value


def _absolute_or_empty(value: str) -> str:
    return value if value == "" else check_absolute_path(value)


RelativeName = Annotated[str, AfterValidator(check_relative_name)]
AbsolutePath = Annotated[str, AfterValidator(check_absolute_path)]
AbsolutePathOrEmpty = Annotated[str, AfterValidator(_absolute_or_empty)]  # "": the workload's default
