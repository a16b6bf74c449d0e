"""Sweeps: a grid over any ScenarioSpec fields, loaded from YAML.

A sweep file::

    name: distractor-curve
    description: free text
    base:            # fixed ScenarioSpec fields for every cell
      kind: realistic
    axes:            # field -> list of values; the grid is their product
      n_distractors: [0, 1, 2, 4, 8]
    extra:           # optional single specs merged over base (e.g. an oracle reference)
      - {kind: oracle}
    skip_invalid: false   # true: drop grid cells that are not a valid spec (listed by plan())

``expand()`` returns the specs in a deterministic order (the first axis is the outermost loop, then
the extras), with duplicates removed by ``spec.id``.  Because the id hashes the canonical spec, it
does not depend on axis order; the run engine keys results by (sample id, spec id, model
fingerprint), so re-running a sweep runs only missing cells and adding an axis value runs only the
new ones.
"""

from __future__ import annotations

import difflib
import itertools
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from mmrag.errors import InputError, pydantic_message
from mmrag.mapping_files import unique_key_loader
from mmrag.scenarios.spec import ScenarioSpec

SPEC_FIELDS: tuple[str, ...] = tuple(ScenarioSpec.model_fields)


def _suggest(name: str) -> str:
    close = difflib.get_close_matches(name, SPEC_FIELDS, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _check_field(name: str, where: str) -> None:
    if name not in SPEC_FIELDS:
        raise ValueError(f"{where}: '{name}' is not a scenario field{_suggest(name)}; fields: {', '.join(SPEC_FIELDS)}")


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    base: dict[str, Any] = Field(default_factory=dict)
    axes: dict[str, list[Any]] = Field(default_factory=dict)
    extra: list[dict[str, Any]] = Field(default_factory=list)
    skip_invalid: bool = False

    @field_validator("base")
    @classmethod
    def _base(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k in v:
            _check_field(k, "base")
        return v

    @field_validator("axes")
    @classmethod
    def _axes(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for k, values in v.items():
            _check_field(k, "axes")
            if not values:
                raise ValueError(f"axes: '{k}' has no values")
        return v

    @field_validator("extra")
    @classmethod
    def _extra(cls, v: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for spec in v:
            for k in spec:
                _check_field(k, "extra")
        return v

    def _cells(self) -> list[dict[str, Any]]:
        names = list(self.axes)
        grid = [dict(zip(names, combo)) for combo in itertools.product(*(self.axes[n] for n in names))]
        return [{**self.base, **c} for c in grid] + [{**self.base, **e} for e in self.extra]

    def plan(self) -> tuple[list[ScenarioSpec], list[dict[str, Any]]]:
        """(specs, skipped): skipped lists the invalid grid cells with the reason (only when
        ``skip_invalid``; otherwise an invalid cell raises InputError naming its values)."""
        specs: list[ScenarioSpec] = []
        skipped: list[dict[str, Any]] = []
        seen: set[str] = set()
        for cell in self._cells():
            try:
                spec = ScenarioSpec(**cell)
            except ValidationError as exc:
                if self.skip_invalid:
                    skipped.append({"cell": cell, "reason": pydantic_message(exc)})
                    continue
                raise InputError(
                    f"sweep '{self.name}': the cell {cell} is not a valid scenario: {pydantic_message(exc)}",
                    field="axes",
                ) from None
            if spec.id not in seen:
                seen.add(spec.id)
                specs.append(spec)
        return specs, skipped

    def expand(self) -> list[ScenarioSpec]:
        return self.plan()[0]


# ---------------------------------------------------------------- loading -------------------------------


def _node_line(root: yaml.Node | None, path: list[Any]) -> int | None:
    """1-based line of the YAML node at ``path`` (mapping keys / sequence indices), or of the
    deepest ancestor found."""
    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for key in path:
        if isinstance(node, yaml.MappingNode):
            hit = next(((k, v) for k, v in node.value if getattr(k, "value", None) == key), None)
            if hit is None:
                return line
            line, node = hit[0].start_mark.line + 1, hit[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _field_adapter(name: str) -> TypeAdapter:
    info = ScenarioSpec.model_fields[name]
    field_type: Any = Annotated[info.annotation, info]  # built at run time: statically just a type
    return TypeAdapter(field_type)


def _validate_values(data: dict[str, Any], path: Path, root: yaml.Node | None) -> None:
    """Check every single value against its field's type, so a bad value is reported at its own
    place (file, line, ``axes.n_distractors[2]``) rather than as a failed grid cell."""
    places: list[tuple[list[Any], str, Any]] = []
    for k, v in (data.get("base") or {}).items():
        places.append((["base", k], k, v))
    for k, values in (data.get("axes") or {}).items():
        if isinstance(values, list):
            places += [(["axes", k, i], k, v) for i, v in enumerate(values)]
    for j, spec in enumerate(data.get("extra") or []):
        if isinstance(spec, dict):
            places += [(["extra", j, k], k, v) for k, v in spec.items()]
    for where, name, value in places:
        if name not in SPEC_FIELDS:
            continue  # reported by the model validators with a suggestion
        try:
            _field_adapter(name).validate_python(value)
        except ValidationError as exc:
            label = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in where).replace(".[", "[")
            raise InputError(
                f"bad value {value!r}: {pydantic_message(exc)}", path=path, line=_node_line(root, where), field=label
            ) from None


def builtin_sweeps() -> dict[str, Path]:
    """The ready-made sweeps shipped in ``mmrag/configs/sweeps`` (name -> file)."""
    folder = resources.files("mmrag") / "configs" / "sweeps"  # Traversable.joinpath takes one part on 3.10
    return {p.name[:-5]: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".yaml")}


def load_sweep(path_or_name: str | Path) -> Sweep:
    """Load a sweep file, or a ready-made sweep by name (``distractor-curve``, ``modality-matrix``,
    ``strictness``).  Any problem is an InputError naming the file, line and field."""
    path = Path(path_or_name)
    if not path.is_file():
        builtins = builtin_sweeps()
        if str(path_or_name) in builtins:
            path = builtins[str(path_or_name)]
        else:
            raise InputError(f"sweep file not found (ready-made sweeps: {', '.join(sorted(builtins))})", path=path)
    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text)
        data = yaml.load(text, Loader=unique_key_loader())  # noqa: S506 - a SafeLoader that refuses duplicate keys
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            f"invalid YAML ({getattr(exc, 'problem', exc)})",
            path=path,
            line=mark.line + 1 if mark is not None else None,
        ) from None
    if not isinstance(data, dict):
        raise InputError("a sweep file must hold a mapping with name, base, axes", path=path)
    for key in data:
        if key not in Sweep.model_fields:
            close = difflib.get_close_matches(str(key), list(Sweep.model_fields), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise InputError(
                f"unknown key '{key}'{hint}; allowed: {', '.join(Sweep.model_fields)}",
                path=path,
                line=_node_line(root, [key]),
                field=str(key),
            )
    for section, kind in (("base", dict), ("axes", dict), ("extra", list)):
        if section in data and not isinstance(data[section], kind):
            raise InputError(
                f"'{section}' must be a {'mapping' if kind is dict else 'list'}",
                path=path,
                line=_node_line(root, [section]),
                field=section,
            )
    for section in ("base", "axes"):
        for k in data.get(section) or {}:
            if k not in SPEC_FIELDS:
                raise InputError(
                    f"'{k}' is not a scenario field{_suggest(str(k))}",
                    path=path,
                    line=_node_line(root, [section, k]),
                    field=f"{section}.{k}",
                )
    for j, spec in enumerate(data.get("extra") or []):
        if not isinstance(spec, dict):
            raise InputError(
                "each extra entry must be a mapping of scenario fields",
                path=path,
                line=_node_line(root, ["extra", j]),
                field=f"extra[{j}]",
            )
        for k in spec:
            if k not in SPEC_FIELDS:
                raise InputError(
                    f"'{k}' is not a scenario field{_suggest(str(k))}",
                    path=path,
                    line=_node_line(root, ["extra", j, k]),
                    field=f"extra[{j}].{k}",
                )
    for k, values in (data.get("axes") or {}).items():
        if not isinstance(values, list) or not values:
            raise InputError(
                "an axis must be a non-empty list of values",
                path=path,
                line=_node_line(root, ["axes", k]),
                field=f"axes.{k}",
            )
        if k in (data.get("base") or {}):
            raise InputError(
                f"'{k}' is both in base and in axes; keep it in one place",
                path=path,
                line=_node_line(root, ["axes", k]),
                field=f"axes.{k}",
            )
    _validate_values(data, path, root)
    try:
        sweep = Sweep.model_validate(data)
    except ValidationError as exc:
        loc = [p for p in exc.errors()[0].get("loc", ())]
        raise InputError(
            pydantic_message(exc), path=path, line=_node_line(root, loc), field=".".join(str(p) for p in loc) or None
        ) from None
    try:
        sweep.plan()
    except InputError as exc:
        raise InputError(exc.message, path=path, line=_node_line(root, ["axes"]), field="axes") from None
    return sweep
