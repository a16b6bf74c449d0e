"""Agreement between two judgings, or a judge and human labels (``mmrag judge-agreement``):
share agreeing, Cohen's kappa and the confusion table over records matched by id or line — overall
and per ``source`` when the records carry one (the issue's bar is per source too)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.metrics.stats import cohen_kappa, confusion
from mmrag.util import iter_jsonl

OUTCOMES = ("correct", "deflection", "hallucination", "unparseable")


def _labels(path: Path, field: str | None) -> tuple[list[str | None], list[str], list[str | None]]:
    ids, labels, sources = [], [], []
    for line, rec in iter_jsonl(path):
        key = field or ("outcome" if "outcome" in rec else "label")
        if key not in rec:
            raise InputError("record has no label", path=path, line=line, field=key)
        ids.append(str(rec["id"]) if "id" in rec else None)
        labels.append(str(rec[key]))
        sources.append(str(rec["source"]) if rec.get("source") else None)
    return ids, labels, sources


def summarise(la: list[str], lb: list[str]) -> dict[str, Any]:
    """n, % agreeing, Cohen's kappa and the confusion table (rows: A's labels, columns: B's)."""
    agree = sum(a == b for a, b in zip(la, lb))
    return {"n": len(la), "agreement": 100.0 * agree / len(la) if la else float("nan"),
            "kappa": cohen_kappa(la, lb), "confusion": confusion(la, lb)}


def agreement(path_a: str | Path, path_b: str | Path, *, field_a: str | None = None,
              field_b: str | None = None) -> dict[str, Any]:
    """Agreement of two labelings of the same records (matched by ``id`` when every record has
    one, else by line order): count, share agreeing, Cohen's kappa and the confusion table, plus
    the same per source under ``by_source`` when records name their ``source``.  The label is
    ``outcome`` when present, else ``label`` (or the field given)."""
    ids_a, la, src_a = _labels(Path(path_a), field_a)
    ids_b, lb, src_b = _labels(Path(path_b), field_b)
    for path, labels in ((path_a, la), (path_b, lb)):
        if not labels:
            raise InputError("no labelled records in this file", path=path)
    if all(i is not None for i in ids_a + ids_b):
        index_b = {i: k for k, i in enumerate(ids_b)}
        missing = [i for i in ids_a if i not in index_b]
        if missing or len(ids_a) != len(ids_b):
            raise InputError(f"the files do not hold the same ids (e.g. {missing[:3] or 'different counts'})",
                             path=path_b)
        lb = [lb[index_b[i]] for i in ids_a]
        src_b = [src_b[index_b[i]] for i in ids_a]
    elif len(la) != len(lb):
        raise InputError(f"{len(la)} records in {path_a} but {len(lb)} in {path_b}", path=path_b)
    out = summarise(la, lb)
    sources = [a or b for a, b in zip(src_a, src_b)]
    if any(sources):
        groups: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
        for s, a, b in zip(sources, la, lb):
            groups[s or "(none)"][0].append(a)
            groups[s or "(none)"][1].append(b)
        out["by_source"] = {s: summarise(*groups[s]) for s in sorted(groups)}
    return out


def format_agreement(result: dict[str, Any], name_a: str = "A", name_b: str = "B") -> str:
    """Plain-text report: kappa and the confusion matrix, overall then per source."""
    lines: list[str] = []

    def block(title: str, r: dict[str, Any]) -> None:
        seen = {k for row in r["confusion"].values() for k in row} | set(r["confusion"])
        labels = [o for o in OUTCOMES if o in seen] + sorted(seen - set(OUTCOMES))
        lines.append(f"{title}: n={r['n']}  agreement={r['agreement']:.1f}%  kappa={r['kappa']:.3f}")
        corner = f"{name_a} \\ {name_b}"
        lines.append(f"  {corner:<16}" + "".join(f"{lab[:13]:>14}" for lab in labels))
        for row in labels:
            counts = r["confusion"].get(row, {})
            lines.append(f"  {row[:16]:<16}" + "".join(f"{counts.get(col, 0):>14}" for col in labels))

    block("overall", result)
    for src, r in result.get("by_source", {}).items():
        lines.append("")
        block(src, r)
    return "\n".join(lines)
