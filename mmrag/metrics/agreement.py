"""Agreement between two judgings, or a judge and human labels (``mmrag judge-agreement``):
share agreeing, Cohen's kappa and the confusion table over records matched by id or line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.metrics.stats import cohen_kappa, confusion
from mmrag.util import iter_jsonl


def _labels(path: Path, field: str | None) -> tuple[list[str | None], list[str]]:
    ids, labels = [], []
    for line, rec in iter_jsonl(path):
        key = field or ("outcome" if "outcome" in rec else "label")
        if key not in rec:
            raise InputError("record has no label", path=path, line=line, field=key)
        ids.append(str(rec["id"]) if "id" in rec else None)
        labels.append(str(rec[key]))
    return ids, labels


def agreement(path_a: str | Path, path_b: str | Path, *, field_a: str | None = None,
              field_b: str | None = None) -> dict[str, Any]:
    """Agreement of two labelings of the same records (matched by ``id`` when every record has
    one, else by line order): count, share agreeing, Cohen's kappa and the confusion table.  The
    label is ``outcome`` when present, else ``label`` (or the field given)."""
    ids_a, la = _labels(Path(path_a), field_a)
    ids_b, lb = _labels(Path(path_b), field_b)
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
    elif len(la) != len(lb):
        raise InputError(f"{len(la)} records in {path_a} but {len(lb)} in {path_b}", path=path_b)
    agree = sum(a == b for a, b in zip(la, lb))
    return {"n": len(la), "agreement": 100.0 * agree / len(la), "kappa": cohen_kappa(la, lb),
            "confusion": confusion(la, lb)}
