"""Read a TOML file, and turn pydantic errors into problems that name the file and field."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from types import UnionType
from typing import Any, TypeVar, Union, get_args, get_origin

import toml
from pydantic import BaseModel, ValidationError

from cloudai.config.messages import explain, toml_value
from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.readfile import UnsafeFileError, read_regular

MAX_TOML_BYTES = 4 * 1024 * 1024
M = TypeVar("M", bound=BaseModel)


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file, or a ``ConfigError`` that says what is wrong with it and where."""
    if not path.exists():
        raise ConfigError("file not found", file=path, hint=_nearby(path))
    if path.is_dir():
        raise ConfigError("is a directory, expected a TOML file", file=path)
    try:
        text = read_regular(path, MAX_TOML_BYTES).decode("utf-8")  # never a device, FIFO or huge file
    except UnsafeFileError as exc:
        raise ConfigError(f"refused: the file is {exc}", file=path, hint="point to a TOML file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte {exc.start})", file=path, hint="save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", file=path) from None
    try:
        return toml.loads(text)
    except toml.TomlDecodeError as exc:
        raise ConfigError(f"TOML syntax error at line {exc.lineno}, column {exc.colno}: {exc.msg}", file=path) from None
    except (IndexError, ValueError, RecursionError) as exc:  # the toml package's less tidy failures
        raise ConfigError(f"TOML syntax error: {exc}", file=path) from None


def _nearby(path: Path) -> str:
    """A missing file's hint: the closest TOML files beside where it was looked for (a typo, a missing
    ``.toml``), or the part of the path that does not exist."""
    parent = path.parent
    if not parent.is_dir():
        missing = next(p for p in [parent, *parent.parents] if p.parent.is_dir() or p == p.parent)
        return f"{missing} does not exist either: check the path"
    names = sorted(p.name for p in parent.glob("*.toml"))
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.75)
    if not close:
        return f"check the path ({parent} has {len(names)} TOML file(s), none with a close name)"
    return f"did you mean {' or '.join(str(parent / name) for name in close)}?"


def toml_path(loc: tuple[str | int, ...]) -> str:
    """``("Tests", 2, "dependencies", 0, "id")`` -> ``"Tests[2].dependencies[0].id"``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def problems_from(
    exc: ValidationError, model: type[BaseModel], file: Path | None, *, knobs: bool = False
) -> list[Problem]:
    """One problem per wrong field: the value given, what is accepted, a did-you-mean (``messages``).

    A union field (``str | int``) fails once per member: those errors become one problem.
    ``knobs``: the model's fields are cmd_args, which may also be lists and ranges (said in hints).
    """
    grouped: dict[tuple[str | int, ...], list[Any]] = {}
    for err in exc.errors():
        grouped.setdefault(tuple(part for part in err["loc"] if not _is_union_tag(part)), []).append(err)
    problems = []
    for loc, errors in grouped.items():
        kind = errors[0]["type"]
        cloudai_only = getattr(_model_at(model, loc[:-1]), "CLOUDAI_ONLY", {})
        if kind == "extra_forbidden" and str(loc[-1]) in cloudai_only:
            message = f"CloudAI field not supported by cloudai (yet): {cloudai_only[loc[-1]]}"
            hint = "cloudai cannot honour it: remove it to run this file here (NVIDIA CloudAI runs it as is)"
        elif kind == "extra_forbidden":
            message = f"unknown field (= {toml_value(errors[0].get('input'))})"
            hint = did_you_mean(str(loc[-1]), _fields_at(model, loc[:-1]))
        elif kind == "missing":
            message, hint = "required field is missing", None
        else:
            path = toml_path(loc)
            message, hint = explain(errors, f"cmd_args.{path}" if knobs else path)
        problems.append(Problem(None if file is None else str(file), toml_path(loc), message, hint))
    return problems


def validate(model: type[M], data: dict[str, Any], file: Path | None, prefix: tuple[str | int, ...] = ()) -> M:
    """``model.model_validate(data)``, raising a ``ConfigError`` with every problem found."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = problems_from(exc, model, file)
        if prefix:
            problems = [Problem(p.file, toml_path(prefix) + "." + (p.field or ""), p.message, p.hint) for p in problems]
        raise ConfigError(problems=problems) from None


def _is_union_tag(part: str | int) -> bool:
    return isinstance(part, str) and (
        part.startswith(("function-", "constrained-", "list[")) or part in {"int", "float", "str", "list[int]", "bool"}
    )


def _fields_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """Field names of the (nested) model at ``loc``, for did-you-mean hints."""
    return list(getattr(_model_at(model, loc), "model_fields", {}))


def _model_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> Any:
    """The (nested) model at ``loc``, or None when ``loc`` leaves the models."""
    current: Any = model
    keyed = False  # the last field was a table of models (``env_params.<name>``): this part is a key
    for part in loc:
        if isinstance(part, int) or keyed:
            keyed = False
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return None
        current = _model_in(field.annotation)
        keyed = _is_table(field.annotation)
    return current


def _is_table(annotation: Any) -> bool:
    """A ``dict[str, ...]`` (or an optional one): its keys are names the user chose, not fields."""
    if get_origin(annotation) in (dict, Mapping):
        return True
    return get_origin(annotation) in (Union, UnionType) and any(_is_table(a) for a in get_args(annotation))


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
