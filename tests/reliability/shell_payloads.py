"""The machinery of ``test_shell_payloads.py``: hostile strings into every field, scripts rendered, then executed.

Nothing here lists a workload's fields: ``string_fields`` walks a pydantic model (nested models, lists and tables
of strings, ``Any``), so a new workload or a new field is tried the day it is registered. A field whose type is
``cloudai.config.fields.ShellCode`` (BashCmd's ``cmd``: bash the user writes on purpose) is left out.

A case is one base (the workload's first example test TOML that loads as a plain test, else its contract
sample) with every field set to one payload at once; each payload touches a canary file named after its case.
``load`` refuses some (exit 2 naming the field): those go back to the base's value and the case is loaded again.
Then the cases are rendered as ``dry-run`` renders them (``sbatch.sh``, ``cmd.sh``, ``single_sbatch.sh``) and every
script is run by one ``bash`` with stub functions (``stubs``) and a PATH of file tools: external commands are
no-ops, ``srun`` (and ``env``, ``timeout``, ...) runs the command it was given, ``touch``/``cat``/``mkdir`` are real.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import tomli_w
from pydantic import BaseModel

from cloudai.config.fields import SHELL_CODE
from cloudai.errors import ConfigError, Problem

Key = str | int
FieldPath = tuple[Key, ...]

# (name, payload given the canary path). Each would run ``touch CANARY`` if it reached a shell unquoted.
PAYLOADS: list[tuple[str, Callable[[str], str]]] = [
    ("subst", lambda c: f"$(touch {c})"),
    ("semicolon", lambda c: f";touch {c};"),
    ("backticks", lambda c: f"`touch {c}`"),
    ("single-quote", lambda c: f"x'; touch {c}; '"),
    ("double-quote", lambda c: f'x"; touch {c}; "'),
    ("pipe-amp", lambda c: f"x|touch {c}&"),
    ("newline", lambda c: f"x\ntouch {c}\n"),
    ("crlf", lambda c: f"x\r\ntouch {c}\r\n"),
]
DEFAULT_MARKERS = ("EOF",)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def heredoc_payloads(markers: Iterable[str]) -> list[tuple[str, Callable[[str], str]]]:
    """A payload per heredoc end marker: the marker as a whole line, then the command."""
    return [(f"heredoc-{m}", lambda c, m=m: f"x\n{m}\ntouch {c}\n") for m in sorted({*markers, *DEFAULT_MARKERS})]


def heredoc_markers(scripts: Iterable[Path]) -> set[str]:
    """The end markers of every heredoc in ``scripts`` (what a payload line must not be allowed to end)."""
    return {m.group(2) for s in scripts for m in _HEREDOC.finditer(s.read_text(errors="replace"))}


# --- the walk -----------------------------------------------------------------------------------------------------


def _is_shell_code(tp: Any) -> bool:
    return get_origin(tp) is Annotated and any(m is SHELL_CODE for m in tp.__metadata__)


def _kinds(tp: Any, seen: frozenset[type]) -> list[tuple[str, Any]]:
    """What a value of type ``tp`` can be made of: ``("str", None)``, ``("list", kind)``, ``("dict", kind)``,
    ``("model", M)``; ``("shell", None)`` for ``ShellCode``."""
    if _is_shell_code(tp):
        return [("shell", None)]
    origin = get_origin(tp)
    if origin is Annotated:
        return _kinds(get_args(tp)[0], seen)
    if origin in (Union, types.UnionType):
        return [k for arg in get_args(tp) for k in _kinds(arg, seen)]
    if tp in (str, Path, Any) or (isinstance(tp, type) and issubclass(tp, (str, Path))):
        return [("str", None)]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [] if tp in seen else [("model", tp)]
    if origin in (list, tuple, set, frozenset):
        args = [a for a in get_args(tp) if a is not Ellipsis]
        return [("list", k) for a in args[:1] for k in _kinds(a, seen)]
    if origin is dict or origin is Mapping:
        args = get_args(tp)
        return [("dict", k) for k in _kinds(args[1], seen)] if len(args) == 2 else []
    return []


@dataclass(frozen=True)
class StringField:
    """A place a payload goes: ``path`` into the TOML table, wrapped in lists/tables as ``wrap`` says."""

    path: FieldPath
    wrap: tuple[str, ...] = ()  # "list" / "dict", outermost first

    def value(self, payload: str) -> Any:
        value: Any = payload
        for kind in reversed(self.wrap):
            value = [value] if kind == "list" else {"CLOUDAI_HS": value}
        return value

    @property
    def name(self) -> str:
        """As a message writes it: ``partitions[0].name``."""
        return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in self.path).lstrip(".")


def string_fields(
    model: type[BaseModel], skip: Iterable[str] = (), prefix: FieldPath = ()
) -> tuple[list[StringField], list[str]]:
    """Every string the model takes (``StringField``s), and the ``ShellCode`` fields left out (their names)."""
    found: list[StringField] = []
    shell: list[str] = []
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        key = info.alias or name
        kinds = _kinds(info.annotation, frozenset({model}))
        if any(k == "shell" for k, _ in kinds) or any(m is SHELL_CODE for m in info.metadata):
            shell.append(".".join(str(p) for p in (*prefix, key)))
            continue
        done_str = False
        for kind, inner in kinds:
            wrap: tuple[str, ...] = ()
            while kind in ("list", "dict"):
                wrap += (kind,)
                kind, inner = inner
            if kind == "model":
                sub, sub_shell = string_fields(inner, (), (*prefix, key, *([0] if "list" in wrap else [])))
                found += sub
                shell += sub_shell
            elif kind == "str" and not done_str:  # one string shape per field (str | list[str]: the str)
                found.append(StringField((*prefix, key), wrap))
                done_str = True
    return found, shell


def set_path(table: dict[str, Any], path: FieldPath, value: Any) -> bool:
    """``table[path] = value``, making tables on the way (a list index into an existing list only); False when the
    path crosses a value that is not a table (the base holds a scalar there: that shape is not this base's)."""
    node: Any = table
    for part in path[:-1]:
        if isinstance(part, int):
            if not isinstance(node, list) or len(node) <= part or not isinstance(node[part], dict):
                return False
            node = node[part]
            continue
        if not isinstance(node, dict):
            return False
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = [{}] if isinstance(path[path.index(part) + 1], int) else {}
        node = nxt
    if not isinstance(node, dict):
        return False
    node[path[-1]] = value
    return True


def get_path(table: Mapping[str, Any], path: FieldPath) -> Any:
    node: Any = table
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return node


_MISSING = object()


def del_path(table: dict[str, Any], path: FieldPath, base: Mapping[str, Any]) -> None:
    """Back to the base's value at ``path`` (or absent when the base has none there)."""
    old = get_path(base, path)
    if old is not _MISSING:
        set_path(table, path, copy.deepcopy(old))
        return
    node: Any = table
    for part in path[:-1]:
        node = get_path(node, (part,))
        if node is _MISSING:
            return
    if isinstance(node, dict):
        node.pop(path[-1], None)


# --- cases --------------------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One base with one payload in every field it could take."""

    tag: str  # also the canary's file name
    base: dict[str, Any]  # the TOML table (a test file's, or a system file's)
    table: dict[str, Any]
    set: list[StringField] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # field name -> the problem that named it

    def drop(self, fields: Iterable[StringField], why: str) -> None:
        for f in list(fields):
            if f in self.set:
                self.set.remove(f)
                self.refused[f.name] = why
                del_path(self.table, f.path, self.base)
                self._prune(f.path)

    def _prune(self, path: FieldPath) -> None:
        """Remove a table (or a one-table list) the case made for its fields once none of them is left in it."""
        for depth in range(1, len(path)):
            prefix = path[:depth]
            if get_path(self.base, prefix) is not _MISSING:
                continue
            if not any(f.path[:depth] == prefix for f in self.set):
                del_path(self.table, prefix, self.base)
            return


def make_case(tag: str, base: dict[str, Any], fields: list[StringField], payload: str) -> Case:
    case = Case(tag, base, copy.deepcopy(base))
    for f in fields:
        if set_path(case.table, f.path, f.value(payload)):
            case.set.append(f)
    return case


def blamed(problem: Problem, case: Case) -> list[StringField]:
    """The fields of ``case`` a problem names: its field, a field under it, or a sibling of a missing one."""
    named = _parse_field(problem.field or "")
    hits = [f for f in case.set if _prefix(f.path, named) or _prefix(named, f.path)]
    if not hits and len(named) > 1:
        hits = [f for f in case.set if _prefix(named[:-1], f.path)]
    if not hits and not named:  # a model-wide check: the message names the field (``mpi 'x;y' holds ...``)
        hits = [f for f in case.set if re.match(rf"{re.escape(f.name)}\b", problem.message)]
    return hits


def _prefix(short: FieldPath, long: FieldPath) -> bool:
    return bool(short) and long[: len(short)] == short


def _parse_field(text: str) -> FieldPath:
    parts: list[Key] = []
    for word in re.findall(r"[^.\[\]]+|\[\d+\]", text):
        parts.append(int(word[1:-1]) if word.startswith("[") else word)
    return tuple(parts)


def write_toml(path: Path, table: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(dict(table)))
    return path


def load_until_accepted(
    cases: list[Case], write: Callable[[], Any], load: Callable[[], Any], owner: Callable[[Problem], Case | None]
) -> Any:
    """``load()`` after ``write()``, dropping the fields each refusal names, until it loads; its result.

    A refusal naming a field the harness put back to the base's value is a conflict with another payload field
    (``default_partition`` and ``partitions[0].name``): the field whose removal ends it is dropped. A refusal that
    cannot be pinned on any field, or names a file the harness did not write, is a failure."""
    for _ in range(40):
        write()
        try:
            return load()
        except ConfigError as exc:
            for problem in exc.problems:
                case = owner(problem)
                if case is None:
                    raise AssertionError(f"a refusal of a file the harness did not write: {problem}") from None
                hits = blamed(problem, case) or _culprit(problem, case, write, load)
                case.drop(hits, problem.message)
    raise AssertionError("still refused after 40 rounds")


def _culprit(problem: Problem, case: Case, write: Callable[[], Any], load: Callable[[], Any]) -> list[StringField]:
    for candidate in list(case.set):
        trial = copy.deepcopy(case.table)
        del_path(case.table, candidate.path, case.base)
        write()
        try:
            load()
            gone = True
        except ConfigError as exc:
            gone = all((p.file, p.field) != (problem.file, problem.field) for p in exc.problems)
        case.table = trial
        if gone:
            return [candidate]
    raise AssertionError(f"a refusal that names no field the harness set: {problem}")


# --- the stub environment -----------------------------------------------------------------------------------------

REAL = ("bash", "touch", "cat", "mkdir", "chmod", "sed", "head", "tail", "paste", "seq", "tr", "cut", "grep", "date",
        "dirname", "basename", "tee", "wc", "sort", "ls", "true", "false", "printf", "test", "expr", "awk",
        "xargs")  # fmt: skip
NOOP = ("wget", "rm", "rmdir", "mv", "cp", "ln", "dd", "pkill", "sbatch", "squeue", "scancel", "sacct", "sinfo",
        "nvidia-smi", "docker", "enroot", "git", "pip", "python", "python3", "uv")  # fmt: skip
RUNNERS = ("srun", "env", "timeout", "nohup", "setsid", "nice", "stdbuf", "numactl", "mpirun")
# The stubs are bash functions, exported to every bash a script starts (``bash -c``, ``bash aiperf.sh``): no
# process per call. ``sleep N`` moves a fake clock 100*N seconds on and ``date +%s`` reads it, so a wait loop
# (``until ...; do [ $(date +%s) -lt $end ] || exit 1; sleep 1; done``) ends after a few rounds, as on a dead server.
_STUBS = r"""
command_not_found_handle() { return 0; }
cloudai_stub_run() {  # NAME ARGS...: drop the options (a timeout's duration; env's VAR=value), run what is left
    local name=$1; shift
    while [ $# -gt 0 ]; do
        case "$1" in
            -N|-n|-c|-w|-p|-t|-o|-e|-J|-u|-s|-k|--signal|--kill-after) shift 2 ;;
            -*) shift ;;
            *=*) [ "$name" = env ] && export "$1"; shift ;;
            *) if [ "$name" = timeout ] && [[ "$1" =~ ^[0-9.]+[smhd]?$ ]]; then shift; else break; fi ;;
        esac
    done
    [ $# -gt 0 ] || return 0
    ( "$@" )
}
sleep() { local n=${1%%[!0-9]*}; CLOUDAI_CLOCK=$(( ${CLOUDAI_CLOCK:-0} + (${n:-0} + 1) * 100 )); }
date() {
    case "$1" in
        +%s) echo $(( EPOCHSECONDS + ${CLOUDAI_CLOCK:-0} )) ;;
        +%s.%N) local t=$EPOCHREALTIME; echo "$(( ${t%.*} + ${CLOUDAI_CLOCK:-0} )).${t#*.}" ;;
        *) command date "$@" ;;
    esac
}
curl() { echo '{"id": "m", "data": [{"id": "m"}]}'; }  # a server that answers, with a model
scontrol() { [ "$1" = show ] && echo localhost; return 0; }
hostname() { echo localhost; }
"""


def stubs() -> str:
    """The stub functions, each exported."""
    text = _STUBS + "".join(f"{n}() {{ return 0; }}\n" for n in NOOP)
    text += "".join(f'{n}() {{ cloudai_stub_run {n} "$@"; }}\n' for n in RUNNERS)
    names = ["command_not_found_handle", "cloudai_stub_run", "sleep", "date", "curl", "scontrol", "hostname"]
    return text + f"export -f {' '.join([*names, *NOOP, *RUNNERS])}\n"


def stub_dir(root: Path) -> Path:
    """A PATH for the scripts: the real file tools; nothing else is found (the rest are the stub functions)."""
    bin_dir = root / "stub-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in REAL:
        real = shutil.which(name)
        if real:
            (bin_dir / name).symlink_to(real)
    (bin_dir / "sh").symlink_to(shutil.which("bash") or "/bin/bash")
    return bin_dir


_DRIVER = r"""
while IFS= read -r -d '' script; do
    ( cd "${script%/*}" && exec "$REAL_TIMEOUT" -k 1 60 bash "$script" ) </dev/null >"$script.harness.log" 2>&1
    rc=$?
    [ -n "$TIME_LOG" ] && printf '%s %s\n' "$EPOCHREALTIME" "$script" >>"$TIME_LOG"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then printf '%s\n' "$script" >>"$HANG_LOG"; fi
done <"$SCRIPT_LIST"
exit 0
"""


def run_scripts(scripts: list[Path], root: Path) -> list[Path]:
    """Every script by ``bash`` under the stubs, one bash driver for all; the scripts that hung."""
    bin_dir = stub_dir(root) if not (root / "stub-bin").exists() else root / "stub-bin"
    listing = root / "scripts.list"
    listing.write_bytes(b"".join(str(s).encode() + b"\0" for s in scripts))
    hang = root / "hangs.txt"
    env = {
        "PATH": str(bin_dir),
        "HOME": str(root / "home"),
        "TMPDIR": str(root / "home"),
        "SLURM_JOB_NODELIST": "localhost",
        "SLURM_JOB_ID": "1",
        "SLURM_JOB_PARTITION": "debug",
        "SLURM_NNODES": "1",
        "REAL_TIMEOUT": shutil.which("timeout") or "/usr/bin/timeout",
        "SCRIPT_LIST": str(listing),
        "HANG_LOG": str(hang),
        "LANG": "C.UTF-8",
        "TIME_LOG": os.environ.get("CLOUDAI_HARNESS_TIME_LOG", ""),
    }
    (root / "home").mkdir(exist_ok=True)
    subprocess.run([shutil.which("bash") or "/bin/bash", "-c", stubs() + _DRIVER], env=env, check=True, timeout=600)
    return [Path(line) for line in hang.read_text().splitlines()] if hang.exists() else []


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: (size, mtime_ns)."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            out[path] = (st.st_size, st.st_mtime_ns)
    return out


def changed_outside(before: Mapping[str, tuple[int, int]], after: Mapping[str, tuple[int, int]],
                    allowed: Iterable[Path]) -> list[str]:  # fmt: skip
    """Files new, changed or gone under the snapshot's root that lie in none of the ``allowed`` dirs."""
    dirs = [str(d) + os.sep for d in allowed]
    touched = {p for p in after if before.get(p) != after[p]} | {p for p in before if p not in after}
    return sorted(p for p in touched if not any(p.startswith(d) for d in dirs))
