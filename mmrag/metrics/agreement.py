"""Agreement between two judgings, or a reference (people) and a judge (``mmrag judge-agreement``):
share agreeing, Cohen's kappa and the confusion table over records matched by id or line — overall,
per ``source`` when the records carry one, and per any record field asked for (``by``).

Orientation: A is the reference (human labels, ``--field-a label``), B the judge (``--field-b
outcome``).  Beside kappa every block gives what a judge's user needs to read it:

* ``coverage``: percent of B's labels that are one of the three classes (not ``unparseable``);
  ``coverage_reference`` the same of A;
* ``kappa_decided`` (over ``n_decided`` pairs): kappa where neither side is ``unparseable``, i.e.
  how good the judge is when it decides;
* ``confusions``: the four errors that bend the deflection-vs-hallucination measure, each the
  percent of A's replies of one class that B put in another, with its denominator
  (:data:`CONFUSIONS`: hallucination→correct inflates accuracy, correct→hallucination deflates
  it, deflection→hallucination and hallucination→deflection move replies across the line the
  papers measure); ``hallucinations_judged_correct`` is the first of them, kept under its own name.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmrag.errors import InputError
from mmrag.metrics.stats import cohen_kappa, confusion
from mmrag.util import iter_jsonl

OUTCOMES = ("correct", "deflection", "hallucination", "unparseable")
UNDECIDED = "unparseable"
#: (A's class, B's class): the confusions every agreement block reports, in this order
CONFUSIONS: tuple[tuple[str, str], ...] = (
    ("hallucination", "correct"),
    ("correct", "hallucination"),
    ("deflection", "hallucination"),
    ("hallucination", "deflection"),
)


def confusion_name(truth: str, judged: str) -> str:
    return f"{truth}→{judged}"


def confusion_rates(la: Sequence[str], lb: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{"hallucination→correct": {"value": percent, "n": A's hallucinations}, ...}`` for
    :data:`CONFUSIONS`: of the replies A put in a class, the percent B put in the other (None
    when A has none of that class)."""
    out: dict[str, dict[str, Any]] = {}
    for truth, judged in CONFUSIONS:
        of_truth = [b for a, b in zip(la, lb) if a == truth]
        out[confusion_name(truth, judged)] = {
            "value": _pct(sum(b == judged for b in of_truth), len(of_truth)),
            "n": len(of_truth),
        }
    return out


def _field(rec: dict[str, Any], dotted: str) -> Any:
    cur: Any = rec
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _labels(
    path: Path, field: str | None, by: Sequence[str] = ()
) -> tuple[list[str | None], list[str], list[dict[str, Any]]]:
    ids, labels, facets = [], [], []
    first: dict[str, int] = {}  # id -> its line: one id twice would pair rows wrongly
    for line, rec in iter_jsonl(path):
        key = field or ("outcome" if "outcome" in rec else "label")
        if key not in rec:
            raise InputError("record has no label", path=path, line=line, field=key)
        if "id" in rec:
            rid = str(rec["id"])
            if rid in first:
                raise InputError(
                    f"id {rid!r} appears twice (lines {first[rid]} and {line}); each record once",
                    path=path,
                    line=line,
                    field="id",
                )
            first[rid] = line
        ids.append(str(rec["id"]) if "id" in rec else None)
        labels.append(str(rec[key]))
        facets.append({f: _field(rec, f) for f in ("source", *by)})
    return ids, labels, facets


def _pct(num: int, den: int) -> float | None:
    return 100.0 * num / den if den else None


def summarise(la: Sequence[str], lb: Sequence[str]) -> dict[str, Any]:
    """n, % agreeing, Cohen's kappa and the confusion table (rows: A's labels, columns: B's), with
    coverage, kappa over decided pairs and hallucinations judged correct (module docstring)."""
    la, lb = list(la), list(lb)
    agree = sum(a == b for a, b in zip(la, lb))
    decided = [(a, b) for a, b in zip(la, lb) if a != UNDECIDED and b != UNDECIDED]
    confusions = confusion_rates(la, lb)
    return {
        "n": len(la),
        "agreement": 100.0 * agree / len(la) if la else float("nan"),
        "kappa": cohen_kappa(la, lb),
        "confusion": confusion(la, lb),
        "coverage": _pct(sum(b != UNDECIDED for b in lb), len(lb)),
        "coverage_reference": _pct(sum(a != UNDECIDED for a in la), len(la)),
        "n_decided": len(decided),
        "kappa_decided": cohen_kappa([a for a, _ in decided], [b for _, b in decided]) if decided else None,
        "hallucinations_judged_correct": confusions[confusion_name("hallucination", "correct")],
        "confusions": confusions,
    }


def grouped(keys: Sequence[Any], la: Sequence[str], lb: Sequence[str]) -> dict[str, dict[str, Any]]:
    """:func:`summarise` per value of ``keys`` (``(none)`` where a record has no value)."""
    groups: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for k, a, b in zip(keys, la, lb):
        name = "(none)" if k is None or k == "" else str(k)
        groups[name][0].append(a)
        groups[name][1].append(b)
    return {g: summarise(*groups[g]) for g in sorted(groups)}


