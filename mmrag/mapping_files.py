"""Whole-file readers of YAML and JSON documents that must hold one mapping: configs, templates,
sweeps, knowledge bases, labelling samples.

Kept apart from :mod:`mmrag.util` (line-by-line JSONL, atomic writes) because a document read in
one piece has its own failure modes to refuse, each as one InputError naming file and line: YAML's
duplicate keys and aliases (a "billion laughs" file), a top-level value that is not a mapping, and
values mmrag could not write back (NaN, lone surrogates).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from mmrag.errors import InputError, pydantic_field, pydantic_message
from mmrag.util import invalid_value

M = TypeVar("M", bound=BaseModel)


def unique_key_loader():
    """A SafeLoader that refuses duplicate mapping keys (YAML's default is "last wins": a second
    ``limit:`` would silently override the first) and aliases (``*name``).

    Why no aliases: nine anchors of nine aliases each (a "billion laughs" file of a few hundred
    bytes) expand to 9^9 values, and every reader that walks the result (validation, the
    redaction helper, the config diff of ``--resume``) hangs on it.  mmrag's configs and
    templates are small; a value used twice is written twice."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def compose_node(self, parent, index):  # noqa: D102 - see the class docstring
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"YAML aliases (*{event.anchor}) are not allowed here; write the value out",
                    event.start_mark,
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):  # noqa: D102 - see the class docstring
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: let SafeLoader report it
                    continue
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key '{key}' (first on line {first})", key_node.start_mark
                    )
                seen[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def read_yaml_mapping(path: str | Path, what: str = "file") -> dict[str, Any]:
    """A YAML file that must hold a mapping; a missing file, bytes that are not UTF-8, a syntax
    error or a duplicate key (with its line) or another top-level type is one InputError naming
    the file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} not found", path=path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", path=path, line=line) from None
    try:
        data = yaml.load(text, Loader=unique_key_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            f"invalid YAML ({getattr(exc, 'problem', None) or exc})",
            path=path,
            line=mark.line + 1 if mark is not None else None,
        ) from None
    except RecursionError:
        raise InputError("invalid YAML (nested too deeply)", path=path) from None
    if not isinstance(data, dict):
        raise InputError(f"a {what} must hold a mapping", path=path)
    bad = invalid_value(data)
    if bad is not None:
        raise InputError(bad[1], path=path, field=bad[0])
    return data


def load_yaml_model(path: str | Path, model: type[M], what: str = "config file") -> M:
    """Read a YAML mapping and validate it as ``model``; errors name the file and the field."""
    data = read_yaml_mapping(path, what)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(pydantic_message(exc), path=path, field=pydantic_field(exc)) from None


def read_json_mapping(path: str | Path, expected: str = "a JSON object") -> dict[str, Any]:
    """A whole-file JSON object (E-VQA-style knowledge bases); errors name the file and line."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputError(f"is a folder; expected {expected}", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (at byte {exc.start})", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    except RecursionError:
        raise InputError("invalid JSON (nested too deeply)", path=path) from None
    if not isinstance(data, dict):
        raise InputError(f"expected {expected}", path=path)
    bad = invalid_value(data)
    if bad is not None:
        raise InputError(bad[1], path=path, field=bad[0])
    return data
