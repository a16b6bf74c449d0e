"""Prompt templates as versioned data files.

Every wording a model sees lives in a YAML file under ``mmrag/scenarios/templates/`` (or a user's own
file named by ``ScenarioSpec.template``), never in code.  A template has an ``id``, a ``version`` and
text fields; its ``sha256`` is taken over the canonical JSON of everything except the free-text
``description``, so editing the wording changes the hash even when someone forgets to bump the
version, and every prompt records id, version and hash (the run manifest collects them).

Fields:

- ``system``: optional system message.
- ``evidence_header``: the line above the numbered evidence (retrieval scenarios).
- ``question``: how the question line is written; must contain ``{question}``.
- ``text``: the instruction (for a prefix/suffix template: the prefix/suffix itself).
- ``source``: for a benchmark's own wording kept verbatim, the file and commit it comes from
  (recorded in each prompt's template stamp; not part of the hash, like ``description``).

Placeholders allowed in ``system`` / ``text``: ``{deflection_phrase}`` (mmrag.schema.DEFLECTION_PHRASE).
Write literal braces as ``{{`` and ``}}``.
"""

from __future__ import annotations

import functools
import hashlib
import string
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from mmrag.errors import InputError, pydantic_field, pydantic_message
from mmrag.mapping_files import read_yaml_mapping
from mmrag.schema import DEFLECTION_PHRASE, canonical_json

#: placeholders each field may use; anything else is a typo and is rejected on load
_ALLOWED: dict[str, set[str]] = {
    "system": {"deflection_phrase"},
    "evidence_header": set(),
    "question": {"question"},
    "text": {"deflection_phrase"},
}


#: template -> its sha256 (templates are frozen, hashable by their fields)
_SHA256: dict[Any, str] = {}


class PromptTemplate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    version: str
    description: str = ""
    #: where a verbatim wording comes from (file and commit of the official code); not hashed
    source: str = ""
    system: str | None = None
    evidence_header: str = "Context:"
    question: str = "{question}"
    text: str = ""

    @field_validator("version", mode="before")
    @classmethod
    def _version_str(cls, v: Any) -> Any:
        return str(v) if isinstance(v, (int, float)) else v

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not v or any(c.isspace() for c in v) or "+" in v:
            raise ValueError("template id must be non-empty, without spaces or '+'")
        return v

    @field_validator("question")
    @classmethod
    def _question(cls, v: str) -> str:
        if "{question}" not in v:
            raise ValueError("must contain the placeholder {question}")
        return v

    def canonical(self) -> dict[str, Any]:
        """What the hash covers: every field a model can see, plus id and version."""
        return self.model_dump(mode="json", exclude={"description", "source"})

    @property
    def sha256(self) -> str:
        """The hash of :meth:`canonical`; kept per template (a frozen model: equal templates, equal
        hashes), because every prompt stamps its template's hash."""
        got = _SHA256.get(self)
        if got is None:
            got = hashlib.sha256(canonical_json(self.canonical()).encode()).hexdigest()
            if len(_SHA256) > 4096:
                _SHA256.clear()
            _SHA256[self] = got
        return got

    def fill(self, field: str, **values: str) -> str:
        raw = getattr(self, field) or ""
        return raw.format_map({"deflection_phrase": DEFLECTION_PHRASE, **values})

    def stamp(self) -> dict[str, str]:
        out = {"id": self.id, "version": self.version, "sha256": self.sha256}
        if self.source:
            out["source"] = self.source
        return out


def _check_placeholders(tpl: PromptTemplate, path: str | Path | None) -> None:
    for field, allowed in _ALLOWED.items():
        raw = getattr(tpl, field) or ""
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(raw) if name is not None}
        except ValueError as exc:
            raise InputError(
                f"bad braces in template text ({exc}); write literal braces as {{{{ }}}}", path=path, field=field
            ) from None
        bad = sorted(n for n in names if n not in allowed)
        if bad:
            raise InputError(
                f"unknown placeholder(s) {', '.join('{' + b + '}' for b in bad)}; "
                f"allowed here: {', '.join(sorted(allowed)) or 'none'}",
                path=path,
                field=field,
            )


def parse_template(data: Any, path: str | Path | None = None) -> PromptTemplate:
    if not isinstance(data, dict):
        raise InputError("a template file must hold a mapping (id, version, text, ...)", path=path)
    try:
        tpl = PromptTemplate.model_validate(data)
    except ValidationError as exc:
        raise InputError(pydantic_message(exc), path=path, field=pydantic_field(exc)) from None
    _check_placeholders(tpl, path)
    return tpl


def load_template(path: str | Path) -> PromptTemplate:
    """Read one template YAML file; any problem is an InputError naming the file (and field)."""
    path = Path(path)
    return parse_template(read_yaml_mapping(path, "template file"), path)


def _bundled_dir():
    return resources.files("mmrag.scenarios").joinpath("templates")


def bundled_template_ids() -> list[str]:
    return list(_bundled_ids())


@functools.cache
def _bundled_ids() -> tuple[str, ...]:
    """The package's template files, listed once per process (every prompt looks its template up)."""
    return tuple(sorted(p.name[:-5] for p in _bundled_dir().iterdir() if p.name.endswith(".yaml")))


@functools.cache
def _bundled(template_id: str) -> PromptTemplate:
    res = _bundled_dir().joinpath(f"{template_id}.yaml")
    tpl = load_template(Path(str(res)))
    if tpl.id != template_id:
        raise InputError(f"bundled template id '{tpl.id}' does not match its file name", path=str(res), field="id")
    return tpl


def get_template(name: str) -> PromptTemplate:
    """A bundled template by id, or a user template by path (anything ending in .yaml/.yml or
    containing a path separator)."""
    if name.endswith((".yaml", ".yml")) or "/" in name or "\\" in name:
        return load_template(name)
    if name not in _bundled_ids():
        raise InputError(f"unknown template '{name}'; bundled: {', '.join(bundled_template_ids())}", field="template")
    return _bundled(name)


def stamp_templates(templates: list[PromptTemplate]) -> tuple[str, str, str, list[dict[str, str]]]:
    """(id, version, sha256, parts) for the templates one prompt used, in the order applied.

    One template: its own id/version/hash.  Several (a HumbleBench prefix + the suffix, KnowHal +
    a strictness instruction): ids and versions joined with '+', hash over the list of canonical
    contents, and each part listed so the manifest can show them separately.
    """
    parts = [t.stamp() for t in templates]
    if len(templates) == 1:
        t = templates[0]
        return t.id, t.version, t.sha256, parts
    digest = hashlib.sha256(canonical_json([t.canonical() for t in templates]).encode()).hexdigest()
    return "+".join(t.id for t in templates), "+".join(t.version for t in templates), digest, parts