def agreement(
    path_a: str | Path,
    path_b: str | Path,
    *,
    field_a: str | None = None,
    field_b: str | None = None,
    by: Sequence[str] = (),
) -> dict[str, Any]:
    """Agreement of two labelings of the same records (matched by ``id`` when every record has
    one, else by line order): the measures of :func:`summarise`, plus the same per source under
    ``by_source`` when records name their ``source``, and per value of each field of ``by``
    (dotted for nested fields: ``metadata.question_type``) under ``by[FIELD]``.  The label is
    ``outcome`` when present, else ``label`` (or the field given)."""
    ids_a, la, fa = _labels(Path(path_a), field_a, by)
    ids_b, lb, fb = _labels(Path(path_b), field_b, by)
    for path, labels in ((path_a, la), (path_b, lb)):
        if not labels:
            raise InputError("no labelled records in this file", path=path)
    if all(i is not None for i in ids_a + ids_b):
        index_b = {i: k for k, i in enumerate(ids_b)}
        missing = [i for i in ids_a if i not in index_b]
        if missing or len(ids_a) != len(ids_b):
            raise InputError(
                f"the files do not hold the same ids (e.g. {missing[:3] or 'different counts'})", path=path_b
            )
        lb = [lb[index_b[i]] for i in ids_a]
        fb = [fb[index_b[i]] for i in ids_a]
    elif len(la) != len(lb):
        raise InputError(f"{len(la)} records in {path_a} but {len(lb)} in {path_b}", path=path_b)
    out = summarise(la, lb)
    facet = [{k: (x.get(k) if x.get(k) not in (None, "") else y.get(k)) for k in x} for x, y in zip(fa, fb)]
    sources = [f["source"] for f in facet]
    if any(sources):
        out["by_source"] = grouped(sources, la, lb)
    if by:
        for f in by:
            if all(x[f] is None for x in facet):
                raise InputError(f"no record of either file has the field {f!r}", path=path_a, field="--by")
        out["by"] = {f: grouped([x[f] for x in facet], la, lb) for f in by}
    return out


def _num(x: Any, fmt: str = ".1f", suffix: str = "") -> str:
    return "—" if x is None else f"{x:{fmt}}{suffix}"


def format_block(lines: list[str], title: str, r: dict[str, Any], name_a: str = "A", name_b: str = "B") -> None:
    """One block of the plain-text report: the measures, then the confusion matrix."""
    seen = {k for row in r["confusion"].values() for k in row} | set(r["confusion"])
    labels = [o for o in OUTCOMES if o in seen] + sorted(seen - set(OUTCOMES))
    hjc = r.get("hallucinations_judged_correct") or {}
    extra = ""
    if "coverage" in r:
        extra = (
            f"  coverage={_num(r['coverage'], suffix='%')}  kappa(decided, n={r['n_decided']})="
            f"{_num(r['kappa_decided'], '.3f')}  hallucinations judged correct="
            f"{_num(hjc.get('value'), suffix='%')} of {hjc.get('n', 0)}"
        )
    ci = r.get("ci") or {}
    kci = f" [{ci['kappa'][0]:.3f}, {ci['kappa'][1]:.3f}]" if ci.get("kappa") and ci["kappa"][0] is not None else ""
    aci = (
        f" [{ci['agreement'][0]:.1f}, {ci['agreement'][1]:.1f}]"
        if ci.get("agreement") and ci["agreement"][0] is not None
        else ""
    )
    lines.append(f"{title}: n={r['n']}  agreement={r['agreement']:.1f}%{aci}  kappa={r['kappa']:.3f}{kci}{extra}")
    if r.get("confusions"):
        lines.append(
            "  confusions ("
            + name_a
            + " → "
            + name_b
            + "): "
            + "  ".join(f"{k}={_num(v['value'], suffix='%')} of {v['n']}" for k, v in r["confusions"].items())
        )
    corner = f"{name_a} \\ {name_b}"
    lines.append(f"  {corner:<16}" + "".join(f"{lab[:13]:>14}" for lab in labels))
    for row in labels:
        counts = r["confusion"].get(row, {})
        lines.append(f"  {row[:16]:<16}" + "".join(f"{counts.get(col, 0):>14}" for col in labels))


def format_agreement(result: dict[str, Any], name_a: str = "A", name_b: str = "B") -> str:
    """Plain-text report: kappa and the confusion matrix, overall, per source, per ``by`` field."""
    lines: list[str] = []
    format_block(lines, "overall", result, name_a, name_b)
    for src, r in result.get("by_source", {}).items():
        lines.append("")
        format_block(lines, src, r, name_a, name_b)
    for f, groups in result.get("by", {}).items():
        for value, r in groups.items():
            lines.append("")
            format_block(lines, f"{f}={value}", r, name_a, name_b)
    return "\n".join(lines)
