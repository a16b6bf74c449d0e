"""Do two run directories hold the same results?  The check behind every speed change of the engine.

Usage: ``.venv/bin/python perf/run_content.py RUN_A RUN_B [HOME_A HOME_B]``; exit 0 when they match.

Compared: every record row (sorted by cell key) with all of its columns except the ones that
describe *how* a cell was produced rather than what it is (``compose_s``, ``generate_s``,
``latency_s``, ``cached``, the plan ordinal and the attempt number), and every stored object
(sample, prompt, scenario: their canonical JSON, by content ref).  So the prompts, replies,
verdicts (outcome, extracted answer, reason, details), mining records and every derived column
must be byte-identical; a cold run and a warm one, or a run before and after an engine change,
must agree.  ``summary.json``'s rates are compared too.  Image paths live under ``MMRAG_HOME``
(the demo world's images), so two runs made under different homes are compared with each home's
path replaced by ``<home>`` (HOME_A, HOME_B), and object refs by the hash of that normalised JSON.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

#: columns that say how a cell was produced (timings, whether the cache answered), not what it holds
VOLATILE = ("compose_s", "generate_s", "latency_s", "cached", "ord", "attempt")


REFS = ("sample_ref", "prompt_ref", "scenario_ref")


def content(run_dir: str | Path, home: str | None = None) -> tuple[list[tuple], dict[str, str], dict]:
    """(record rows sorted by key without the volatile columns, objects by normalised ref, rates
    per group); ``home``, when given, is replaced by ``<home>`` in every object first."""
    from mmrag.runs.segments import read_table
    from mmrag.runs.store import OBJECT_SCHEMA, OBJECTS, RECORD_SCHEMA, RECORDS

    run_dir = Path(run_dir)
    t = read_table(run_dir / RECORDS, None, RECORD_SCHEMA)
    cols = [c for c in t.column_names if c not in VOLATILE]
    o = read_table(run_dir / OBJECTS, ["ref", "json"], OBJECT_SCHEMA)
    norm = {}
    for ref, text in zip(o.column("ref").to_pylist(), o.column("json").to_pylist()):
        if home:
            text = text.replace(json.dumps(str(home))[1:-1], "<home>")
        norm[ref] = (hashlib.sha256(text.encode()).hexdigest()[:16], text)
    objs = dict(norm.values())
    rows = sorted(tuple(norm[r[c]][0] if c in REFS else r[c] for c in cols) for r in t.select(cols).to_pylist())
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    rates = {f"{g['scenario_id']}|{g['model']}": g["rates"] for g in summary["groups"]}
    return rows, objs, rates


def digest(run_dir: str | Path, home: str | None = None) -> str:
    """One sha256 over :func:`content` (short, for printing beside a benchmark's figures)."""
    rows, objs, rates = content(run_dir, home)
    text = json.dumps([rows, sorted(objs.items()), rates], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def compare(a: str | Path, b: str | Path, home_a: str | None = None, home_b: str | None = None) -> list[str]:
    """The differences between two runs' contents, one line each (empty: identical)."""
    ra, oa, sa = content(a, home_a)
    rb, ob, sb = content(b, home_b)
    out = []
    if len(ra) != len(rb):
        out.append(f"record rows: {len(ra)} vs {len(rb)}")
    diff = [i for i, (x, y) in enumerate(zip(ra, rb)) if x != y]
    if diff:
        out.append(f"{len(diff)} record rows differ, first: {ra[diff[0]][:1]}")
    if oa != ob:
        out.append(f"objects differ: {len(set(oa) ^ set(ob))} refs in one run only")
    if sa != sb:
        out.append("summary rates differ: " + ", ".join(k for k in sorted(set(sa) | set(sb)) if sa.get(k) != sb.get(k)))
    return out


def main() -> None:
    a, b = sys.argv[1:3]
    ha, hb = (sys.argv[3:5] + [None, None])[:2]
    problems = compare(a, b, ha, hb)
    print(f"{a}: {digest(a, ha)}\n{b}: {digest(b, hb)}")
    if problems:
        print("DIFFERENT:\n  " + "\n  ".join(problems))
        sys.exit(1)
    print("identical contents (records without timings and cache flags, objects, rates)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
